// Time Pi's skill loading inside node: loadSkillsFromDir + formatSkillsForPrompt, cold each run
// after one untimed run (JIT warm-up).
//
//   node bench/peers/pi_load.mjs SKILLS_DIR [RUNS]
//
// Pi is resolved from bench/.peers/node (bench/peers/install.sh). Prints one JSON object: the
// peer, its version, the median wall time in milliseconds, the skills rendered, the prompt length.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PACKAGE = "@mariozechner/pi-coding-agent";
const peersNode = join(dirname(fileURLToPath(import.meta.url)), "..", ".peers", "node");

const [skillsDir, runsArg] = process.argv.slice(2);
if (!skillsDir) {
    console.error("usage: node bench/peers/pi_load.mjs SKILLS_DIR [RUNS]");
    process.exit(2);
}
const runs = Number(runsArg ?? 5);
const packageDir = join(peersNode, "node_modules", PACKAGE);
const { version, main } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
const pi = await import(pathToFileURL(join(packageDir, main)).href);

const dir = resolve(skillsDir);
pi.formatSkillsForPrompt(pi.loadSkillsFromDir({ dir, source: "bench" }).skills); // untimed: JIT warm-up
const samples = [];
let count = 0;
let prompt = "";
for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint();
    const { skills } = pi.loadSkillsFromDir({ dir, source: "bench" });
    prompt = pi.formatSkillsForPrompt(skills);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    count = skills.length;
}
samples.sort((a, b) => a - b);
const middle = Math.floor(samples.length / 2);
const median = samples.length % 2 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2;
console.log(JSON.stringify({ peer: "pi", version, median_ms: median, runs, skills: count, prompt_chars: prompt.length }));

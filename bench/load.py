"""Cold discover + parse + render of 1,000 directory skills: our harness beside its peers.

    bash bench/peers/install.sh          # once: deepagents, skills-ref, Pi into bench/.peers/
    .venv/bin/python bench/load.py [--count 1000] [--runs 5] [--skip-missing]

Every run starts from nothing held in memory (the OS page cache stays warm for everyone):

- harness: a fresh ``SkillPipeline`` over a fresh ``LocalFilesystem(root, shell=True)`` with the
  skills as the workspace layer; one ``prepare`` walks, parses and renders the catalog.
- deepagents: ``SkillsMiddleware`` over a ``FilesystemBackend`` (``bench/peers/py_peers.py``).
- skills-ref: ``to_prompt`` over the skill folders (``bench/peers/py_peers.py``).
- Pi: ``loadSkillsFromDir`` + ``formatSkillsForPrompt`` in node (``bench/peers/pi_load.mjs``).

Peers run in their own interpreter or node process and report their own in-process median.
Every loader first runs once untimed (lazy imports, JIT), then ``--runs`` timed cold loads.
The floor (walking the tree and reading every SKILL.md, nothing else) is measured here, in
the harness's process, to show what any loader must pay.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree, median_ms  # noqa: E402

from filesystems import LocalFilesystem  # noqa: E402
from harness import Layer, RuntimeContext, SkillPipeline, load_skill  # noqa: E402

BENCH = Path(__file__).resolve().parent
PEERS = BENCH / ".peers"


@dataclass(frozen=True, kw_only=True, slots=True)
class Figure:
    """One loader's result: its median cold load and what it rendered."""

    name: str
    version: str
    median_ms: float
    skills: int
    prompt_chars: int


class PeerMissing(RuntimeError):
    """A peer is not installed (run bench/peers/install.sh) or failed to run."""


async def harness_load(root: Path) -> tuple[int, str]:
    """One cold load: new filesystem, new pipeline, one turn's catalog."""
    filesystem = LocalFilesystem(root, shell=True)
    pipeline = SkillPipeline(filesystem=filesystem, watch=False)
    try:
        plan = await pipeline.prepare(RuntimeContext(user_id="bench"))
    finally:
        await pipeline.aclose()
        await filesystem.aclose()
    return len(plan.skills), plan.catalog


def measure_harness(root: Path, runs: int) -> Figure:
    result: list[tuple[int, str]] = []
    with asyncio.Runner() as runner:
        runner.run(harness_load(root))  # untimed: first imports and caches of the process
        elapsed = median_ms(lambda: result.append(runner.run(harness_load(root))), runs=runs)
    count, catalog = result[-1]
    return Figure(
        name="agent-skill-harness",
        version=version("agent-skill-harness"),
        median_ms=elapsed,
        skills=count,
        prompt_chars=len(catalog),
    )


def measure_phases(root: Path, runs: int) -> dict[str, float]:
    """Median ms of the harness's own steps, one at a time: walk, read the SKILL.md files, parse."""
    filesystem = LocalFilesystem(root)
    with asyncio.Runner() as runner:
        stats = runner.run(filesystem.walk("skills"))
        paths = [s.path for s in stats if s.name == "SKILL.md"]
        contents = runner.run(filesystem.read_many(paths))

        def parse() -> None:
            for path, data in contents.items():
                load_skill(data, folder=path.split("/")[-2], location=path, source="workspace", layer=Layer.WORKSPACE)

        phases = {
            "walk": median_ms(lambda: runner.run(filesystem.walk("skills")), runs=runs),
            "read_many": median_ms(lambda: runner.run(filesystem.read_many(paths)), runs=runs),
            "parse": median_ms(parse, runs=runs),
        }
        runner.run(filesystem.aclose())
    return phases


def measure_floor(skills_dir: Path, runs: int) -> float:
    def walk_and_read() -> None:
        for folder, _, files in os.walk(skills_dir):
            if "SKILL.md" in files:
                Path(folder, "SKILL.md").read_bytes()

    return median_ms(walk_and_read, runs=runs)


def peer_commands(skills_dir: Path, runs: int) -> dict[str, tuple[list[str], Path]]:
    """Each peer's command line and the installed file it needs."""
    python = PEERS / "venv" / "bin" / "python"
    driver = str(BENCH / "peers" / "py_peers.py")
    pi_package = PEERS / "node" / "node_modules" / "@mariozechner" / "pi-coding-agent" / "package.json"
    return {
        "deepagents": ([str(python), driver, "deepagents", str(skills_dir), "--runs", str(runs)], python),
        "skills-ref": ([str(python), driver, "skills-ref", str(skills_dir), "--runs", str(runs)], python),
        "pi": (["node", str(BENCH / "peers" / "pi_load.mjs"), str(skills_dir), str(runs)], pi_package),
    }


def measure_peer(name: str, command: list[str], installed: Path) -> Figure:
    if not installed.exists():
        raise PeerMissing(f"{name}: not installed ({installed} is missing); run bash bench/peers/install.sh")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-6:]) or "no output"
        raise PeerMissing(f"{name}: exited {done.returncode}: {tail}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return Figure(
        name=name,
        version=data["version"],
        median_ms=data["median_ms"],
        skills=data["skills"],
        prompt_chars=data["prompt_chars"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-missing", action="store_true", help="report a missing peer instead of failing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skills_dir = root / "skills"
        make_skill_tree(skills_dir, args.count)
        floor = measure_floor(skills_dir, args.runs)
        ours = measure_harness(root, args.runs)
        phases = measure_phases(root, args.runs)
        peers: list[Figure] = []
        missing: list[str] = []
        for name, (command, installed) in peer_commands(skills_dir, args.runs).items():
            try:
                peers.append(measure_peer(name, command, installed))
            except PeerMissing as exc:
                if not args.skip_missing:
                    parser.exit(1, f"error: {exc}\n")
                missing.append(str(exc))
    print(f"skills: {args.count} directory skills (SKILL.md + 2 files each), runs: {args.runs} (median of cold loads)")
    print(
        f"{'loader':<22}{'version':<10}{'median ms':>11}{'us/skill':>10}{'skills':>8}{'prompt chars':>14}{'vs ours':>9}"
    )
    print(f"{'floor: walk + read':<22}{'-':<10}{floor:11.1f}{floor * 1000 / args.count:10.1f}")
    for figure in (ours, *peers):
        ratio = figure.median_ms / ours.median_ms
        print(
            f"{figure.name:<22}{figure.version:<10}{figure.median_ms:11.1f}{figure.median_ms * 1000 / args.count:10.1f}"
            f"{figure.skills:8d}{figure.prompt_chars:14d}{ratio:8.2f}x"
        )
    steps = ", ".join(f"{name} {ms:.1f} ms" for name, ms in phases.items())
    rest = ours.median_ms - sum(phases.values())
    print(f"harness steps alone: {steps}; the rest (layer entries, merge, render, turn) {rest:.1f} ms")
    for problem in missing:
        print(f"missing peer: {problem}")


if __name__ == "__main__":
    main()

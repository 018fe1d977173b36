"""What importing the harness costs a fresh process: time and modules, beside the interpreter alone.

    .venv/bin/python bench/imports.py [--runs 9]

Three imports, each what a program that names those things pays: ``import harness`` (the errors
and ``RuntimeContext``; every other name loads on first use), ``from harness import
RuntimeContext, SkillPipeline`` (a program that runs the pipeline alone) and ``from harness
import Harness, RuntimeContext`` (an agent's first turn); then what the workflow engine and the
self-learning loop add, for comparison.

Each figure is the median of ``--runs`` fresh interpreters, interleaved with the floor (the same
interpreter starting and exiting, ``python -c pass``) so both see the same machine load. *With
bytecode* runs read compiled modules from a cache filled by one untimed run (as every run after
an install's first); *without bytecode* runs import a copy of the three packages that holds none
and write none (a fresh checkout; the standard library and dependencies keep theirs). Beside the
wall time, the CPU time the process used (user + system): on a shared machine the wall time also
counts waiting for a core. The module count is what the import adds to ``sys.modules``, ours and
in all, and the optional parts it loaded (none, or the import is too heavy).

With ``--instructions`` (needs ``valgrind``), each row also prints the instructions the import
executes beyond the floor, counted once under valgrind's cachegrind: the same count on a busy
machine as on an idle one, so two trees compare even when the wall time cannot tell them apart.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "repositories", "filesystems")
OPTIONAL = ("harness.engine.", "harness.learning.", "harness.mcp.", "harness.adapters.", "harness.tracing.")
ROWS = (
    ("import harness", "import harness"),
    ("a pipeline", "from harness import RuntimeContext, SkillPipeline"),
    ("an agent", "from harness import Harness, RuntimeContext"),
    ("+ the workflow engine", "from harness import Harness; import harness.engine.engine"),
    ("+ self-learning", "from harness import Harness; import harness.learning.loop"),
)
TARGET_MS = 100.0  # over the floor, for an agent's first import (issue 29)

# Prints (modules the statement added, ours, optional parts loaded) as JSON.
PROBE = """
import json, sys
before = set(sys.modules)
{statement}
added = set(sys.modules) - before
ours = sorted(m for m in added if m.split(".")[0] in {packages!r})
optional = sorted(m for m in ours if m.startswith({optional!r}))
print(json.dumps({{"added": len(added), "ours": len(ours), "optional": optional}}))
"""


class Interpreter:
    """Fresh interpreters importing our packages from ``root`` with or without bytecode, started
    in ``cwd``: ``python -c`` puts its working folder first on ``sys.path``, so a child started in
    a checkout would import that checkout (and its ``__pycache__``) instead of ``root``."""

    def __init__(self, root: Path, *, bytecode: bool, cache: Path, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        env["PYTHONPATH"] = str(root)
        env["PYTHONWARNINGS"] = "ignore"
        if bytecode:
            env["PYTHONPYCACHEPREFIX"] = str(cache)  # compiled once, read after; the checkout stays clean
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.env = env
        self.cwd = cwd

    def run(self, code: str) -> tuple[float, float]:
        """(wall ms, CPU ms) of one interpreter running ``code``."""
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", code], env=self.env, cwd=self.cwd)
        _, status, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - start) * 1000
        if status:
            raise SystemExit(f"{code!r} failed (status {status})")
        return wall, (usage.ru_utime + usage.ru_stime) * 1000

    def instructions(self, code: str) -> float:
        """Millions of instructions one interpreter running ``code`` executes (valgrind)."""
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        out = subprocess.run(
            [*command, sys.executable, "-c", code],
            env=self.env,
            cwd=self.cwd,
            check=True,
            capture_output=True,
            text=True,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if found is None:
            raise SystemExit(f"valgrind printed no instruction count for {code!r}")
        return int(found.group(1).replace(",", "")) / 1e6

    def modules(self, statement: str) -> dict[str, object]:
        code = PROBE.format(statement=statement, packages=PACKAGES, optional=OPTIONAL)
        out = subprocess.run(
            [sys.executable, "-c", code], env=self.env, cwd=self.cwd, check=True, capture_output=True, text=True
        )
        result: dict[str, object] = json.loads(out.stdout)
        return result


def _measure(interpreter: Interpreter, statement: str, runs: int) -> tuple[float, float, float, float]:
    """Medians (wall, CPU, floor wall, floor CPU), the statement and the floor interleaved."""
    interpreter.run(statement)  # compile (with bytecode) and warm the page cache
    interpreter.run("pass")
    ours: list[tuple[float, float]] = []
    floor: list[tuple[float, float]] = []
    for _ in range(runs):
        floor.append(interpreter.run("pass"))
        ours.append(interpreter.run(statement))
    median = statistics.median
    return (
        median(w for w, _ in ours),
        median(c for _, c in ours),
        median(w for w, _ in floor),
        median(c for _, c in floor),
    )


def _source_copy(into: Path) -> Path:
    """The three packages copied without any bytecode (a fresh checkout)."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; median of {args.runs} fresh interpreters"
    )
    with tempfile.TemporaryDirectory() as tmp:
        modes = (
            ("with bytecode", Interpreter(ROOT, bytecode=True, cache=Path(tmp, "pycache"), cwd=Path(tmp))),
            (
                "without bytecode",
                Interpreter(_source_copy(Path(tmp, "src")), bytecode=False, cache=Path(tmp), cwd=Path(tmp)),
            ),
        )
        for mode, interpreter in modes:
            print(f"\n{mode}:")
            floor_printed = False
            floor_instructions = 0.0
            for label, statement in ROWS:
                wall, cpu, floor_wall, floor_cpu = _measure(interpreter, statement, args.runs)
                if not floor_printed:  # counted after the first row's runs filled the bytecode cache
                    floor_instructions = interpreter.instructions("pass") if args.instructions else 0.0
                    counted = f", {floor_instructions:.1f}M instructions" if args.instructions else ""
                    print(
                        f"  {'python -c pass (floor)':<24} {floor_wall:7.1f} ms wall, {floor_cpu:6.1f} ms CPU{counted}"
                    )
                    floor_printed = True
                found = interpreter.modules(statement)
                optional = found["optional"]
                assert isinstance(optional, list)
                target = f"; target <= {TARGET_MS:.0f} ms" if label == "an agent" else ""
                extra = f"; optional modules loaded: {len(optional)}" if not label.startswith("+") else ""
                if args.instructions:
                    extra += (
                        f"; {interpreter.instructions(statement) - floor_instructions:.1f}M instructions over the floor"
                    )
                print(
                    f"  {label:<24} {wall - floor_wall:7.1f} ms over the floor ({wall / floor_wall:.2f}x), "
                    f"CPU {cpu - floor_cpu:6.1f} ms over ({cpu / floor_cpu:.2f}x); "
                    f"{found['ours']} of our modules, {found['added']} in all{extra}{target}"
                )
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()

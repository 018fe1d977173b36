"""What ``import harness`` costs a fresh process: time and modules, beside the interpreter alone.

    .venv/bin/python bench/imports.py [--runs 9]

Each figure is the median of ``--runs`` fresh interpreters (bytecode compiled, as after the first
run). The floor is the same interpreter starting and exiting (``python -c pass``), measured in
this run; the module count is what ``import harness`` adds to ``sys.modules``, ours and in all.
Also printed: the optional parts that must not load with the core (none, or the import is too
heavy), and what importing the workflow engine or the self-learning loop adds, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

OPTIONAL = ("harness.engine.", "harness.learning.", "harness.mcp.", "harness.adapters.", "harness.tracing.")

# Prints (modules in the core import, ours, optional parts loaded) as JSON.
PROBE = """
import json, sys
before = set(sys.modules)
{statement}
added = set(sys.modules) - before
ours = sorted(m for m in added if m.split(".")[0] in ("harness", "repositories", "filesystems"))
optional = sorted(m for m in ours if m.startswith({optional!r}))
print(json.dumps({{"added": len(added), "ours": len(ours), "optional": optional}}))
"""


def _seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return time.perf_counter() - start


def _median(code: str, runs: int) -> float:
    _seconds(code)  # compile bytecode, warm the page cache
    return statistics.median(_seconds(code) for _ in range(runs))


def _modules(statement: str) -> dict[str, object]:
    code = PROBE.format(statement=statement, optional=OPTIONAL)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.runs} fresh interpreters")
    floor = _median("pass", args.runs)
    print(f"{'python -c pass (floor)':<28} {floor * 1000:7.1f} ms")
    rows = (
        ("import harness", "import harness"),
        ("+ the workflow engine", "import harness.engine.engine"),
        ("+ self-learning", "import harness.learning.loop"),
    )
    for label, statement in rows:
        total = _median(statement, args.runs)
        found = _modules(statement)
        optional = found["optional"]
        assert isinstance(optional, list)
        loaded = f"; optional modules loaded: {len(optional)}" if statement == "import harness" else ""
        print(
            f"{label:<28} {(total - floor) * 1000:7.1f} ms over the floor "
            f"({total / floor:.2f}x), {found['ours']} of our modules, {found['added']} in all{loaded}"
        )


if __name__ == "__main__":
    main()

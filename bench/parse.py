"""Parse 1,000 generated SKILL.md files and print the time per skill.

    .venv/bin/python bench/parse.py [--count 1000] [--runs 15]

Measures reading + lenient loading (frontmatter split with CSafeLoader, rule checks) of each
SKILL.md; the baseline in the same process is reading the bytes alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree, median_ms  # noqa: E402

from harness import Layer, load_skill  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folders = make_skill_tree(Path(tmp), args.count)
        paths = [folder / "SKILL.md" for folder in folders]

        def read_only() -> None:
            for path in paths:
                path.read_bytes()

        def read_and_parse() -> None:
            for folder, path in zip(folders, paths):
                skill, _ = load_skill(
                    path.read_bytes(), folder=folder.name, location=str(folder), source="bench", layer=Layer.MARKET
                )
                assert skill is not None

        read_ms = median_ms(read_only, runs=args.runs)
        parse_ms = median_ms(read_and_parse, runs=args.runs)
    print(f"skills: {args.count}, runs: {args.runs} (medians)")
    print(f"read only:          {read_ms:8.2f} ms total  {read_ms * 1000 / args.count:7.1f} us/skill")
    print(f"read + parse:       {parse_ms:8.2f} ms total  {parse_ms * 1000 / args.count:7.1f} us/skill")
    print(f"parse cost:         {(parse_ms - read_ms) * 1000 / args.count:7.1f} us/skill")


if __name__ == "__main__":
    main()

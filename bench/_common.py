"""Helpers shared by the benchmark scripts: skill generation and robust timing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["make_skill_tree", "median_ms", "skill_md"]

_WORDS = "review test deploy summarise translate audit format lint chart parse plan".split()


def skill_md(name: str, index: int) -> str:
    """A realistic SKILL.md (frontmatter + a few paragraphs of instructions)."""
    topic = _WORDS[index % len(_WORDS)]
    return (
        f"---\nname: {name}\n"
        f"description: Use when the user asks to {topic} things of kind {index}; covers edge cases and reporting.\n"
        f'license: Apache-2.0\nmetadata:\n  author: bench\n  version: "{index % 7}.0"\n---\n\n'
        f"# {name}\n\n" + f"Step {index}: run `python3 scripts/run.py` and read references/guide.md.\n" * 20
    )


def make_skill_tree(root: Path, count: int, *, prefix: str = "skill") -> list[Path]:
    """``count`` skill folders under ``root``, each with SKILL.md, a script and a reference."""
    folders = []
    for index in range(count):
        name = f"{prefix}-{index:05d}"
        folder = root / name
        (folder / "scripts").mkdir(parents=True, exist_ok=True)
        (folder / "references").mkdir(exist_ok=True)
        (folder / "SKILL.md").write_text(skill_md(name, index))
        (folder / "scripts" / "run.py").write_text("print('ok')\n")
        (folder / "references" / "guide.md").write_text("# Guide\n" * 10)
        folders.append(folder)
    return folders


def median_ms(func: Callable[[], object], *, runs: int) -> float:
    """Median wall time of ``runs`` calls, in milliseconds."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)

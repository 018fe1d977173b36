"""The per-turn cost of ``SkillPipeline.prepare``: cold, warm, and what a warm turn touches.

    .venv/bin/python bench/turn.py [--market memory|directory] [--count 1000] [--turns 50]

A temporary workspace on a ``LocalFilesystem`` with a shell holds 100 workspace skills and 10
skills of the user ``alice``; the market offers ``--count`` skills (default 1,000), either a
``MemoryRepository`` holding their bundles (default) or a ``DirectoryRepository`` over the
generated tree. The pipeline runs as an application runs it (an async context manager, so
its folder watchers are on). Printed:

- cold turn: the first ``prepare`` of a fresh pipeline over an empty ``.skills-cache`` (market
  snapshot, parse, merge, stage every market file, render);
- warm turn: the median of ``--turns`` further ``prepare`` calls with nothing changed, and
  the file operations one warm turn makes in this process, counted for real: ``os.stat`` /
  ``os.lstat`` calls (patched counters), folder listings and writes (``sys.addaudithook``
  events: ``open`` for writing, ``os.rename``, ``os.remove``, ``os.mkdir``, ``os.chmod``).
  ``DirEntry.stat()`` inside a listing is C code and not counted: a listing may stat its
  entries;
- cold discover + parse + render of 1,000 directory skills, read two ways — a fresh folder
  layer (how the global dir, the workspace and user areas are read) and a fresh
  ``DirectoryRepository`` market: one walk, each SKILL.md read, other files only listed, then
  the catalog; median of ``--runs``, with the opens, listings and stats of one run.

Targets: warm ≤ 5 ms with 0 writes; cold discover + parse + render < 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree  # noqa: E402

from filesystems import LocalFilesystem  # noqa: E402
from harness import RuntimeContext, SkillPipeline  # noqa: E402
from harness.pipeline.catalog import entries_for, render_catalog  # noqa: E402
from harness.pipeline.layers import LayerResult, SkillLayer  # noqa: E402
from harness.skills.skill import Layer  # noqa: E402
from harness.tools.skills import LOAD_TOOL, SHELL_TOOL  # noqa: E402
from repositories import DirectoryRepository, MemoryRepository, SkillRepository, read_skill_folder  # noqa: E402

ALICE = RuntimeContext(user_id="alice")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class FileOps:
    """Counts this process's stats, listings and writes while :meth:`counting` is active."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._active = False
        sys.addaudithook(self._audit)

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.counts = Counter()
        real_stat, real_lstat = os.stat, os.lstat

        def stat(*args: Any, **kwargs: Any) -> os.stat_result:
            if self._active:
                self.counts["stat"] += 1
            return real_stat(*args, **kwargs)

        def lstat(*args: Any, **kwargs: Any) -> os.stat_result:
            if self._active:
                self.counts["stat"] += 1
            return real_lstat(*args, **kwargs)

        os.stat, os.lstat = stat, lstat
        self._active = True
        try:
            yield self.counts
        finally:
            self._active = False
            os.stat, os.lstat = real_stat, real_lstat

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self._active:
            return
        if event == "open":
            mode, flags = args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            self.counts["write" if writing else "open"] += 1
        elif event in ("os.rename", "os.remove", "os.mkdir", "os.chmod", "os.rmdir"):
            self.counts["write"] += 1
        elif event in ("os.listdir", "os.scandir"):
            self.counts["list"] += 1


FILE_OPS = FileOps()


async def timed_ms(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


def build_workspace(root: Path, count: int) -> tuple[Path, Path]:
    """The market tree (``count`` skills) and a workspace with 100 shared and 10 user skills."""
    market = root / "market"
    workspace = root / "workspace"
    make_skill_tree(market, count, prefix="market")
    make_skill_tree(workspace / "skills", 100, prefix="team")
    make_skill_tree(workspace / ALICE.user_id / "skills", 10, prefix="mine")
    return market, workspace


async def make_market(kind: str, tree: Path) -> SkillRepository:
    if kind == "directory":
        return DirectoryRepository(tree)
    bundles = [(await read_skill_folder(folder))[0] for folder in sorted(tree.iterdir())]
    return MemoryRepository(bundles, name="market", writable=False)


async def turn_figures(kind: str, tree: Path, workspace: Path, turns: int) -> None:
    market = await make_market(kind, tree)
    async with (
        market,
        LocalFilesystem(workspace, shell=True) as filesystem,
        SkillPipeline(filesystem=filesystem, repositories=[market]) as pipeline,
    ):
        start = time.perf_counter()
        cold = await pipeline.prepare(ALICE)
        cold_ms = (time.perf_counter() - start) * 1000
        await pipeline.prepare(ALICE)  # the first warm turn settles the watchers' view
        samples = [await timed_ms(lambda: pipeline.prepare(ALICE)) for _ in range(turns)]
        with FILE_OPS.counting() as ops:
            warm = await pipeline.prepare(ALICE)
    assert cold.staged is not None and warm.staged is not None
    warm_ms = statistics.median(samples)
    print(f"{kind} market: {len(cold.skills)} skills merged (market, 100 workspace, 10 of alice)")
    print(f"  cold turn   {cold_ms:8.1f} ms   staged {cold.staged.written} files")
    print(
        f"  warm turn   {warm_ms:8.2f} ms   median of {turns} (min {min(samples):.2f}, max {max(samples):.2f}); "
        f"target <= 5 ms {'met' if warm_ms <= 5 else 'MISSED'}"
    )
    print(
        f"  warm turn file ops: {ops['write']} writes, {ops['stat']} stats, {ops['list']} listings, "
        f"{ops['open']} reads; {warm.staged.written} files staged"
    )


async def discover_figures(tree: Path, runs: int) -> None:
    def render(result: LayerResult) -> int:
        roots = {e.skill.skill_id: f"{tree}/{e.path}" for e in result.entries}
        catalog = render_catalog(
            entries_for([e.skill for e in result.entries], roots), load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL
        )
        assert catalog and len(roots) == len(result.entries)
        return len(result.entries)

    async def folder_layer() -> int:
        repository = DirectoryRepository(tree, source="workspace", nested=True, follow_links=True)
        return render(await SkillLayer(repository, layer=Layer.WORKSPACE).load())

    async def directory_market() -> int:
        async with DirectoryRepository(tree) as repository:
            return render(await SkillLayer(repository).load())

    print("cold discover + parse + render of directory skills (SKILL.md read, other files only listed)")
    for label, measure in (
        ("folder layer (workspace, global, user)", folder_layer),
        ("DirectoryRepository market", directory_market),
    ):
        count = await measure()  # warms the OS page cache, as a running host would have it
        samples = [await timed_ms(measure) for _ in range(runs)]
        with FILE_OPS.counting() as ops:
            await measure()
        cold_ms = statistics.median(samples)
        print(
            f"  {label:40s} {count} skills {cold_ms:7.1f} ms   median of {runs} (min {min(samples):.1f}); "
            f"target < 150 ms {'met' if cold_ms < 150 else 'MISSED'}; "
            f"{ops['open']} opens, {ops['list']} listings, {ops['stat']} stats"
        )


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree, workspace = build_workspace(Path(tmp), args.count)
        await turn_figures(args.market, tree, workspace, args.turns)
        await discover_figures(tree if args.count == 1000 else _thousand(Path(tmp)), args.runs)


def _thousand(root: Path) -> Path:
    tree = root / "thousand"
    make_skill_tree(tree, 1000)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--market", choices=("memory", "directory"), default="memory")
    parser.add_argument("--count", type=int, default=1000, help="market skills")
    parser.add_argument("--turns", type=int, default=50, help="warm turns to take the median of (>= 20)")
    parser.add_argument("--runs", type=int, default=10, help="cold discover + parse + render runs")
    args = parser.parse_args()
    if args.turns < 20:
        parser.error("--turns must be at least 20")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()

"""What a burst of file changes costs a pipeline that holds many users: the watcher's change
handler, and the longest the event loop waits while a burst is handled.

    .venv/bin/python bench/changes.py [--users 1000] [--paths 1000] [--runs 20]

Printed:

- the change handler's cost for ``--paths`` changed paths (each a skill file in its own folder,
  spread round-robin over the folders of 10 users, then of every user) with 10, 100 and
  ``--users`` users cached: the median of ``--runs`` passes, and per path. It grows with the
  users a change touches, not with the users cached;
- the longest event-loop stall (a 1 ms heartbeat's largest gap) while another process writes one
  new skill into each of ``--users`` users' folders and the pipeline's watcher reports them, as
  a ``git pull`` into a busy bot's workspace would. The heartbeat's gaps with nothing to handle
  (the same writes under a pipeline that does not watch) are printed beside it as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from filesystems import LocalFilesystem  # noqa: E402
from harness import RuntimeContext, SkillPipeline  # noqa: E402

_WRITE = """
import pathlib, sys
root, users = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for index in range(users):
    folder = root / f"u{index:05d}" / "skills" / "fresh"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\\nname: fresh\\ndescription: for u{index:05d}\\n---\\nNew.\\n")
"""


def user(index: int) -> RuntimeContext:
    return RuntimeContext(user_id=f"u{index:05d}")


async def cached(pipeline: SkillPipeline, users: int) -> None:
    for index in range(users):
        await pipeline.prepare(user(index), stage=False)


async def handler_ms(users: int, touched: int, paths: int, runs: int) -> float:
    """Median milliseconds of one change-handler pass over ``paths`` paths in the folders of the
    first ``touched`` users, ``users`` cached."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with LocalFilesystem(root) as fs, SkillPipeline(filesystem=fs) as pipeline:
            await cached(pipeline, users)
            changed = {root / f"u{i % touched:05d}" / "skills" / f"s{i}" / "SKILL.md" for i in range(paths)}
            samples = []
            for _ in range(runs):
                start = time.perf_counter()
                pipeline._on_change(changed)  # what the watcher calls with each slice of a burst
                samples.append((time.perf_counter() - start) * 1000)
            return statistics.median(samples)


async def worst_stall_ms(users: int, *, watch: bool) -> float:
    """The heartbeat's largest gap while another process writes a skill into each user's folder."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with LocalFilesystem(root) as fs, SkillPipeline(filesystem=fs, watch=watch) as pipeline:
            await cached(pipeline, users)
            gaps: list[float] = []

            async def heartbeat() -> None:
                last = time.perf_counter()
                while True:
                    await anyio.sleep(0.001)
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now

            gc.collect()  # in both runs: a full collection's pause is not what this compares
            async with anyio.create_task_group() as group:
                group.start_soon(heartbeat)
                await anyio.run_process([sys.executable, "-c", _WRITE, str(root), str(users)])
                await anyio.sleep(0.5)  # the watcher's debounce and the last slices
                group.cancel_scope.cancel()
            last = user(users - 1)
            assert not watch or "for " + str(last.user_id) in (await pipeline.prepare(last, stage=False)).catalog
            return max(gaps) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--paths", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.runs} passes")
    print(
        f"{'users cached':>12}  {'users touched':>13}  {'handler, ' + str(args.paths) + ' paths':>22}  {'per path':>10}"
    )
    for users, touched in [(10, 10), (100, 10), (args.users, 10), (args.users, args.users)]:
        ms = await handler_ms(users, touched, args.paths, args.runs)
        print(f"{users:>12,}  {touched:>13,}  {ms:>19.2f} ms  {ms * 1000 / args.paths:>7.2f} µs")
    stall = await worst_stall_ms(args.users, watch=True)
    floor = await worst_stall_ms(args.users, watch=False)
    print(
        f"worst event-loop stall while {args.users:,} users' folders change: {stall:.1f} ms "
        f"(floor, nothing watched: {floor:.1f} ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())

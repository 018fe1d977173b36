"""A long-running process: users come and go and files change, for minutes on end.

    .venv/bin/python bench/soak.py [--minutes 5] [--pool 5000] [--active 200] [--market 1000]
                                   [--arrivals-per-second 8] [--idle-after 30] [--churn-per-second 20]
                                   [--churn-folders 500]
                                   [--no-watch] [--appends-per-second 50] [--session-max-age 120]
                                   [--prune-every 30] [--sample-seconds 10] [--verify-interval 600]
                                   [--gc-freeze] [--trace-stalls MS]

One pipeline over a ``LocalFilesystem`` workspace with a shell and a market of ``--market``
skills. A window of ``--active`` users out of a pool of ``--pool`` takes turns continuously; the
window moves on by ``--arrivals-per-second`` users a second, so users keep arriving and going idle
(released after ``--idle-after`` seconds) at a steady rate, whatever the machine's speed: the
users held stay about ``--active`` plus the arrivals of ``--idle-after`` seconds, and what memory
does is the process's, not a workload that grows. Meanwhile files churn: every second ``--churn-per-second`` SKILL.md
files of the workspace and of the users' areas are rewritten or skill folders added, each one
added past ``--churn-folders`` removing the oldest (the tree stops growing after the first
minute); and conversations grow: ``--appends-per-second`` exchanges a second are appended to the
conversations of users in the window, in a SQLite session store in the workspace's ``.harness``
that keeps ``--session-max-age`` seconds of history and is pruned every ``--prune-every`` seconds
(what an operator's periodic ``harness sessions prune`` does; 0: never). Each minute prints the
process's resident memory and the memory blocks Python holds, the bytes under the workspace's
``.skills-cache`` and of the session store's files, the users the pipeline holds, its open file
descriptors and threads, the turns taken, and the worst event-loop stall (how late a 10 ms timer fired at most) with the CPU time
the event loop's thread used in it, and the worst stall the loop's own work accounts for (see
``StallMonitor``). Every ``--verify-interval`` seconds a turn's staging pass re-hashes every
staged file (the stager's periodic verify). Memory and disk are also sampled every
``--sample-seconds``; the end prints each one's first, last and largest sample and its slope
(least squares, per minute) over all samples, over those after the first minute, and over the
second half of the run (what warming up does is over by then: growth that goes on shows there).

``--active 0`` takes no turns (files still churn under the watcher) and ``--no-watch`` runs without
the workspace watcher (every turn re-reads the users' folders instead): floors to measure the
stalls against, on a machine whose load is printed first. ``--gc-freeze`` calls ``gc.freeze()``
once the pipeline has started, as a long-running service would, so that garbage collections
skip the startup heap. ``--trace-stalls MS`` samples the main thread whenever the loop is late
by more than ``MS`` and prints, at the end, the stalls grouped by the code they were found in
and the garbage collections' durations.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import math
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree, skill_md  # noqa: E402
from _stalls import StallTracer  # noqa: E402
from scale import market_bundles  # noqa: E402
from users import process_figures  # noqa: E402

from filesystems import CACHE_DIR, MACHINE_DIR, LocalFilesystem  # noqa: E402
from harness import RuntimeContext, SkillPipeline  # noqa: E402
from harness.agent.sessions import SQLiteSessionStore  # noqa: E402
from harness.models import Message  # noqa: E402
from harness.pipeline.reclaim import tree_size  # noqa: E402
from harness.skills.scanner import MarketScanPolicy, TrustLevel  # noqa: E402
from repositories import MemoryRepository  # noqa: E402

TICK = 0.010  # the stall monitor's timer


class StallMonitor:
    """How late a short timer fires: the longest the event loop was kept from other tasks.

    On a shared machine most of a long stall can be the other processes keeping this one off
    the cores, so each tick also reads the CPU time the event loop's own thread used: the
    loop's own part of a stall is at most that (``min(late, CPU)``), and the worst of those is
    reported beside the worst stall."""

    def __init__(self, tracer: StallTracer | None) -> None:
        self.worst = (0.0, 0.0)  # (stall, the loop thread's CPU time in it), seconds
        self.own = 0.0  # the worst min(stall, the loop thread's CPU time in it)
        self.tracer = tracer

    async def run(self) -> None:
        try:
            while True:
                began, cpu = time.perf_counter(), time.thread_time()
                await asyncio.sleep(TICK)
                fired = time.perf_counter()
                late, used = fired - began - TICK, time.thread_time() - cpu
                self.worst = max(self.worst, (late, used))
                self.own = max(self.own, min(late, used))
                if self.tracer is not None:
                    self.tracer.beat = fired
        finally:
            if self.tracer is not None:
                self.tracer.beat = math.inf

    def take(self) -> tuple[float, float, float]:
        """The worst stall, the loop's CPU time in it, and the worst own part of a stall."""
        taken = (*self.worst, self.own)
        self.worst, self.own = (0.0, 0.0), 0.0
        return taken


def user_id(index: int) -> str:
    return f"user-{index:05d}"


def disk_figures(workspace: Path, sessions: Path) -> tuple[int, int]:
    """Bytes under the workspace's staging cache, and of the session store's files (database, WAL, shared memory)."""
    store = 0
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            store += (sessions.parent / (sessions.name + suffix)).stat().st_size
    return tree_size(workspace / CACHE_DIR), store


class Samples:
    """Memory and disk, sampled over time: (minutes since the start, RSS KiB, cache bytes, store bytes,
    memory blocks Python has allocated: RSS that grows while they do not is the allocator's, not objects')."""

    def __init__(self, workspace: Path, sessions: Path) -> None:
        self.workspace, self.sessions = workspace, sessions
        self.rows: list[tuple[float, float, int, int, int]] = []
        self.began = time.monotonic()

    async def take(self) -> tuple[float, float, int, int, int]:
        cache, store = await asyncio.to_thread(disk_figures, self.workspace, self.sessions)  # a walk: off the loop
        minutes = (time.monotonic() - self.began) / 60
        row = (minutes, process_figures()["rss_kib"], cache, store, sys.getallocatedblocks())
        self.rows.append(row)
        return row

    async def run(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.take()

    def report(self) -> str:
        lines = [
            "| figure | first | last | max | slope per minute (all samples) | slope per minute (after minute 1) "
            "| slope per minute (second half) |",
            "|---|---|---|---|---|---|---|",
        ]
        for column, name, scale in (
            (1, "RSS (MiB)", 1024),
            (2, ".skills-cache (KiB)", 1024),
            (3, "session store (KiB)", 1024),
            (4, "Python blocks (thousands)", 1000),
        ):
            points = [(row[0], row[column] / scale) for row in self.rows]
            values = [value for _, value in points]
            later = [(t, v) for t, v in points if t >= 1]
            half = [(t, v) for t, v in points if t >= points[-1][0] / 2]  # growth that goes on shows here
            lines.append(
                f"| {name} | {values[0]:.1f} | {values[-1]:.1f} | {max(values):.1f} "
                f"| {slope(points):+.2f} | {slope(later):+.2f} | {slope(half):+.2f} |"
            )
        return "\n".join([f"{len(self.rows)} samples", *lines])


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``points`` (0 for fewer than two)."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0


async def converse(store: SQLiteSessionStore, window: list[str], args: argparse.Namespace) -> None:
    """Append an exchange to the conversation of a user in the current window, ``--appends-per-second`` a second."""
    rng = random.Random(11)
    step = 1.0 / max(args.appends_per_second, 1)
    serial = 0
    while True:
        if window:
            serial += 1
            exchange = [
                Message.user(f"question {serial}: what does skill {serial % 97} do with these files?"),
                Message.assistant(f"answer {serial}: it reads them, runs scripts/run.py and reports. " * 2),
            ]
            await store.append(rng.choice(window), "soak", exchange)
        await asyncio.sleep(step)


async def prune(store: SQLiteSessionStore, every: float) -> None:
    """What an operator's periodic ``harness sessions prune`` does: forget conversations past their age."""
    while True:
        await asyncio.sleep(every)
        await store.prune()


async def churn(workspace: Path, args: argparse.Namespace, stop: asyncio.Event) -> None:
    """Rewrite SKILL.md files and add or remove skill folders, ``--churn-per-second`` a second.

    Folders are added to the workspace's ``skills/`` and to the areas of users who have skills;
    once ``--churn-folders`` of them exist, each one added removes the oldest, so the watched tree
    stops growing after the first minute: what memory does after that is the process's own."""
    rng = random.Random(7)
    step = 1.0 / max(args.churn_per_second, 1)
    owners = [workspace / "skills", *(workspace / user_id(i) / "skills" for i in range(0, args.pool, 2))]
    live: collections.deque[Path] = collections.deque()
    serial = 0
    while not stop.is_set():
        serial += 1
        if live and rng.random() < 0.6:
            folder = rng.choice(live)
            with contextlib.suppress(FileNotFoundError):
                (folder / "SKILL.md").write_text(skill_md(folder.name, serial))
        else:
            folder = rng.choice(owners) / f"churn-{serial}"
            folder.mkdir(parents=True)
            (folder / "SKILL.md").write_text(skill_md(folder.name, serial))
            live.append(folder)
            if len(live) > args.churn_folders:
                shutil.rmtree(live.popleft(), ignore_errors=True)
        await asyncio.sleep(step)


async def soak(args: argparse.Namespace, workspace: Path, tracer: StallTracer | None) -> None:
    market = MemoryRepository(market_bundles(args.market), name="market", writable=False)
    policy = MarketScanPolicy(default=TrustLevel.TRUSTED)
    monitor = StallMonitor(tracer)
    stop = asyncio.Event()
    turns = 0
    sessions_db = workspace / MACHINE_DIR / "sessions.db"
    samples = Samples(workspace, sessions_db)
    window: list[str] = []  # the users taking turns now (the conversations grow among them)
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        SkillPipeline(
            filesystem=fs,
            repositories=[market],
            market_scan=policy,
            user_idle_after=args.idle_after,
            watch=args.watch,
            verify_interval=args.verify_interval,
        ) as pipeline,
        SQLiteSessionStore(sessions_db, max_age=args.session_max_age) as store,
    ):
        await pipeline.prepare(RuntimeContext(user_id="startup"))
        if args.gc_freeze:  # what a long-running service does once it has started up
            gc.collect()
            gc.freeze()
        tasks = [
            asyncio.create_task(monitor.run()),
            asyncio.create_task(churn(workspace, args, stop)),
            asyncio.create_task(converse(store, window, args)),
            asyncio.create_task(samples.run(args.sample_seconds)),
        ]
        if args.prune_every > 0:
            tasks.append(asyncio.create_task(prune(store, args.prune_every)))
        print(
            "| minute | RSS (MiB) | Python blocks (k) | .skills-cache (KiB) | session store (KiB) | users held | fds "
            "| threads | turns "
            "| worst loop stall (ms) | loop CPU in it (ms) | worst own stall (ms) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        began = time.monotonic()
        samples.began = began
        await samples.take()
        minute = 1
        monitor.take()
        while minute <= args.minutes:
            first = int((time.monotonic() - began) * args.arrivals_per_second)
            window[:] = [user_id((first + offset) % args.pool) for offset in range(args.active)]
            for index in range(0, len(window), args.concurrency):
                batch = window[index : index + args.concurrency]
                await asyncio.gather(*(pipeline.prepare(RuntimeContext(user_id=u)) for u in batch))
                turns += len(batch)
            if not window:  # --active 0: the floor, files churn and no turn is taken
                await asyncio.sleep(1)
            if time.monotonic() - began >= minute * 60:
                figures = process_figures()
                stall, cpu, own = monitor.take()
                _, rss, cache, store_bytes, blocks = await samples.take()
                print(
                    f"| {minute} | {rss / 1024:.1f} | {blocks / 1000:.0f} | {cache / 1024:.1f} | {store_bytes / 1024:.1f} "
                    f"| {pipeline.cached_users} | {figures['fds']} | {figures['threads']} | {turns} "
                    f"| {stall * 1000:.1f} | {cpu * 1000:.1f} | {own * 1000:.1f} |",
                    flush=True,
                )
                turns = 0
                minute += 1
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(samples.report())


@contextlib.contextmanager
def _timed_watch_setups(tracer: StallTracer) -> Iterator[None]:
    """Mark in ``tracer`` each watch set up by watchfiles (the backend off Linux, or chosen there:
    it walks the folders in native code; the inotify backend walks them in a worker thread)."""
    import watchfiles.main

    module: Any = watchfiles.main  # RustNotify is replaced by a timed factory while the soak runs
    original = module.RustNotify

    def timed(*args: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args)
        finally:
            tracer.mark("watch setup", began, time.perf_counter())

    module.RustNotify = timed
    try:
        yield
    finally:
        module.RustNotify = original


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=int, default=5)
    parser.add_argument("--pool", type=int, default=5000, help="users who come and go")
    parser.add_argument("--active", type=int, default=200, help="users taking turns at any time")
    parser.add_argument("--concurrency", type=int, default=20, help="turns in flight at once")
    parser.add_argument("--market", type=int, default=1000, help="skills in the market")
    parser.add_argument("--own", type=int, default=3, help="skills in each user's own area")
    parser.add_argument("--arrivals-per-second", type=float, default=8.0, help="users the window moves on by, a second")
    parser.add_argument("--idle-after", type=float, default=30.0, help="user_idle_after (seconds)")
    parser.add_argument("--churn-per-second", type=int, default=20)
    parser.add_argument("--churn-folders", type=int, default=500, help="skill folders the churn keeps at once")
    parser.add_argument("--appends-per-second", type=int, default=50, help="conversation exchanges appended")
    parser.add_argument("--session-max-age", type=float, default=120.0, help="the session store's max_age (seconds)")
    parser.add_argument("--prune-every", type=float, default=30.0, help="seconds between prunes (0: never)")
    parser.add_argument("--sample-seconds", type=float, default=10.0, help="seconds between memory and disk samples")
    parser.add_argument(
        "--verify-interval", type=float, default=600.0, help="the stager's verify_interval: every staged file re-hashed"
    )
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() once started: collections skip the startup heap"
    )
    parser.add_argument("--no-watch", dest="watch", action="store_false", help="no watcher: the floor")
    parser.add_argument("--trace-stalls", type=float, default=0.0, metavar="MS", help="sample stalls over MS")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        make_skill_tree(workspace / "skills", 20, prefix="team")
        for index in range(0, args.pool, 2):  # half the users have skills of their own
            make_skill_tree(workspace / user_id(index) / "skills", args.own, prefix=f"own{index}")
        if not args.trace_stalls:
            asyncio.run(soak(args, workspace, None))
            return
        with StallTracer(args.trace_stalls / 1000) as tracer, _timed_watch_setups(tracer):
            asyncio.run(soak(args, workspace, tracer))
        print(tracer.report())


if __name__ == "__main__":
    main()

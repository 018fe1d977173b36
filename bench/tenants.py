"""Many users on one pipeline: p50/p99 prepare latency and peak memory, local-shell and remote.

    .venv/bin/python bench/tenants.py [--users 100] [--turns 20] [--concurrency 20]
                                      [--mode all|local-shell|remote]

Each of ``--users`` users takes ``--turns`` turns; the turns are handed out round-robin (every
user's first turn, then every user's second, ...) to ``--concurrency`` workers, so that many
``prepare`` calls are in flight at once on one ``SkillPipeline``. Every turn sees the market
(``--market`` skills in a ``MemoryRepository``), the shared workspace skills and the user's own
skills; the first turn of a user reads that user's layer, later turns are warm.

- local-shell: ``LocalFilesystem(workspace, shell=True)``; the startup turn stages the market.
- remote: ``RemoteFilesystem`` over a ``SQLiteKeyValueStore`` file; every turn asks the store for
  its generation counter (one cheap query) per layer.

Each mode runs in its own child process so its peak RSS (``ru_maxrss``) is its own; the
baseline is one user's warm turn with nothing else running, measured in the same process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree  # noqa: E402
from scale import market_bundles  # noqa: E402

from filesystems import AbstractFilesystem, LocalFilesystem, RemoteFilesystem, SQLiteKeyValueStore  # noqa: E402
from harness import RuntimeContext, SkillPipeline  # noqa: E402
from repositories import MemoryRepository  # noqa: E402

MODES = ("local-shell", "remote")
STARTUP = RuntimeContext(user_id="startup")


@dataclass(kw_only=True)
class Latencies:
    """Prepare times in milliseconds, split by whether it was the user's first turn."""

    first: list[float] = field(default_factory=list)
    later: list[float] = field(default_factory=list)


def user_ids(count: int) -> list[str]:
    return [f"user-{index:03d}" for index in range(count)]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) of ``samples``."""
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[98]


async def upload(source: Path, filesystem: AbstractFilesystem, prefix: str) -> None:
    """Copy a generated folder tree into a (remote) filesystem below ``prefix``."""
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        await filesystem.write_bytes(f"{prefix}/{path.relative_to(source).as_posix()}", path.read_bytes())


async def open_filesystem(mode: str, root: Path, args: argparse.Namespace) -> AbstractFilesystem:
    """The mode's filesystem with the workspace skills and every user's skills in place."""
    if mode == "local-shell":
        workspace = root / "workspace"
        make_skill_tree(workspace / "skills", args.workspace, prefix="team")
        for user in user_ids(args.users):
            make_skill_tree(workspace / user / "skills", args.per_user, prefix=user)
        return LocalFilesystem(workspace, shell=True)
    remote = RemoteFilesystem(SQLiteKeyValueStore(root / "store.db"), agent_id="bench")
    await upload(_tree(root / "team", args.workspace, "team"), remote, "skills")
    for user in user_ids(args.users):
        await upload(_tree(root / user, args.per_user, user), remote.scoped(user), "skills")
    return remote


def _tree(folder: Path, count: int, prefix: str) -> Path:
    make_skill_tree(folder, count, prefix=prefix)
    return folder


def schedule(users: list[str], turns: int) -> Iterator[tuple[RuntimeContext, bool]]:
    """Round-robin turns: (context, is the user's first turn)."""
    for turn in range(turns):
        for user in users:
            yield RuntimeContext(user_id=user), turn == 0


async def run_turns(pipeline: SkillPipeline, args: argparse.Namespace, expected: int) -> tuple[Latencies, float]:
    """Drive every turn through ``args.concurrency`` workers; return latencies and wall time."""
    latencies = Latencies()
    pending = schedule(user_ids(args.users), args.turns)

    async def worker() -> None:
        for context, first in pending:
            start = time.perf_counter()
            plan = await pipeline.prepare(context)
            elapsed = (time.perf_counter() - start) * 1000
            (latencies.first if first else latencies.later).append(elapsed)
            if len(plan.skills) != expected:
                raise RuntimeError(f"{context.user_id} saw {len(plan.skills)} skills, expected {expected}")

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    return latencies, time.perf_counter() - start


async def alone_ms(pipeline: SkillPipeline, runs: int) -> float:
    """Median warm turn of one user with nothing else running."""
    context = RuntimeContext(user_id=user_ids(1)[0])
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await pipeline.prepare(context)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_mode(mode: str, args: argparse.Namespace) -> None:
    market = MemoryRepository(market_bundles(args.market), name="market", writable=False)
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            filesystem = await stack.enter_async_context(await open_filesystem(mode, Path(tmp), args))
            pipeline = await stack.enter_async_context(SkillPipeline(filesystem=filesystem, repositories=[market]))
            rss_before = peak_rss_mib()
            start = time.perf_counter()
            startup = await pipeline.prepare(STARTUP)
            startup_ms = (time.perf_counter() - start) * 1000
            latencies, wall = await run_turns(pipeline, args, args.market + args.workspace + args.per_user)
            rss_after = peak_rss_mib()
            baseline = await alone_ms(pipeline, 50)
    turns = args.users * args.turns
    staged = f", {startup.staged.written} files staged" if startup.staged is not None else ", nothing staged (no shell)"
    every = latencies.first + latencies.later
    p50, p99 = percentiles(every)
    print(
        f"{mode}: {args.users} users x {args.turns} turns = {turns} turns, {args.concurrency} in flight; "
        f"each turn sees {args.market} market + {args.workspace} workspace + {args.per_user} user skills"
    )
    print(f"  startup turn          {startup_ms:9.1f} ms (market load{staged})")
    print(
        f"  all turns           p50 {p50:8.2f} ms   p99 {p99:8.2f} ms   ({len(every)} turns, {turns / wall:.0f} turns/s)"
    )
    for label, samples in (("first turn per user", latencies.first), ("later turns", latencies.later)):
        if len(samples) > 1:
            lo, hi = percentiles(samples)
            print(f"  {label:<19} p50 {lo:8.2f} ms   p99 {hi:8.2f} ms   ({len(samples)} turns)")
    print(f"  one user alone        {baseline:9.2f} ms (warm, median of 50)   p50/alone {p50 / baseline:.1f}x")
    print(
        f"  peak RSS              {rss_before:9.1f} MiB before turns, {rss_after:.1f} MiB after (+{rss_after - rss_before:.1f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--market", type=int, default=200, help="market skills")
    parser.add_argument("--workspace", type=int, default=50, help="shared workspace skills")
    parser.add_argument("--per-user", type=int, default=3, help="skills in each user's own layer")
    parser.add_argument("--mode", choices=("all", *MODES), default="all")
    args = parser.parse_args()
    if args.mode != "all":
        asyncio.run(run_mode(args.mode, args))
        return
    forwarded = [f"--{name.replace('_', '-')}={value}" for name, value in vars(args).items() if name != "mode"]
    for mode in MODES:
        # A fresh interpreter per mode, so each peak RSS is that mode's alone.
        subprocess.run([sys.executable, __file__, *forwarded, "--mode", mode], check=True, env=os.environ)


if __name__ == "__main__":
    main()

"""The cost of a user: one pipeline serving many users with skills of their own.

    .venv/bin/python bench/users.py [--users 1000] [--own 3] [--turns 20] [--market 1000]
                                    [--concurrency 20] [--idle-after SECONDS]

A ``LocalFilesystem`` workspace with a shell (as a long-running bot has) and a market of
``--market`` skills in a ``MemoryRepository``; each of ``--users`` users has ``--own`` skills in
their own area and takes ``--turns`` turns (a user's turns one after another, ``--concurrency``
users at once). Printed: the process's resident memory (``VmRSS``), open file descriptors and
threads before the first user and after the last, and the difference per user; the first turn
per user and the later ones (p50 / p99); how many users the pipeline still holds.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree  # noqa: E402
from scale import market_bundles  # noqa: E402

from filesystems import LocalFilesystem  # noqa: E402
from harness import RuntimeContext, SkillPipeline  # noqa: E402
from harness.skills.scanner import MarketScanPolicy, TrustLevel  # noqa: E402
from repositories import MemoryRepository  # noqa: E402


def process_figures() -> dict[str, int]:
    """Resident memory (KiB), open file descriptors and threads of this process, from /proc."""
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": int(fields["Threads"]),
    }


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


async def serve(args: argparse.Namespace, workspace: Path) -> None:
    market = MemoryRepository(market_bundles(args.market), name="market", writable=False)
    policy = MarketScanPolicy(default=TrustLevel.TRUSTED)  # the users' cost, not the ingest scan
    first: list[float] = []
    later: list[float] = []
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        SkillPipeline(
            filesystem=fs, repositories=[market], market_scan=policy, user_idle_after=args.idle_after
        ) as pipeline,
    ):
        start = time.perf_counter()
        await pipeline.prepare(RuntimeContext(user_id="startup"))
        print(f"startup turn (market of {args.market} skills, staged): {time.perf_counter() - start:.2f} s")
        gc.collect()
        before = process_figures()

        async def user(index: int) -> None:
            context = RuntimeContext(user_id=f"user-{index:05d}")
            for turn in range(args.turns):
                began = time.perf_counter()
                await pipeline.prepare(context)
                (later if turn else first).append((time.perf_counter() - began) * 1000)

        queue = iter(range(args.users))

        async def worker() -> None:
            for index in queue:
                await user(index)

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        gc.collect()
        after = process_figures()
        held = pipeline.cached_users
    users = args.users
    print(f"{users} users x {args.own} own skills x {args.turns} turns, {args.concurrency} users at once")
    print("| figure | before | after | per user |")
    print("|---|---|---|---|")
    for key, label in (("rss_kib", "resident memory (KiB)"), ("fds", "open file descriptors"), ("threads", "threads")):
        per = (after[key] - before[key]) / users
        print(f"| {label} | {before[key]} | {after[key]} | {per:.3f} |")
    print(
        f"first turn per user: p50 {statistics.median(first):.2f} ms, p99 {percentile(first, 0.99):.2f} ms; "
        f"later turns: p50 {statistics.median(later):.3f} ms, p99 {percentile(later, 0.99):.3f} ms"
    )
    print(f"users held by the pipeline at the end: {held}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--own", type=int, default=3, help="skills in each user's own area")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--market", type=int, default=1000, help="skills in the market")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--idle-after", type=float, default=None, help="user_idle_after (default: never)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        for index in range(args.users):
            make_skill_tree(workspace / f"user-{index:05d}" / "skills", args.own, prefix=f"own{index}")
        asyncio.run(serve(args, workspace))


if __name__ == "__main__":
    main()

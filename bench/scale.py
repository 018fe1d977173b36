"""10,000 market skills: cold and warm prepare cost, catalog size with and without a budget,
search_skills latency.

    .venv/bin/python bench/scale.py [--count 10000] [--runs 5] [--budget 30000] [--stage-runs 1]

For each market kind (``MemoryRepository`` holding the bundles, ``DirectoryRepository`` over a
generated tree) the script measures, over a workspace without a shell (nothing staged):

- first cold: a fresh repository and pipeline, the first ``prepare`` (market snapshot, parse,
  the market ingest scan of every SKILL.md, merge, render);
- cold: the same in a fresh pipeline once the scan verdicts are stored (a restarted process);
- warm: the same pipeline's next turns (nothing changed);

then, on a workspace with a shell, the first turn that stages every market file into an empty
``.skills-cache`` and the warm turn after it. The catalog is measured with and without
``catalog_budget`` (default: the harness default), with how many skills the budgeted catalog
describes, names and counts; rendering alone (``pipeline.render``) is the in-process baseline the
prepare figures are compared with. ``search_skills`` latency is the p50
of 100 queries for sampled skill names over the budgeted turn (the index is built by the first
search, which is reported apart).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_skill_tree, median_ms, skill_md  # noqa: E402

from filesystems import LocalFilesystem  # noqa: E402
from harness import RuntimeContext, SkillPipeline, TurnPlan  # noqa: E402
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET  # noqa: E402
from harness.tools.search import search_plan  # noqa: E402
from repositories import DirectoryRepository, FileContents, MemoryRepository, SkillBundleContents, SkillRepository  # noqa: E402

USER = RuntimeContext(user_id="bench")
RepositoryFactory = Callable[[], SkillRepository]


def market_bundles(count: int, *, prefix: str = "market") -> list[SkillBundleContents]:
    """``count`` market skills shaped like ``make_skill_tree``'s: SKILL.md, a script, a reference."""
    return [
        SkillBundleContents(
            folder=f"{prefix}-{index:05d}",
            skill_md=skill_md(f"{prefix}-{index:05d}", index).encode(),
            files=(
                FileContents(path="scripts/run.py", data=b"print('ok')\n", mode=0o755),
                FileContents(path="references/guide.md", data=b"# Guide\n" * 10),
            ),
        )
        for index in range(count)
    ]


async def median_turn_ms(measure: Callable[[], Awaitable[object]], runs: int) -> float:
    """Median wall time of ``runs`` awaited calls, in milliseconds."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await measure()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


async def cold_prepare(
    workspace: Path, repositories: Sequence[SkillRepository], *, shell: bool, budget: int | None
) -> tuple[float, TurnPlan]:
    """The first turn of a fresh pipeline (watchers running, as in an app): its time and plan."""
    async with (
        LocalFilesystem(workspace, shell=shell) as filesystem,
        SkillPipeline(filesystem=filesystem, repositories=repositories, catalog_budget=budget) as pipeline,
    ):
        start = time.perf_counter()
        plan = await pipeline.prepare(USER)
        return (time.perf_counter() - start) * 1000, plan


async def no_shell_figures(
    kind: str, make_repository: RepositoryFactory, workspace: Path, args: argparse.Namespace
) -> None:
    # The first cold prepare scans every new SKILL.md (the market ingest scan); the verdicts it
    # stores let the later ones (a restarted process) skip the scan, so both are reported.
    first_cold = (await cold_prepare(workspace, [make_repository()], shell=False, budget=None))[0]
    cold = statistics.median(
        [(await cold_prepare(workspace, [make_repository()], shell=False, budget=None))[0] for _ in range(args.runs)]
    )
    async with (
        LocalFilesystem(workspace) as filesystem,
        SkillPipeline(filesystem=filesystem, repositories=[make_repository()], catalog_budget=None) as pipeline,
        SkillPipeline(filesystem=filesystem, repositories=[make_repository()], catalog_budget=args.budget) as budgeted,
    ):
        plan = await pipeline.prepare(USER)
        limited = await budgeted.prepare(USER)
        warm = await median_turn_ms(lambda: pipeline.prepare(USER), args.runs * 4)
        render = median_ms(lambda: pipeline.render(plan.skills), runs=args.runs)
        render_budget = median_ms(lambda: budgeted.render(limited.skills), runs=args.runs)
        first_search, search = await search_latency_ms(limited, args.count)
    print(f"{kind} market, {len(plan.skills)} skills, no shell (nothing staged)")
    print(
        f"  first cold prepare {first_cold:8.1f} ms   {first_cold * 1000 / args.count:6.1f} us/skill (scans every SKILL.md)"
    )
    print(f"  cold prepare      {cold:9.1f} ms   {cold * 1000 / args.count:6.1f} us/skill (scan verdicts stored)")
    print(f"  warm prepare      {warm:9.2f} ms   cold/warm {cold / warm:.3g}x")
    print(f"  render only       {render:9.2f} ms   warm/render {warm / render:.3g}x")
    print(f"  catalog           {len(plan.catalog):9d} chars, no budget")
    described, named, counted = catalog_counts(limited.catalog)
    print(
        f"  catalog           {len(limited.catalog):9d} chars, budget {args.budget} (render {render_budget:.2f} ms): "
        f"{described} skills keep a description, {named} named, {counted} counted"
    )
    print(
        f"  search_skills     {search:9.2f} ms p50 of 100 queries (first search, builds the index: {first_search:.1f} ms)"
    )


def catalog_counts(catalog: str) -> tuple[int, int, int]:
    """How many skills a catalog describes, names only, and counts in its ``<more>`` line."""
    described = catalog.count("</skill>")
    lists = re.findall(r"<skill-names>(.*?)</skill-names>", catalog)
    named = sum(len(names.split(", ")) for names in lists) + catalog.count("/>\n")
    more = re.search(r'<more count="(\d+)">', catalog)
    return described, named, int(more.group(1)) if more else 0


async def search_latency_ms(plan: TurnPlan, count: int) -> tuple[float, float]:
    """The first search (it builds the index) and the p50 of 100 searches for sampled names."""
    names = [f"market-{index:05d}" for index in random.Random(1).sample(range(count), min(100, count))]
    start = time.perf_counter()
    await search_plan(plan, names[0])
    first = (time.perf_counter() - start) * 1000
    samples = []
    for name in (names * 100)[:100]:
        start = time.perf_counter()
        matches = await search_plan(plan, name, limit=10)
        samples.append((time.perf_counter() - start) * 1000)
        if not matches or matches[0].name != name:
            raise SystemExit(f"search_skills did not find {name} first")
    return first, statistics.median(samples)


async def staged_figures(kind: str, make_repository: RepositoryFactory, root: Path, args: argparse.Namespace) -> None:
    colds, written = [], 0
    for run in range(args.stage_runs):
        workspace = root / f"staged-{kind}-{run}"
        workspace.mkdir()
        elapsed, plan = await cold_prepare(workspace, [make_repository()], shell=True, budget=None)
        colds.append(elapsed)
        written = plan.staged.written if plan.staged is not None else 0
    async with (
        LocalFilesystem(root / f"staged-{kind}-0", shell=True) as filesystem,
        SkillPipeline(filesystem=filesystem, repositories=[make_repository()]) as pipeline,
    ):
        start = time.perf_counter()
        restart = await pipeline.prepare(USER)
        restart_ms = (time.perf_counter() - start) * 1000
        warm = await median_turn_ms(lambda: pipeline.prepare(USER), args.runs * 4)
    reused = restart.staged.unchanged if restart.staged is not None else 0
    print(f"{kind} market, shell (stages into .skills-cache)")
    print(f"  cold staging turn {statistics.median(colds):9.1f} ms   {written} files written (runs: {args.stage_runs})")
    print(f"  restart turn      {restart_ms:9.1f} ms   a new pipeline over the staged cache: {reused} files kept")
    print(f"  warm prepare      {warm:9.2f} ms")


async def run(args: argparse.Namespace) -> None:
    bundles = market_bundles(args.count)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = root / "market"
        make_skill_tree(tree, args.count, prefix="market")
        kinds: dict[str, RepositoryFactory] = {
            "memory": lambda: MemoryRepository(bundles, name="market", writable=False),
            "directory": lambda: DirectoryRepository(tree),
        }
        print(f"market skills: {args.count}, runs: {args.runs} (medians; warm: {args.runs * 4} turns)")
        for kind, factory in kinds.items():
            workspace = root / f"workspace-{kind}"  # each kind scans its market afresh
            workspace.mkdir()
            await no_shell_figures(kind, factory, workspace, args)
        for kind, factory in kinds.items():
            await staged_figures(kind, factory, root, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=int, default=DEFAULT_CATALOG_BUDGET)
    parser.add_argument("--stage-runs", type=int, default=1, help="cold staging turns (each into a new workspace)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()

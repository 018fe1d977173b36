"""Child process of the SIGKILL test: stage a directory market into a workspace, then report.

Usage: python stage_driver.py WORKSPACE MARKET_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import DirectoryRepository


async def main(workspace: Path, market: Path) -> None:
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        DirectoryRepository(market, source="big") as repository,
        # A busy machine can take longer than the default to list 150 skills; this test is
        # about a stage cut short, not a slow market.
        SkillPipeline(filesystem=fs, repositories=[repository], watch=False, market_timeout=300) as pipeline,
    ):
        plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
    assert plan.staged is not None
    print(f"staged {plan.staged.written} {len(plan.diagnostics)}", flush=True)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]))

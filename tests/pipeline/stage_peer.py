"""A second process sharing a workspace: stages one directory market, then waits.

Usage: ``python stage_peer.py WORKSPACE MARKET_DIR``. Prints ``staged <written>`` once its
turn is prepared, then holds its pipeline (and lease) open until a line arrives on stdin.
"""

from __future__ import annotations

import asyncio
import sys

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import DirectoryRepository


async def main(workspace: str, market_dir: str) -> None:
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        DirectoryRepository(market_dir) as market,
        SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(RuntimeContext(user_id="peer"))
        assert plan.staged is not None
        print(f"staged {plan.staged.written}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

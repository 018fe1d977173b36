"""Child process of the hostile-layout tests, run as an unprivileged user so that file modes
matter: prepares a turn for each user over a workspace (and optionally a directory market) and
prints one JSON line: each user's skill ids and every diagnostic message.

Usage: python layout_driver.py WORKSPACE [MARKET_DIR] USERS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import DirectoryRepository


async def main(workspace: str, market: str, users: list[str]) -> None:
    repositories = [DirectoryRepository(Path(market))] if market else []
    result: dict[str, object] = {}
    async with (
        LocalFilesystem(workspace) as fs,
        SkillPipeline(filesystem=fs, repositories=repositories, watch=False) as pipeline,
    ):
        for user in users:
            plan = await pipeline.prepare(RuntimeContext(user_id=user))
            result[user] = {"skills": sorted(plan.skills), "diagnostics": [d.message for d in plan.diagnostics]}
    print(json.dumps(result))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3].split(","))

"""Child process of the hostile-layout tests, run as an unprivileged user so that file modes
matter: prepares a turn for each user over a workspace (and optionally a directory market) and
prints one JSON line: each user's skill ids, every diagnostic message, and for each skill whose
whole listing cannot be produced (a folder layer lists a skill's folders on first use) why.

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
from repositories import DirectoryRepository, RepositoryError


async def main(workspace: str, market: str, users: list[str]) -> None:
    repositories = [DirectoryRepository(Path(market))] if market else []
    result: dict[str, object] = {}
    async with (
        LocalFilesystem(workspace) as fs,
        SkillPipeline(filesystem=fs, repositories=repositories, watch=False) as pipeline,
    ):
        for user in users:
            plan = await pipeline.prepare(RuntimeContext(user_id=user))
            unlisted: dict[str, str] = {}
            for skill_id, resolved in sorted(plan.skills.items()):
                try:
                    await resolved.list_files()
                except RepositoryError as exc:
                    unlisted[skill_id] = str(exc)
            result[user] = {
                "skills": sorted(plan.skills),
                "diagnostics": [d.message for d in plan.diagnostics],
                "unlisted": unlisted,
            }
    print(json.dumps(result))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3].split(","))

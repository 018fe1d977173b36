"""Run one turn for two users over a directory market and print what they got, as JSON.

Run as an unprivileged user by the hostile-market tests, where file permissions matter:
``market_driver.py WORKSPACE MARKET``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.tools.skills import load_skill_file
from repositories import DirectoryRepository


async def main(workspace: Path, market: Path) -> None:
    report: dict[str, object] = {}
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        DirectoryRepository(market) as repo,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        for user in ("alice", "bob"):
            plan = await pipeline.prepare(RuntimeContext(user_id=user))
            try:
                loaded = await load_skill_file(plan, "good", "notes.txt")
            except Exception as exc:  # reported, not raised: the driver prints what a model would see
                loaded = f"{type(exc).__name__}: {exc}"
            report[user] = {
                "skills": sorted(s.skill.name for s in plan.skills.values()),
                "diagnostics": [d.as_dict() for d in plan.diagnostics],
                "loaded": loaded,
            }
        report["source"] = repo.source
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]))

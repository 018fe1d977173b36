"""Stage a directory market, update it, tamper with the cache and check it, as whatever user runs
this: the staging tests run it as an unprivileged user, for whom the cache's read-only folders
are real. ``sealed_cache_driver.py WORKSPACE MARKET`` prints a JSON report.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import DirectoryRepository

ALICE = RuntimeContext(user_id="alice")


async def main(workspace: Path, market: Path) -> None:
    report: dict[str, object] = {}
    async with (
        LocalFilesystem(workspace, shell=True) as fs,
        DirectoryRepository(market) as repo,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        report["first"] = [d.message for d in plan.diagnostics if d.severity == "error"]
        (market / "tool" / "scripts" / "run.sh").write_text("#!/bin/sh\necho v2\n")
        (market / "tool" / "new" / "deep").mkdir(parents=True)
        (market / "tool" / "new" / "deep" / "x.txt").write_text("x\n")
        (market / "tool" / "old.txt").unlink()
        shutil.rmtree(market / "gone")
        await pipeline.refresh()
        plan = await pipeline.prepare(ALICE)
        report["update"] = [d.message for d in plan.diagnostics if d.severity == "error"]
        tool = plan.find("tool")
        assert tool is not None and plan.before_run is not None
        root = tool.files_root
        direct = await plan.filesystem.run(f"echo PWNED > {root}/scripts/run.sh; touch {root}/out.txt")
        report["direct"] = direct.stderr
        forced = await plan.filesystem.run(
            f"chmod u+w {root} {root}/scripts {root}/scripts/run.sh && echo 'echo PWNED' > {root}/scripts/run.sh "
            f"&& touch {root}/out.txt"
        )
        report["forced"] = forced.ok
        await plan.before_run(tool)
        report["run"] = (await plan.filesystem.run(f"{root}/scripts/run.sh")).stdout
        report["source"] = repo.source
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]))

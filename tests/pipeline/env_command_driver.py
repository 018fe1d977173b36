"""A second process sharing a workspace: its agent runs one long command of a market skill with
the skill's environment, and while it runs the skill's requirements change under it.

Usage: ``python env_command_driver.py WORKSPACE MARKET_DIR WHEELS``. Prints ``ready <folder>``
once the skill's environment is built and ``running`` once the command started (it waits for a
file ``go`` in the user's folder, then imports the package). On a line ``retrack`` on stdin it
reads the market again and prints ``retracked <folder>`` once the new environment is ready;
prints ``result <JSON of the command's result>`` when the command ended.
"""

from __future__ import annotations

import json
import sys

import anyio

from filesystems import LocalFilesystem
from harness import Harness, PipelineOptions, RuntimeContext
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline import EnvironmentOptions, SkillPipeline
from harness.pipeline.catalog import SHELL_TOOL
from repositories import DirectoryRepository

ALICE = RuntimeContext(user_id="alice")
SKILL = "sheet-tool_dir-market"
COMMAND = (
    'touch "$OUTPUT_DIR/started"; while [ ! -e "$OUTPUT_DIR/go" ]; do sleep 0.05; done; '
    "python3 -c 'import hxsheet; print(hxsheet.VALUE)'"
)


async def ready(pipeline: SkillPipeline, other_than: str | None = None) -> str:
    """The skill's environment once it is built (and is not ``other_than``)."""
    manager = pipeline.environments
    assert manager is not None
    while True:
        await pipeline.prepare(ALICE)
        folder = manager.environment(SKILL)
        if manager.idle and folder is not None and folder != other_than:
            return folder
        await anyio.sleep(0.05)


async def main(workspace: str, market: str, wheels: str) -> None:
    filesystem = LocalFilesystem(workspace, shell=True)
    step = Message.assistant("", [ToolCall(id="long", name=SHELL_TOOL, arguments={"command": COMMAND, "skill": SKILL})])
    environments = EnvironmentOptions(no_index=True, find_links=(wheels,), untrusted_markets=True)
    async with Harness(
        model=ScriptedModel([step, "done"]),
        filesystem=filesystem,
        repositories=[DirectoryRepository(market)],
        pipeline=PipelineOptions(environments=environments),
    ) as agent:
        first = await ready(agent.pipeline)
        print("ready", first, flush=True)
        started = anyio.Path(workspace, "alice", "started")

        async def run() -> None:
            result = await agent.run("run it", context=ALICE)
            [returned] = [e for e in result.events if isinstance(e, ToolReturned)]
            print("result", json.dumps(returned.content), flush=True)

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            while not await started.exists():
                await anyio.sleep(0.05)
            print("running", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            assert line.strip() == "retrack", line
            await agent.pipeline.refresh()
            print("retracked", await ready(agent.pipeline, other_than=first), flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])

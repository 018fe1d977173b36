"""A fresh agent process's first turn: the model's first call runs a market skill's script by
its files-root before the skill's environment exists.

Usage: ``python first_turn_driver.py WORKSPACE MARKET_DIR FIND_LINKS_URL``. Prints one JSON line
per progress report as it comes (``{"progress": ...}``) and per streamed event
(``{"event": <class name>, ...}``), deltas left out.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import anyio

from filesystems import CACHE_DIR, LocalFilesystem, Progress
from harness import Harness, PipelineOptions, RuntimeContext
from harness.models import Message, ScriptedModel, TextDelta, ToolCall, ToolCallDelta
from harness.models.base import ToolSpec
from harness.pipeline import EnvironmentOptions
from harness.pipeline.catalog import SHELL_TOOL
from repositories import DirectoryRepository


def _print(value: object) -> None:
    print(json.dumps(value, default=str), flush=True)


def _progress(report: Progress) -> None:
    _print({"progress": dataclasses.asdict(report)})


async def main(workspace: str, market: str, find_links: str) -> None:
    filesystem = LocalFilesystem(workspace, shell=True)
    root = filesystem.shell_path(f"{CACHE_DIR}/dir-market/pdf-tool")  # the skill's files-root

    def run_the_script(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        command = f"python3 {root}/scripts/show.py"
        return Message.assistant("", [ToolCall(id="first", name=SHELL_TOOL, arguments={"command": command})])

    environments = EnvironmentOptions(no_index=True, find_links=(find_links,), untrusted_markets=True)
    async with Harness(
        model=ScriptedModel([run_the_script, "done"]),
        filesystem=filesystem,
        repositories=[DirectoryRepository(market)],
        pipeline=PipelineOptions(environments=environments, progress=_progress),
    ) as agent:
        async for event in agent.stream("show the pdf package", context=RuntimeContext(user_id="alice")):
            if not isinstance(event, TextDelta | ToolCallDelta):
                _print({"event": type(event).__name__, **dataclasses.asdict(event)})


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])

"""A skill's first command has its packages: a command of a skill whose environment is being
built (or not yet started) waits for that build and then runs with it — in a fresh process, on
its first turn, with the wheels served from an index on 127.0.0.1 — while commands of other
skills never wait; a command that cannot wait is refused, saying when to try again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxFilesystem
from harness import Harness
from harness.agent import PipelineOptions
from harness.events import EnvironmentWaited, Event, ShellRan, ToolCalled, ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from harness.pipeline.catalog import SHELL_TOOL
from repositories import DirectoryRepository
from tests.support.cli import python_command
from tests.support.environments import ALICE, PEP723, options, recorded, settled, uv_cache, uv_runs, wheelhouse
from tests.support.polling import eventually
from tests.support.skills import make_skill
from tests.support.wheels import WheelIndex

__all__ = ["recorded", "uv_cache", "wheelhouse"]  # fixtures

DRIVER = Path(__file__).with_name("first_turn_driver.py")
PDF_ID, SHEET_ID = "pdf-tool_dir-market", "sheet-tool_dir-market"
SHEET = "import hxsheet\nprint(hxsheet.VALUE)\n"


def _calls(result_events: list[Event]) -> dict[str, list[Event]]:
    """Each call's events, from its ``ToolCalled`` to its ``ToolReturned``, by call id."""
    calls: dict[str, list[Event]] = {}
    current: list[Event] | None = None
    for event in result_events:
        if isinstance(event, ToolCalled):
            current = calls.setdefault(event.call_id, [])
        if current is not None:
            current.append(event)
        if isinstance(event, ToolReturned):
            current = None
    return calls


def test_a_fresh_processs_first_command_waits_for_its_skills_environment_and_has_its_package(
    tmp_path: Path, wheelhouse: Path
) -> None:
    make_skill(tmp_path / "market", "pdf-tool", files={"scripts/show.py": PEP723})
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    records: list[dict[str, object]] = []
    with WheelIndex(wheelhouse) as index:
        index.hold("hxpdf")  # the build cannot end before the command is seen waiting for it
        with subprocess.Popen(
            [*python_command(DRIVER), str(tmp_path / "ws"), str(tmp_path / "market"), index.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        ) as child:
            watchdog = threading.Timer(300, child.kill)  # bounds a hang; nothing here is timed
            watchdog.start()
            try:
                assert child.stdout is not None and child.stderr is not None
                for line in child.stdout:
                    record = json.loads(line)
                    records.append(record)
                    progress = record.get("progress")
                    if isinstance(progress, dict) and progress["task"] == "waiting for environment":
                        index.release()
                stderr = child.stderr.read()
                assert child.wait() == 0, stderr
            finally:
                watchdog.cancel()
    progress: list[dict[str, Any]] = [r["progress"] for r in records if "progress" in r]  # type: ignore[misc]
    waiting = [p for p in progress if p["task"] == "waiting for environment"]
    assert waiting and {w["subject"] for w in waiting} == {PDF_ID} and waiting[-1]["final"]
    installing = [p for p in progress if p["task"] == "installing"]
    started = [p["subject"] for p in installing if p["done"] == 0 and not p["final"]]
    assert started == [PDF_ID] and installing[-1]["final"] and installing[-1]["done"] == 1  # one build
    events = [r for r in records if "event" in r]
    called = next(i for i, e in enumerate(events) if e["event"] == "ToolCalled")
    kinds = [e["event"] for e in events[called : called + 4]]
    assert kinds == ["ToolCalled", "EnvironmentWaited", "ShellRan", "ToolReturned"]
    assert events[called + 1]["skill_id"] == PDF_ID and events[called + 1]["state"] == "ready"
    assert events[called + 3]["content"] == "exit code: 0\nstdout:\nhxpdf 1.2"
    assert set(index.asked) == {"hxpdf-1.2-py3-none-any.whl"}


@pytest.fixture(params=["local-shell", "sandbox"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def _agent(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path, model: ScriptedModel, **changes: object
) -> AsyncIterator[tuple[Harness, Path, Path, WheelIndex]]:
    """An agent over a folder market of sheet-tool (hxsheet) with environments from a wheel
    index on 127.0.0.1; yields it, the user's folder on the host, the market and the index."""
    wheels = request.getfixturevalue("wheelhouse")
    filesystem: AbstractFilesystem
    if mode == "sandbox":
        root = request.getfixturevalue("sandbox_dir") / "ws"
        filesystem = SandboxFilesystem(root, bwrap=request.getfixturevalue("bwrap"))
    else:
        root = tmp_path / "ws"
        filesystem = LocalFilesystem(root, shell=True)
    market = tmp_path / "market"
    make_skill(market, "sheet-tool", files={"requirements.txt": "hxsheet\n", "scripts/show.py": SHEET})
    with WheelIndex(wheels) as index:
        environments = options(wheels, find_links=(index.url,), untrusted_markets=True, **changes)
        async with Harness(
            model=model,
            filesystem=filesystem,
            repositories=[DirectoryRepository(market)],
            pipeline=PipelineOptions(environments=environments),
        ) as agent:
            yield agent, root / "alice", market, index


async def test_a_command_waits_for_its_own_skills_build_and_never_for_another_skills(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path, recorded: list[list[str]]
) -> None:
    roots: dict[str, str | None] = {}

    def three_commands(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        pdf, sheet = f"python3 {roots[PDF_ID]}/scripts/show.py", f"python3 {roots[SHEET_ID]}/scripts/show.py"
        return Message.assistant(
            "",
            [
                ToolCall(id="pdf", name=SHELL_TOOL, arguments={"command": pdf}),
                ToolCall(
                    id="sheet",
                    name=SHELL_TOOL,
                    arguments={"command": 'python -m scripts.show && touch "$OUTPUT_DIR/sheet-ran"', "skill": SHEET_ID},
                ),
                ToolCall(id="both", name=SHELL_TOOL, arguments={"command": f"{pdf} && {sheet}"}),
            ],
        )

    model = ScriptedModel([three_commands, "done"])
    async with _agent(request, mode, tmp_path, model) as (agent, user, market, index):
        await settled(agent.pipeline)  # sheet-tool's environment is ready
        make_skill(market, "pdf-tool", files={"scripts/show.py": PEP723})
        await agent.pipeline.refresh()
        index.hold("hxpdf")
        roots.update((s.skill.skill_id, s.files_root) for s in (await agent.prepare(ALICE)).skills.values())
        async with anyio.create_task_group() as group:
            results = []

            async def run() -> None:
                results.append(await agent.run("use both", context=ALICE))

            group.start_soon(run)
            # sheet-tool's command ends while pdf-tool's build is still held back
            await eventually(lambda: anyio.Path(user / "sheet-ran").exists(), within=120, what="sheet's command")
            index.release()
    calls = _calls(results[0].events)
    assert [type(e).__name__ for e in calls["sheet"]] == ["ToolCalled", "ShellRan", "ToolReturned"]
    assert calls["sheet"][-1].content == "exit code: 0\nstdout:\nhxsheet 2.0"  # type: ignore[union-attr]
    for call in ("pdf", "both"):
        waited = [e for e in calls[call] if isinstance(e, EnvironmentWaited)]
        assert [(e.skill_id, e.state) for e in waited] == [(PDF_ID, "ready")], call
    assert calls["pdf"][-1].content == "exit code: 0\nstdout:\nhxpdf 1.2"  # type: ignore[union-attr]
    assert calls["both"][-1].content == "exit code: 0\nstdout:\nhxpdf 1.2\nhxsheet 2.0"  # type: ignore[union-attr]
    assert len([run for run in uv_runs(recorded) if "hxpdf>=1" in run]) == 1  # one build served both waits


async def test_a_command_that_may_not_wait_is_refused_with_when_to_try_again(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    def sheet(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        command = "python -m scripts.show"
        return Message.assistant(
            "", [ToolCall(id="sheet", name=SHELL_TOOL, arguments={"command": command, "skill": SHEET_ID})]
        )

    model = ScriptedModel([sheet, "later", sheet, "done"])
    async with _agent(request, "local-shell", tmp_path, model, wait=False) as (agent, _, _, index):
        index.hold("hxsheet")
        first = await agent.run("use sheet", context=ALICE)
        index.release()
        await settled(agent.pipeline)
        second = await agent.run("use sheet again", context=ALICE)
    [refused] = [e for e in first.events if isinstance(e, ToolReturned)]
    assert refused.error_type == "EnvironmentNotReady"
    assert re.search(r"still being built.*not run.*Run it again in about \d+ s", refused.content), refused.content
    assert not [e for e in first.events if isinstance(e, ShellRan | EnvironmentWaited)]
    [ran] = [e for e in second.events if isinstance(e, ToolReturned)]
    assert ran.content == "exit code: 0\nstdout:\nhxsheet 2.0"

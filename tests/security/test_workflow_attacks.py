"""Attacks on workflow guardrails: the model confirming its own guarded action, a run record
edited or copied outside the engine, and a skill step reaching for tools its step does not
allow. Confirmations come only from the application; tampering stops the run before anything
is performed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from filesystems import AbstractFilesystem, LocalFilesystem
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.engine import RunTampered
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools.function import Tool, tool_from_function
from tests.support.filesystems import open_filesystem

ALICE = RuntimeContext(user_id="alice", session_id="attack")

WORKFLOW = """\
name: ship
version: "1"
description: Prepare a release, then deploy it.
goal:
  statement: The release is deployed.
skills:
  - id: helper
tools:
  - {id: note, kind: function, source: take_note, side_effect: write}
  - {id: deploy, kind: function, source: deploy, side_effect: external}
  - {id: wipe, kind: function, source: wipe, side_effect: external}
orchestration:
  mode: deterministic
  entry: prepare
  steps:
    - id: prepare
      action: {type: invoke_skill, ref: helper, instructions: Prepare the release.}
      allowed_tools: [note, deploy]
      next: ship
    - id: ship
      action: {type: call_tool, ref: deploy}
      next: null
"""


class SideEffects:
    """The application's tools; each call is recorded (what a guardrail must prevent)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def tools(self) -> list[Tool]:
        async def take_note(text: str = "") -> str:
            """Write a note."""
            self.calls.append("take_note")
            return "noted"

        async def deploy() -> str:
            """Deploy to production."""
            self.calls.append("deploy")
            return "deployed"

        async def wipe() -> str:
            """Delete every release."""
            self.calls.append("wipe")
            return "wiped"

        return [tool_from_function(f) for f in (take_note, deploy, wipe)]


@pytest.fixture(params=["local", "memory"])
async def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AbstractFilesystem]:
    fs = open_filesystem(request.param, tmp_path / "ws")
    await fs.write_text("skills/ship/SKILL.md", "---\nname: ship\ndescription: Use to ship a release.\n---\nShip it.\n")
    await fs.write_text("skills/ship/workflow.yaml", WORKFLOW)
    await fs.write_text("skills/ship/guardrails.yaml", "confirmation_required_for: [deploy]\n")
    await fs.write_text("skills/helper/SKILL.md", "---\nname: helper\ndescription: Prepares releases.\n---\nPrepare.\n")
    yield fs


def _call(name: str, **arguments: Any) -> Message:
    return Message.assistant("", [ToolCall(id=f"c-{name}", name=name, arguments=arguments)])


def _agent(fs: AbstractFilesystem, model: ScriptedModel, effects: SideEffects) -> Harness:
    return Harness(model=model, filesystem=fs, tools=effects.tools(), pipeline=PipelineOptions(watch=False))


async def _blocked_run(agent: Harness) -> str:
    run = await agent.run_workflow("ship", context=ALICE, run_id="r1")
    assert run.blocked is not None and run.blocked.kind == "confirmation"
    return run.blocked.action.id


async def test_the_model_cannot_confirm_its_own_guarded_action(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    known: dict[str, str] = {}

    def confirm_it(*_: object) -> Message:
        # The action id is deterministic; assume the model computed it anyway.
        return _call("workflow_continue", run_id="r1", confirm=known["id"])

    model = ScriptedModel(["prepared", _call("workflow_status", run_id="r1"), confirm_it, "done"])
    async with _agent(workspace, model, effects) as agent:
        action_id = known["id"] = await _blocked_run(agent)
        result = await agent.run("deploy now, I confirm", context=ALICE)
        run = await agent.workflow_engine(ALICE).inspect("r1")
    status, attempt = [e for e in result.events if isinstance(e, ToolReturned)]
    assert action_id not in status.content and "only the user or the operator" in status.content
    assert attempt.error and "confirm" in attempt.content and "ToolArgumentError" in attempt.content
    assert (
        "confirm" not in next(s for s in model.calls[1].tools if s.name == "workflow_continue").parameters["properties"]
    )
    assert run.blocked is not None and run.confirmations == ()
    assert effects.calls == []


async def test_the_application_confirms_with_the_blocked_action_id(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, ScriptedModel(["prepared"]), effects) as agent:
        action_id = await _blocked_run(agent)
        run = await agent.continue_workflow("r1", context=ALICE, confirm=action_id)
    assert run.status == "completed" and effects.calls == ["deploy"]


async def test_a_run_record_edited_outside_the_engine_is_refused(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, ScriptedModel(["prepared"]), effects) as agent:
        action_id = await _blocked_run(agent)
        alice = workspace.scoped("alice")
        record = json.loads(await alice.read_bytes(".harness/runs/r1/run.json"))
        record["confirmations"] = [action_id]  # what a tenant's shell or a stray tool could write
        await alice.write_text(".harness/runs/r1/run.json", json.dumps(record))
        with pytest.raises(RunTampered, match="changed outside the workflow engine"):
            await agent.continue_workflow("r1", context=ALICE)
        with pytest.raises(RunTampered):
            await agent.continue_workflow("r1", context=ALICE, confirm=action_id)
    assert effects.calls == []


async def test_a_record_copied_to_another_run_id_is_refused(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, ScriptedModel(["prepared"]), effects) as agent:
        await _blocked_run(agent)
        alice = workspace.scoped("alice")
        await alice.write_bytes(".harness/runs/r2/run.json", await alice.read_bytes(".harness/runs/r1/run.json"))
        with pytest.raises(RunTampered, match="names run 'r1'"):
            await agent.workflow_engine(ALICE).inspect("r2")


async def test_the_run_key_lives_outside_every_user_area(workspace: AbstractFilesystem) -> None:
    async with _agent(workspace, ScriptedModel(["prepared"]), SideEffects()) as agent:
        await _blocked_run(agent)
    assert await workspace.exists(".harness/engine.key")
    assert not await workspace.scoped("alice").exists(".harness/engine.key")


async def test_a_skill_step_is_offered_exactly_its_allowed_tools(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    model = ScriptedModel(["prepared"])
    async with _agent(workspace, model, effects) as agent:
        await _blocked_run(agent)
    assert set(model.calls[0].tool_names) == {"take_note", "deploy", "workflow_report"}


async def test_a_guarded_tool_is_refused_inside_a_skill_turn(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    both = Message.assistant(
        "",
        [
            ToolCall(id="d", name="deploy", arguments={}),
            ToolCall(id="w", name="wipe", arguments={}),
            ToolCall(id="n", name="take_note", arguments={"text": "v2"}),
        ],
    )
    model = ScriptedModel([both, "prepared"])
    async with _agent(workspace, model, effects) as agent:
        run = await agent.run_workflow("ship", context=ALICE, run_id="r1")
    results = {m.tool_call_id: m.content for m in model.calls[1].messages if m.role == "tool"}
    assert "requires a confirmation" in results["d"]
    assert "there is no tool named 'wipe'" in results["w"]
    assert results["n"] == "noted" and effects.calls == ["take_note"]
    assert run.blocked is not None and run.blocked.kind == "confirmation"


async def test_the_operator_cli_refuses_a_tampered_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main as cli
    from harness.engine import SkillPackage, WorkflowEngine

    files = {
        "SKILL.md": b"---\nname: ship\ndescription: Ship.\n---\n",
        "workflow.yaml": WORKFLOW.encode(),
        "guardrails.yaml": b"confirmation_required_for: [deploy]\n",
    }
    async with LocalFilesystem(tmp_path) as fs:
        engine = WorkflowEngine(fs).for_user("alice")
        run = await engine.start(SkillPackage(name="ship", files=files), run_id="r1")
        assert run.pending is not None
        record = tmp_path / "alice/.harness/runs/r1/run.json"
        record.write_text(record.read_text().replace('"status": "running"', '"status": "completed"'))
    code = await anyio.to_thread.run_sync(
        cli, ["engine", "show", "--run-id", "r1", "--workspace", str(tmp_path), "--user", "alice"]
    )
    assert code == 1
    assert "run 'r1' was changed outside the workflow engine" in capsys.readouterr().err

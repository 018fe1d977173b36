"""Attacks on a skill group's contracts by a hostile model: writing state keys or artifacts its
step does not declare, replacing a final artifact, forcing an illegal domain transition, and
reaching past its step turn. Each is refused with a clear error and leaves the run as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, RuntimeContext
from harness.engine import OutcomeRefused, Run
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from tests.agent.stage_model import stage_model
from tests.engine.newsletter import install
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="attack")


def _calls(*calls: tuple[str, dict[str, Any]]) -> Message:
    return Message.assistant(
        "", [ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)]
    )


def _start(run_id: str = "n1") -> tuple[str, dict[str, Any]]:
    return ("workflow_start", {"skill": "newsletter", "run_id": run_id, "inputs": {"request": "2.0"}})


def _continue(**fields: Any) -> tuple[str, dict[str, Any]]:
    return ("workflow_continue", {"run_id": "n1", **fields})


async def _attack(workspace: Path, *calls: tuple[str, dict[str, Any]]) -> tuple[list[ToolReturned], Run]:
    install(workspace / "skills")
    model = ScriptedModel([_calls(*calls), "done"])
    async with Harness(model=model, workspace=workspace) as agent:
        result = await agent.run("go", context=ALICE)
        run = await agent.workflow_engine(ALICE).inspect("n1")
    return [e for e in result.events if isinstance(e, ToolReturned)], run


async def test_the_model_cannot_write_state_its_step_does_not_declare(tmp_path: Path) -> None:
    results, run = await _attack(
        tmp_path,
        _start(),
        _continue(status="succeeded", state={"brief": "b", "approved": True}),
        _continue(status="succeeded", artifacts={"issue": "published/fake.md"}),
    )
    assert results[1].error and "OutcomeRefused" in results[1].content and "'approved'" in results[1].content
    assert results[2].error and "may write only brief, audience" in results[2].content
    assert run.current_step == "intake" and run.revision == 1
    assert "approved" not in run.vars and "issue" not in run.artifacts


async def test_the_model_cannot_force_an_illegal_transition(tmp_path: Path) -> None:
    results, run = await _attack(
        tmp_path,
        _start(),
        _continue(status="succeeded", state={"brief": "b"}, to_state="published"),
        _continue(status="succeeded", state={"brief": "b"}, to_state="nowhere"),
    )
    assert "illegal transition 'received' -> 'published'" in results[1].content
    assert "legal from 'received': briefed" in results[1].content
    assert results[2].error and "illegal transition" in results[2].content
    assert (run.domain_state, run.current_step, run.revision) == ("received", "intake", 1)


async def test_a_skill_turn_cannot_write_undeclared_keys_or_move_illegally(tmp_path: Path) -> None:
    install(tmp_path / "skills")
    hostile = _calls(
        ("workflow_report", {"status": "succeeded", "state": {"brief": "b", "approved": True}}),
        ("workflow_report", {"status": "succeeded", "state": {"brief": "b"}, "to_state": "approved"}),
        ("workflow_continue", {"run_id": "n1", "status": "succeeded", "state": {"approved": True}}),
    )
    model = ScriptedModel([hostile, "done"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
    results = {m.tool_call_id: m.content for m in model.calls[1].messages if m.role == "tool"}
    assert "OutcomeRefused" in results["c0"] and "'approved'" in results["c0"]
    assert "illegal transition 'received' -> 'approved'" in results["c1"]
    assert "there is no tool named 'workflow_continue'" in results["c2"]
    assert "approved" not in run.vars and run.domain_state == "received"


FINAL = """\
goal: {statement: Release once}
artifacts: [{name: release, final: true}]
skills: [{id: releaser}]
orchestration:
  mode: deterministic
  entry: cut
  steps:
    - {id: cut, action: {type: invoke_skill, ref: releaser}, writes: [release], next: amend}
    - {id: amend, action: {type: invoke_skill, ref: releaser}, writes: [release]}
"""


async def test_a_final_artifact_cannot_be_replaced(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "release", files={"workflow.yaml": FINAL})
    make_skill(tmp_path / "skills", "releaser", body="Cut the release.\n")
    cut = _calls(("workflow_report", {"status": "succeeded", "artifacts": {"release": "v1.tar"}}))
    amend = _calls(("workflow_report", {"status": "succeeded", "artifacts": {"release": "v1-evil.tar"}}))
    model = ScriptedModel([cut, "cut", amend, "amended"] + ["give up"] * 6)
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("release", context=ALICE, run_id="r1")
        engine = agent.workflow_engine(ALICE)
        stored = await engine.write_artifact("r1", "v1.tar", b"release")
        await engine.resume("r1")
        with pytest.raises(OutcomeRefused, match="'v1.tar' is final and already written"):
            await engine.write_artifact("r1", "v1.tar", b"evil")
    refusal = [m.content for m in model.calls[3].messages if m.role == "tool"][-1]
    assert "artifact 'release' is final and already written ('v1.tar')" in refusal
    assert run.artifacts["release"] == "v1.tar" and stored == "artifacts/v1.tar"
    assert (tmp_path / "alice/.harness/runs/r1/artifacts/v1.tar").read_bytes() == b"release"


async def test_workflow_report_cannot_confirm_and_is_bound_to_its_step(tmp_path: Path) -> None:
    install(tmp_path / "skills")
    model = stage_model()
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
    spec = next(s for s in model.calls[0].tools if s.name == "workflow_report")
    assert set(spec.parameters["properties"]) == {
        "status",
        "summary",
        "state",
        "artifacts",
        "to_state",
        "schema_version",
    }
    assert run.blocked is not None and run.blocked.kind == "confirmation" and run.confirmations == ()
    assert json.dumps(spec.parameters).count("confirm") == 0

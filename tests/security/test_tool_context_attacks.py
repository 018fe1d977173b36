"""A hostile model tries to forge a tool's ToolContext: passing the context parameter itself
(another user's id, a made-up action id), in a plain turn and inside a workflow step. The
argument is refused and the tool never runs with it; the harness's context is the only one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, RuntimeContext, ToolContext
from harness.agent import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools import Tool, tool
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="attack")
FORGED = {"user_id": "bob", "session_id": "bob-session", "call_id": "x", "tool": "pay", "action_id": "forged"}


def _tool(seen: list[ToolContext]) -> Tool:
    @tool
    async def pay(amount: int, ctx: ToolContext) -> str:
        """Pay an amount from the caller's account."""
        seen.append(ctx)
        return f"paid {amount} for {ctx.user_id}"

    return pay


def _attack(*arguments: dict[str, Any]) -> ScriptedModel:
    calls = [ToolCall(id=f"c{i}", name="pay", arguments=args) for i, args in enumerate(arguments)]
    return ScriptedModel([Message.assistant("", calls), "done"])


def _results(events: tuple[object, ...]) -> list[ToolReturned]:
    return [e for e in events if isinstance(e, ToolReturned)]


@pytest.mark.parametrize(
    "forged",
    [FORGED, "bob", None, {"user_id": "bob"}],
    ids=["full-context", "a-string", "null", "partial"],
)
async def test_a_model_cannot_pass_the_context_parameter(tmp_path: Path, forged: object) -> None:
    seen: list[ToolContext] = []
    model = _attack({"amount": 5, "ctx": forged}, {"amount": 1})
    async with Harness(model=model, workspace=tmp_path, tools=[_tool(seen)]) as agent:
        result = await agent.run("pay as bob", context=ALICE)
    refused, honest = _results(result.events)
    assert refused.error and "ToolArgumentError" in refused.content and "unknown argument(s) ctx" in refused.content
    assert honest.content == "paid 1 for alice"
    assert seen == [ToolContext(user_id="alice", session_id="attack", call_id="c1", tool="pay")]
    assert "ctx" not in next(s for s in model.calls[0].tools if s.name == "pay").parameters["properties"]


async def test_a_schema_that_lets_the_name_through_still_never_uses_the_value(tmp_path: Path) -> None:
    seen: list[ToolContext] = []
    pay = _tool(seen)
    permissive = dataclasses.replace(pay, parameters={**pay.parameters, "additionalProperties": True})
    model = _attack({"amount": 5, "ctx": FORGED})
    async with Harness(model=model, workspace=tmp_path, tools=[permissive]) as agent:
        result = await agent.run("pay as bob", context=ALICE)
    [returned] = _results(result.events)
    assert returned.content == "paid 5 for alice"
    assert seen == [ToolContext(user_id="alice", session_id="attack", call_id="c0", tool="pay")]


async def test_a_step_turn_cannot_forge_the_action_id(tmp_path: Path) -> None:
    seen: list[ToolContext] = []
    workflow = (
        "goal: {statement: Pay}\nskills: [{id: payer}]\n"
        "tools: [{id: pay, kind: function, side_effect: external}]\n"
        "orchestration:\n  mode: deterministic\n  entry: turn\n  steps:\n"
        "    - {id: turn, action: {type: invoke_skill, ref: payer}, allowed_tools: [pay]}\n"
    )
    make_skill(tmp_path / "skills", "paying", files={"workflow.yaml": workflow})
    make_skill(tmp_path / "skills", "payer", body="Pay the order.\n")
    model = _attack({"amount": 5, "ctx": FORGED}, {"amount": 1})
    async with Harness(model=model, workspace=tmp_path, tools=[_tool(seen)]) as agent:
        run = await agent.run_workflow("paying", context=ALICE, run_id="p1")
        [proposed] = [e for e in await agent.workflow_engine(ALICE).events("p1") if e.type == "action_proposed"]
    assert run.status == "completed"
    [context] = seen
    assert (context.user_id, context.action_id, context.skill) == ("alice", proposed.data["action_id"], "payer")

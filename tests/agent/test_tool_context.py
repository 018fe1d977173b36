"""The ToolContext the agent hands a tool: who calls, in which session, which call, and the
workflow action being performed (the same id as ``current_action()``), through the approval
gate and a workflow step's wrappers, and never another user's."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import anyio

from harness import Harness, RuntimeContext, ToolContext
from harness.agent import AllowAll, ControlOptions, PatternPolicy, ToolReturned
from harness.engine import current_action
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from harness.tools import tool
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="s1")
BOB = RuntimeContext(user_id="bob", session_id="s2")

DELIVERY = (
    "goal: {statement: Deliver}\nskills: [{id: courier}]\n"
    "tools: [{id: deliver, kind: function, side_effect: external}]\n"
    "orchestration:\n  mode: deterministic\n  entry: call\n  steps:\n"
    "    - {id: call, action: {type: call_tool, ref: deliver}, next: turn}\n"
    "    - {id: turn, action: {type: invoke_skill, ref: courier}, allowed_tools: [deliver]}\n"
)


def _call(name: str, call_id: str, **arguments: Any) -> Message:
    return Message.assistant("", [ToolCall(id=call_id, name=name, arguments=arguments)])


def _delivery(workspace: pathlib.Path, workflow: str = DELIVERY) -> None:
    make_skill(workspace / "skills", "delivery", files={"workflow.yaml": workflow})
    make_skill(workspace / "skills", "courier", body="Deliver the order.\n")


async def _proposed(agent: Harness, run_id: str) -> list[str]:
    events = await agent.workflow_engine(ALICE).events(run_id)
    return [e.data["action_id"] for e in events if e.type == "action_proposed"]


async def test_a_tool_in_a_normal_turn_sees_its_user_session_and_call(tmp_path: pathlib.Path) -> None:
    seen: list[ToolContext] = []

    @tool
    async def whoami(context: ToolContext) -> str:
        """Say who is calling."""
        seen.append(context)
        return context.user_id

    model = ScriptedModel([_call("whoami", "w1"), "you are alice", _call("whoami", "w2"), "noted"])
    make_skill(tmp_path / "skills", "notes", body="Take a note.\n")
    async with Harness(model=model, workspace=tmp_path, tools=[whoami]) as agent:
        await agent.run("who am I?", context=ALICE)
        await agent.run("/skill:notes", context=ALICE)
    assert seen == [
        ToolContext(user_id="alice", session_id="s1", call_id="w1", tool="whoami"),
        ToolContext(user_id="alice", session_id="s1", call_id="w2", tool="whoami", skill="notes"),
    ]
    assert "context" not in next(s for s in model.calls[0].tools if s.name == "whoami").parameters["properties"]


async def test_a_workflow_tool_sees_the_action_id_of_current_action(tmp_path: pathlib.Path) -> None:
    seen: list[tuple[ToolContext, str | None]] = []

    @tool(requires_approval=True)  # through the approval gate, and the step turn's wrappers
    async def deliver(context: ToolContext) -> str:
        """Deliver the order (once per workflow action)."""
        action = current_action()
        seen.append((context, action.action_id if action is not None else None))
        return "delivered"

    _delivery(tmp_path)
    model = ScriptedModel([_call("deliver", "d1"), "done"])
    async with Harness(
        model=model, workspace=tmp_path, tools=[deliver], control=ControlOptions(approval=AllowAll())
    ) as agent:
        run = await agent.run_workflow("delivery", context=ALICE, run_id="r1")
        ids = await _proposed(agent, "r1")
    assert run.status == "completed"
    [(by_action, first), (in_turn, second)] = seen
    assert [by_action.action_id, in_turn.action_id] == [first, second] == ids
    assert (by_action.call_id, by_action.skill, by_action.tool) == (ids[0], "delivery", "deliver")
    assert (in_turn.call_id, in_turn.skill, in_turn.user_id, in_turn.session_id) == ("d1", "courier", "alice", "s1")


async def test_an_interrupted_action_keeps_its_id_and_a_retry_gets_a_new_one(tmp_path: pathlib.Path) -> None:
    seen: list[str | None] = []
    started = anyio.Event()

    @tool
    async def deliver(context: ToolContext) -> str:
        """Deliver the order: hangs the first time, fails the second, succeeds the third."""
        seen.append(context.action_id)
        if len(seen) == 1:
            started.set()
            await anyio.sleep_forever()
        if len(seen) == 2:
            raise RuntimeError("the courier is busy")
        return "delivered"

    workflow = (
        "goal: {statement: Deliver}\ntools: [{id: deliver, kind: function, side_effect: external}]\n"
        "orchestration:\n  mode: deterministic\n  entry: call\n  steps:\n"
        "    - {id: call, action: {type: call_tool, ref: deliver}}\n"
    )
    _delivery(tmp_path, workflow)
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, tools=[deliver]) as agent:
        async with anyio.create_task_group() as group:  # the process stops in the middle of the call
            group.start_soon(lambda: agent.run_workflow("delivery", context=ALICE, run_id="r1"))
            await started.wait()
            group.cancel_scope.cancel()
        run = await agent.continue_workflow("r1", context=ALICE)
        ids = await _proposed(agent, "r1")
    assert run.status == "completed"
    assert seen[0] == seen[1] == ids[0]  # performed again: the same idempotency key
    assert seen[2] == ids[1] != ids[0]  # a new attempt after a failure: a new one


async def test_a_call_waiting_for_approval_runs_with_its_own_context(tmp_path: pathlib.Path) -> None:
    seen: list[ToolContext] = []

    @tool(requires_approval=True)
    async def refund(order: str, context: ToolContext) -> str:
        """Refund an order."""
        seen.append(context)
        return f"refunded {order}"

    model = ScriptedModel([_call("refund", "r1", order="A-1"), "refunded"])
    policy = PatternPolicy([], default="ask")
    async with Harness(
        model=model, workspace=tmp_path, tools=[refund], control=ControlOptions(approval=policy)
    ) as agent:
        paused = await agent.run("refund A-1", context=ALICE)
        assert seen == []
        await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
        await agent.resume(context=ALICE)
    assert seen == [ToolContext(user_id="alice", session_id="s1", call_id="r1", tool="refund")]


async def test_concurrent_turns_each_see_their_own_context(tmp_path: pathlib.Path) -> None:
    inside: list[str] = []
    both_inside = anyio.Event()
    seen: dict[str, ToolContext] = {}

    @tool
    async def whoami(context: ToolContext) -> str:
        """Say who is calling."""
        inside.append(context.user_id)
        if len(inside) == 2:
            both_inside.set()
        await both_inside.wait()  # both calls are in flight before either reads its context
        seen[context.call_id] = context
        return context.user_id

    def ask(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Message:
        return _call("whoami", f"call-{messages[-1].content}")

    model = ScriptedModel([ask, ask, "done", "done"])
    async with Harness(model=model, workspace=tmp_path, tools=[whoami]) as agent:
        results: dict[str, Any] = {}

        async def turn(context: RuntimeContext) -> None:
            results[context.user_id] = await agent.run(context.user_id, context=context)

        async with anyio.create_task_group() as group:
            group.start_soon(turn, ALICE)
            group.start_soon(turn, BOB)
    assert seen == {
        "call-alice": ToolContext(user_id="alice", session_id="s1", call_id="call-alice", tool="whoami"),
        "call-bob": ToolContext(user_id="bob", session_id="s2", call_id="call-bob", tool="whoami"),
    }
    for user, result in results.items():
        [returned] = [e for e in result.events if isinstance(e, ToolReturned)]
        assert returned.content == user

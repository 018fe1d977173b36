"""Shared tables are fair: one tenant's paused runs never evict another's pending approvals,
and one run's steering and follow-up queues stop at their bound with a clear error."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from harness import RuntimeContext
from harness.agent import Harness, PatternPolicy, QueueFull, QueueLimits, TooManyPausedRuns
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools import tool

ALICE = RuntimeContext(user_id="alice", session_id="work")


def _pausing_model(runs: int) -> ScriptedModel:
    """Each run asks for one shell command, which the policy leaves to the app: the run pauses."""
    call = ToolCall(id="c1", name="execute_shell_command", arguments={"command": "echo hi"})
    return ScriptedModel([Message.assistant("", [call])] * runs)


def _as(user: str, session: int | str) -> RuntimeContext:
    return RuntimeContext(user_id=user, session_id=f"s{session}")


async def test_a_tenant_over_the_paused_bound_is_refused_and_nobody_else_loses_an_approval(tmp_path: Path) -> None:
    per_user = QueueLimits().paused_per_user
    policy = PatternPolicy([], default="ask")
    async with Harness(model=_pausing_model(per_user + 3), workspace=tmp_path, approval=policy) as agent:
        alices = await agent.run("deploy", context=ALICE)
        for session in range(per_user):
            paused = await agent.run("flood", context=_as("mallory", session))
            assert len(paused.approvals) == 1
        with pytest.raises(TooManyPausedRuns, match="'mallory' already keeps"):
            await agent.run("flood", context=_as("mallory", "over"))
        assert [w.approval_id for w in agent.pending_approvals(ALICE)] == [alices.approvals[0].approval_id]
        assert agent.pending_approvals(_as("mallory", "over")) == []
        assert len(agent.pending_approvals(_as("mallory", 0))) == 1  # her own earlier pauses are kept
        bobs = await agent.run("deploy", context=_as("bob", 1))  # others can still pause
        assert len(bobs.approvals) == 1


async def test_at_the_global_bound_the_largest_holder_loses_its_oldest_paused_run(tmp_path: Path) -> None:
    limits = QueueLimits(paused=4, paused_per_user=2)
    policy = PatternPolicy([], default="ask")
    async with Harness(model=_pausing_model(5), workspace=tmp_path, approval=policy, queue_limits=limits) as agent:
        await agent.run("deploy", context=ALICE)
        await agent.run("flood", context=_as("mallory", 0))
        await agent.run("flood", context=_as("mallory", 1))
        await agent.run("deploy", context=_as("bob", 0))
        await agent.run("deploy", context=_as("carol", 0))  # the fifth: one must go
        assert len(agent.pending_approvals(ALICE)) == 1
        assert len(agent.pending_approvals(_as("bob", 0))) == 1
        assert len(agent.pending_approvals(_as("carol", 0))) == 1
        assert agent.pending_approvals(_as("mallory", 0)) == []
        assert len(agent.pending_approvals(_as("mallory", 1))) == 1


@pytest.mark.parametrize("method", ["steer", "follow_up"])
async def test_a_runs_queue_stops_at_its_bound(tmp_path: Path, method: str) -> None:
    bound = QueueLimits().queued
    entered, release = anyio.Event(), anyio.Event()
    refused: list[QueueFull] = []

    @tool
    async def hold() -> str:
        """Wait until the test lets the run go on."""
        entered.set()
        await release.wait()
        return "held"

    # One reply per turn: the held one, then the answer and one per follow-up the run takes.
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="h", name="hold", arguments={})]), *["done"] * (bound + 1)]
    )
    async with Harness(model=model, workspace=tmp_path, tools=[hold]) as agent:

        async def flood() -> None:
            await entered.wait()
            queue = getattr(agent, method)
            try:
                for index in range(bound + 1):
                    await queue(f"message {index}", context=ALICE)
            except QueueFull as exc:
                refused.append(exc)
            release.set()

        async with anyio.create_task_group() as group:
            group.start_soon(partial(agent.run, "go", context=ALICE))
            group.start_soon(flood)
    assert len(refused) == 1 and f"{bound} " in str(refused[0]) and "'alice'" in str(refused[0])

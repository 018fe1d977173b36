"""Shared tables are fair: one tenant's paused runs never evict another's pending approvals, one
run's steering and follow-up queues stop at their bound with a clear error, and one user's
search query can neither grow without bound nor hold the index shared by every user."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

import anyio
import pytest

from harness import RuntimeContext
from harness.agent import Harness, PatternPolicy, QueueFull, QueueLimits, TooManyPausedRuns
from harness.agent.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from harness.pipeline.catalog import SEARCH_TOOL
from harness.pipeline.search import SkillIndex
from harness.skills.skill import Layer, load_skill
from harness.tools import tool
from repositories import MemoryRepository
from tests.support.skills import make_bundle

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


def _market(count: int) -> MemoryRepository:
    bundles = [make_bundle(f"topic-{i:03d}", description=f"Use for topic {i:03d} work.") for i in range(count)]
    return MemoryRepository(bundles, name="big", writable=False)


def _search(query: str) -> Message:
    return Message.assistant("", [ToolCall(id="s", name=SEARCH_TOOL, arguments={"query": query})])


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("topic " * 2000, f"over the {MAX_QUERY_CHARS}-character limit"),
        (" ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 1)), f"over the limit of {MAX_QUERY_TERMS}"),
    ],
    ids=["long", "many-words"],
)
async def test_an_oversized_search_query_is_refused_with_a_clear_error(
    tmp_path: Path, query: str, problem: str
) -> None:
    model = ScriptedModel([_search(query), _search("topic 007"), "done"])
    async with Harness(model=model, workspace=tmp_path, repositories=[_market(60)], catalog_budget=1_500) as agent:
        result = await agent.run("find a skill", context=ALICE)
    refused, answered = [e for e in result.events if isinstance(e, ToolReturned)]
    assert refused.error and problem in refused.content
    assert not answered.error and "topic-007" in answered.content


def _indexed(count: int) -> SkillIndex:
    skills = []
    for i in range(count):
        text = f"---\nname: topic-{i:03d}\ndescription: Use for topic {i:03d} work.\n---\nBody\n"
        skill, _ = load_skill(text.encode(), folder=f"topic-{i:03d}", location="/m", source="m", layer=Layer.MARKET)
        assert skill is not None
        skills.append(skill)
    return SkillIndex(skills)


def test_a_search_holds_no_lock_shared_with_other_searches() -> None:
    index = _indexed(20)
    allowed = {f"topic-{i:03d}_m" for i in range(20)}
    assert index.search("topic 003", 1, allowed) == ["topic-003_m"]  # the index is built
    found: list[list[str]] = []
    # Another user's search in progress holds whatever it holds for as long as it runs.
    with index._lock:
        other = threading.Thread(target=lambda: found.append(index.search("topic 011", 1, allowed)))
        other.start()
        other.join(timeout=30)  # a bound on a deadlock, not a speed check
        stalled = other.is_alive()
    other.join()
    assert not stalled and found == [["topic-011_m"]]

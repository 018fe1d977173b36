"""Shared tables are fair: one tenant's paused runs never evict another's pending approvals, one
run's steering and follow-up queues stop at their bound with a clear error, one user's search
query can neither grow without bound nor hold the index shared by every user, and one MCP
token holder opening sessions without end recycles only their own (``harness mcp serve --http``
as a real process, the real SDK client, requests to 127.0.0.1 only)."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

import anyio
import httpx2
import pytest

from harness import RuntimeContext
from harness.agent import (
    ControlOptions,
    Harness,
    PatternPolicy,
    PipelineOptions,
    QueueFull,
    QueueLimits,
    TooManyPausedRuns,
)
from harness.events import ToolReturned
from harness.mcp import SessionLimits
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from harness.pipeline.catalog import SEARCH_TOOL
from harness.pipeline.search import SkillIndex
from harness.skills.skill import Layer, load_skill
from harness.tools import tool
from repositories import MemoryRepository
from tests.support.mcp import HttpServer, call, http_client
from tests.support.skills import make_bundle, make_skill

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
    async with Harness(
        model=_pausing_model(per_user + 3), workspace=tmp_path, control=ControlOptions(approval=policy)
    ) as agent:
        alices = await agent.run("deploy", context=ALICE)
        for session in range(per_user):
            paused = await agent.run("flood", context=_as("mallory", session))
            assert len(paused.approvals) == 1
        with pytest.raises(TooManyPausedRuns, match="'mallory' already keeps"):
            await agent.run("flood", context=_as("mallory", "over"))
        assert [w.approval_id for w in await agent.pending_approvals(ALICE)] == [alices.approvals[0].approval_id]
        assert await agent.pending_approvals(_as("mallory", "over")) == []
        assert len(await agent.pending_approvals(_as("mallory", 0))) == 1  # her own earlier pauses are kept
        bobs = await agent.run("deploy", context=_as("bob", 1))  # others can still pause
        assert len(bobs.approvals) == 1


async def test_at_the_global_bound_the_largest_holder_loses_its_oldest_paused_run(tmp_path: Path) -> None:
    limits = QueueLimits(paused=4, paused_per_user=2)
    policy = PatternPolicy([], default="ask")
    async with Harness(
        model=_pausing_model(5), workspace=tmp_path, control=ControlOptions(approval=policy, queue_limits=limits)
    ) as agent:
        await agent.run("deploy", context=ALICE)
        await agent.run("flood", context=_as("mallory", 0))
        await agent.run("flood", context=_as("mallory", 1))
        await agent.run("deploy", context=_as("bob", 0))
        await agent.run("deploy", context=_as("carol", 0))  # the fifth: one must go
        assert len(await agent.pending_approvals(ALICE)) == 1
        assert len(await agent.pending_approvals(_as("bob", 0))) == 1
        assert len(await agent.pending_approvals(_as("carol", 0))) == 1
        assert await agent.pending_approvals(_as("mallory", 0)) == []
        assert len(await agent.pending_approvals(_as("mallory", 1))) == 1


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
    async with Harness(
        model=model, workspace=tmp_path, repositories=[_market(60)], pipeline=PipelineOptions(catalog_budget=1_500)
    ) as agent:
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


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}},
}
MCP_TOKENS = {"alice": "alice-token-0001", "bob": "bob-token-0002", "mallory": "mallory-token-0003"}


def _headers(user: str, session: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {MCP_TOKENS[user]}", "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    return headers


async def _open(http: httpx2.AsyncClient, url: str, user: str) -> str | None:
    """A new session of ``user`` (its id), or ``None`` when the server refuses one."""
    response = await http.post(url, json=INITIALIZE, headers=_headers(user))
    if response.status_code == 503:
        return None
    assert response.status_code == 200, response.text
    session: str = response.headers["mcp-session-id"]
    await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=_headers(user, session)
    )
    return session


async def _alive(http: httpx2.AsyncClient, url: str, user: str, session: str) -> bool:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await http.post(url, json=note, headers=_headers(user, session))
    assert response.status_code in (202, 404), response.text
    return response.status_code == 202


def _mcp_workspace(root: Path) -> tuple[Path, Path]:
    ws = root / "ws"
    make_skill(ws / "alice" / "skills", "alpha", description="Alice's skill.")
    make_skill(ws / "bob" / "skills", "bravo", description="Bob's skill.")
    tokens = root / "tokens.yaml"
    tokens.write_text("".join(f"{user}: {token}\n" for user, token in MCP_TOKENS.items()))
    return ws, tokens


async def test_one_token_holder_flooding_sessions_only_recycles_their_own(tmp_path: Path) -> None:
    per_user = SessionLimits().per_principal
    ws, tokens = _mcp_workspace(tmp_path)
    async with HttpServer(ws, tokens) as server, http_client(server.url, MCP_TOKENS["alice"]) as alice:
        async with httpx2.AsyncClient(timeout=30) as http:
            bobs = await _open(http, server.url, "bob")
            floods = [await _open(http, server.url, "mallory") for _ in range(per_user * 3)]
            assert None not in floods  # her own idle sessions make room for her next
            alive = [s for s in floods if s is not None and await _alive(http, server.url, "mallory", s)]
            assert len(alive) == per_user and floods[-1] in alive and floods[0] not in alive
            assert bobs is not None and await _alive(http, server.url, "bob", bobs)
        listing = await call(alice, "skills/list")
    assert [s["frontmatter"]["name"] for s in listing["skills"]] == ["alpha"]


async def test_at_the_global_bound_the_largest_holder_makes_room_for_others(tmp_path: Path) -> None:
    ws, tokens = _mcp_workspace(tmp_path)
    limits = ("--max-sessions-per-user", "4", "--max-sessions", "6")
    async with HttpServer(ws, tokens, *limits) as server, httpx2.AsyncClient(timeout=30) as http:
        alices = [await _open(http, server.url, "alice") for _ in range(2)]
        floods = [await _open(http, server.url, "mallory") for _ in range(12)]
        bobs = await _open(http, server.url, "bob")  # the table is full: mallory pays for it
        assert bobs is not None and await _alive(http, server.url, "bob", bobs)
        assert None not in alices
        assert [await _alive(http, server.url, "alice", s) for s in alices if s is not None] == [True, True]
        alive = [s for s in floods if s is not None and await _alive(http, server.url, "mallory", s)]
        assert len(alive) == 3 and floods[-1] in alive
        async with http_client(server.url, MCP_TOKENS["bob"]) as bob:
            listing = await call(bob, "skills/list")
    assert [s["frontmatter"]["name"] for s in listing["skills"]] == ["bravo"]

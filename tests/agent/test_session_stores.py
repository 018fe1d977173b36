"""Every conversation store keeps the same promises: ordered appends, bounded history, retention,
exact keys, deleting a user in one call, paused runs bounded per user, an idempotency key
claimed once and answered with its turn. Run over memory, a SQLite file and real MariaDB tables."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.agent.sessions import (
    IdempotencyKeyReused,
    InMemorySessionStore,
    SessionStore,
    SQLiteSessionStore,
    open_session_store,
)
from harness.agent.sessions.base import Claim, Completion
from harness.models import Message, ToolCall
from tests.support.sessions import session_url

ENGINES = ["memory", "sqlite", "mysql"]


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


Opener = Callable[..., SessionStore]


@pytest.fixture(params=ENGINES)
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens stores of one engine; stores opened twice share their data (except in memory)."""
    engine = request.param
    if engine == "memory":
        shared = InMemorySessionStore()

        def memory(**options: Any) -> SessionStore:
            store = InMemorySessionStore(**options)
            store._sessions, store._runs, store._requests = shared._sessions, shared._runs, shared._requests
            return store

        yield memory
        return
    dsn = request.getfixturevalue("mysql_dsn") if engine == "mysql" else None
    opened: list[SessionStore] = []
    async with session_url(engine, tmp_path, dsn) as url:

        def sql(**options: Any) -> SessionStore:
            clock = options.pop("now", None)
            store = open_session_store(url, **options)
            if clock is not None:
                store._now = clock
            opened.append(store)
            return store

        yield sql
        for store in opened:
            await store.aclose()


def _turn(n: int) -> list[Message]:
    call = ToolCall(id=f"c{n}", name="look", arguments={"n": n})
    return [
        Message.user(f"u{n}"),
        Message.assistant("", [call]),
        Message.tool_result(call, f"r{n} ✓"),
        Message.assistant(f"a{n}"),
    ]


async def test_a_turn_is_appended_whole_and_read_back_in_order(opener: Opener) -> None:
    store = opener()
    await store.append("alice", "s1", _turn(1), loaded={"pdf_workspace"})
    await store.append("alice", "s1", _turn(2))
    session = await store.get("alice", "s1")
    assert session.messages == [*_turn(1), *_turn(2)]
    assert session.loaded == {"pdf_workspace"}
    assert (await store.get("alice", "other")).messages == []


async def test_history_keeps_the_newest_messages_and_never_starts_with_a_tool_result(opener: Opener) -> None:
    store = opener(max_messages=6)
    for n in range(3):
        await store.append("alice", "s1", _turn(n))
    messages = (await store.get("alice", "s1")).messages
    # the newest six are r1, a1, u2..a2: the orphaned tool result r1 is left out
    assert messages == [Message.assistant("a1"), *_turn(2)]


async def test_loaded_skills_add_up_across_turns(opener: Opener) -> None:
    store = opener()
    await store.append("alice", "s1", _turn(1), loaded={"a_workspace"})
    await store.append("alice", "s1", _turn(2), loaded={"b_workspace"})
    assert (await store.get("alice", "s1")).loaded == {"a_workspace", "b_workspace"}


async def test_concurrent_appends_on_two_store_instances_lose_and_repeat_nothing(opener: Opener) -> None:
    first, second = opener(max_messages=1000), opener(max_messages=1000)

    async def turns(store: SessionStore, who: str) -> None:
        for n in range(15):
            await store.append("alice", "s1", [Message.user(f"{who}{n}"), Message.assistant(f"{who}{n}!")])

    async with anyio.create_task_group() as group:
        group.start_soon(turns, first, "a")
        group.start_soon(turns, second, "b")
    messages = (await first.get("alice", "s1")).messages
    assert len(messages) == 60
    pairs = [(messages[i].content, messages[i + 1].content) for i in range(0, 60, 2)]
    assert all(answer == f"{asked}!" for asked, answer in pairs)  # each turn's messages stay together
    for who in "ab":  # each replica's turns in its own order
        assert [asked for asked, _ in pairs if asked.startswith(who)] == [f"{who}{n}" for n in range(15)]


async def test_keys_are_exact_and_users_never_share_a_conversation(opener: Opener) -> None:
    store = opener()
    await store.append("alice", "s1", _turn(1))
    for user, session in (("bob", "s1"), ("alice", "S1"), ("alice", "s1/x")):
        assert (await store.get(user, session)).messages == []
    for session in ("s1 ", "s\x001", "s1\n", "", "x" * 300):
        with pytest.raises(ValueError):
            await store.get("alice", session)
    with pytest.raises(ValueError):
        await store.get("../alice", "s1")


async def test_deleting_a_user_forgets_every_conversation_and_paused_run(opener: Opener) -> None:
    store = opener()
    for session in ("s1", "s2"):
        await store.append("alice", session, _turn(1))
    await store.append("bob", "s1", _turn(1))
    assert await store.keep_paused("alice", "s1", "{}", per_user=4, total=10)
    assert {info.session_id for info in await store.list_sessions("alice")} == {"s1", "s2"}
    assert await store.delete_user("alice") == 2
    assert await store.list_sessions("alice") == []
    assert await store.paused("alice", "s1") is None
    assert (await store.get("bob", "s1")).messages == _turn(1)
    assert await store.delete("bob", "s1") and not await store.delete("bob", "s1")


async def test_retention_hides_then_prunes_old_conversations(opener: Opener) -> None:
    clock = Clock()
    store = opener(max_age=3600, now=clock)
    await store.append("alice", "old", _turn(1))
    assert await store.keep_paused("alice", "old", "{}", per_user=4, total=10)
    clock.now += 3000
    await store.append("alice", "new", _turn(2))
    clock.now += 1000
    assert (await store.get("alice", "old")).messages == []
    assert await store.paused("alice", "old") is None
    assert (await store.get("alice", "new")).messages == _turn(2)
    assert await store.prune() == 1
    assert [info.session_id for info in await store.list_sessions("alice")] == ["new"]
    assert await store.prune(older_than=0) == 1


async def test_paused_runs_are_bounded_per_user_and_in_all(opener: Opener) -> None:
    store = opener()
    assert await store.keep_paused("mallory", "m0", "m0", per_user=2, total=4)
    assert await store.keep_paused("mallory", "m1", "m1", per_user=2, total=4)
    assert not await store.keep_paused("mallory", "m2", "m2", per_user=2, total=4)  # her bound
    assert await store.keep_paused("mallory", "m1", "m1 again", per_user=2, total=4)  # her own replaced
    assert await store.keep_paused("alice", "a0", "a0", per_user=2, total=4)
    assert await store.keep_paused("bob", "b0", "b0", per_user=2, total=4)
    assert await store.keep_paused("carol", "c0", "c0", per_user=2, total=4)  # the total: mallory's oldest goes
    assert await store.paused("mallory", "m0") is None
    assert await store.paused("mallory", "m1") == "m1 again"
    for user, session in (("alice", "a0"), ("bob", "b0"), ("carol", "c0")):
        assert await store.paused(user, session) == session


async def test_a_paused_run_is_changed_and_taken_in_one_transaction(opener: Opener) -> None:
    store = opener()
    await store.keep_paused("alice", "s1", "v1", per_user=2, total=4)
    assert await store.update_paused("alice", "s1", lambda text: text + "+decided") == "v1+decided"

    def refuse(text: str) -> None:
        raise LookupError("not yet")

    with pytest.raises(LookupError):
        await store.take_paused("alice", "s1", refuse)
    assert await store.paused("alice", "s1") == "v1+decided"
    assert await store.take_paused("bob", "s1") is None
    assert await store.take_paused("alice", "s1") == "v1+decided"
    assert await store.take_paused("alice", "s1") is None  # of two takers, one gets it


async def test_an_idempotency_key_is_claimed_once_and_answered_with_its_turn(opener: Opener) -> None:
    first, second = opener(), opener()
    claim = await first.claim("alice", "s1", "k1", "digest-1", lease=60)
    assert claim.token is not None and claim.outcome is None
    assert await second.claim("alice", "s1", "k1", "digest-1", lease=60) == Claim(lease_until=claim.lease_until)
    with pytest.raises(IdempotencyKeyReused, match="'k1'"):
        await second.claim("alice", "s1", "k1", "digest-2", lease=60)
    done = Completion(key="k1", digest="digest-1", outcome="the answer")
    assert await first.append("alice", "s1", _turn(1), done=done)
    assert not await second.append("alice", "s1", _turn(1), done=done)  # answered already: nothing stored
    assert await second.claim("alice", "s1", "k1", "digest-1", lease=60) == Claim(outcome="the answer")
    assert (await second.get("alice", "s1")).messages == _turn(1)
    assert (await second.claim("bob", "s1", "k1", "digest-2", lease=60)).token is not None  # bob's own key
    assert (await second.claim("alice", "s2", "k1", "digest-2", lease=60)).token is not None  # per conversation


async def test_concurrent_claims_on_two_store_instances_give_one_caller_the_run(opener: Opener) -> None:
    first, second = opener(), opener()
    claims: list[Claim] = []

    async def claim(store: SessionStore) -> None:
        claims.append(await store.claim("alice", "s1", "k1", "digest", lease=60))

    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(claim, first)
            group.start_soon(claim, second)
    assert sum(c.token is not None for c in claims) == 1


async def test_a_released_or_expired_claim_is_claimed_again(opener: Opener) -> None:
    clock = Clock()
    store = opener(now=clock)
    claim = await store.claim("alice", "s1", "k1", "digest", lease=60)
    assert claim.token is not None
    await store.release("alice", "s1", "k1", claim.token)  # the run failed: the retry runs
    retry = await store.claim("alice", "s1", "k1", "digest", lease=60)
    assert retry.token is not None
    clock.now += 61  # its replica died: after the lease a retry takes the key over
    taken = await store.claim("alice", "s1", "k1", "digest", lease=60)
    assert taken.token not in (None, retry.token)
    await store.release("alice", "s1", "k1", retry.token)  # the late one cannot give it up
    assert (await store.claim("alice", "s1", "k1", "digest", lease=60)).token is None


async def test_answered_keys_are_bounded_per_user_and_deleted_with_the_conversation(opener: Opener) -> None:
    clock = Clock()
    store = opener(now=clock, max_requests=2)
    for key in ("k1", "k2", "k3"):
        clock.now += 1
        assert (await store.claim("alice", "s1", key, key, lease=60)).token
        await store.append("alice", "s1", [Message.user(key)], done=Completion(key=key, digest=key, outcome=key))
    await store.append("bob", "s1", [], done=Completion(key="b1", digest="b1", outcome="b1"))
    assert (await store.claim("alice", "s1", "k1", "k1", lease=60)).token is not None  # the oldest went
    assert (await store.claim("alice", "s1", "k3", "k3", lease=60)).outcome == "k3"
    assert await store.delete_user("alice") == 1
    assert (await store.claim("alice", "s1", "k3", "k3", lease=60)).token is not None
    assert (await store.claim("bob", "s1", "b1", "b1", lease=60)).outcome == "b1"
    clock.now += 10_000
    assert await store.prune(older_than=3600) == 0  # no conversation: bob's key alone, pruned all the same
    assert (await store.claim("bob", "s1", "b1", "b1", lease=60)).token is not None


async def test_a_damaged_stored_message_is_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SQLiteSessionStore(path) as store:
        await store.append("alice", "s1", _turn(1))
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE messages SET body = 'not json' WHERE seq = 0")
        connection.execute("UPDATE sessions SET loaded = '{\"no\": 1}'")
    async with SQLiteSessionStore(path) as store:
        session = await store.get("alice", "s1")
    assert session.messages == _turn(1)[1:]  # the unreadable user message is left out, the rest kept
    assert session.loaded == set()


def test_a_store_url_names_its_engine(tmp_path: Path) -> None:
    assert isinstance(open_session_store("memory:"), InMemorySessionStore)
    store = open_session_store(f"sqlite:///{tmp_path}/s.db", max_messages=10, max_age=60)
    assert isinstance(store, SQLiteSessionStore) and store.max_messages == 10 and store.max_age == 60
    with pytest.raises(ValueError, match="no database file"):
        open_session_store("sqlite://")
    with pytest.raises(ValueError, match="table name") as caught:
        open_session_store("mysql://root:hunter2@db/x?table=bad-name")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ValueError, match="unknown session store scheme"):
        open_session_store("redis://db")

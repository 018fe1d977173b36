"""A turn retried with its idempotency key is answered from the session store: the model does
not run again and the turn is stored once — after the first run, at the same time (two agents on
one store, as two replicas in one process), over memory, a SQLite file and real MariaDB tables."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from harness import RuntimeContext
from harness.agent import (
    ControlOptions,
    Harness,
    IdempotencyKeyReused,
    ModelReplied,
    PatternPolicy,
    RunFinished,
    RunReplayed,
    RunStarted,
)
from harness.agent.sessions import InMemorySessionStore, SessionStore, SQLiteSessionStore
from harness.models import Message, Model, ToolCall
from harness.models.base import ModelReply, ToolSpec, Usage
from tests.support.sessions import raw_sql, session_url

ALICE = RuntimeContext(user_id="alice", session_id="s1")


class Counting(Model):
    """Answers ``answer N`` to its Nth call; holds each call until ``gate`` is set, when given;
    the first ``failures`` calls raise."""

    def __init__(self, gate: anyio.Event | None = None, failures: int = 0) -> None:
        super().__init__(name="counting")
        self.gate = gate
        self.failures = failures
        self.calls = 0
        self.entered = anyio.Event()

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        self.calls += 1
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.calls <= self.failures:
            raise ConnectionError("the provider hung up")
        return ModelReply(message=Message.assistant(f"answer {self.calls}"), usage=Usage(input_tokens=3))


Stores = Callable[[], SessionStore | str]


@pytest.fixture(params=["memory", "sqlite", "mysql"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    """What each agent (replica) is given: one shared store in memory, else the URL of one database."""
    if request.param == "memory":
        shared = InMemorySessionStore()
        yield lambda: shared
        return
    dsn = request.getfixturevalue("mysql_dsn") if request.param == "mysql" else None
    async with session_url(request.param, tmp_path, dsn) as url:
        yield lambda: url


def _agent(stores: Stores, workspace: Path, model: Model, *, ask: bool = False) -> Harness:
    control = ControlOptions(approval=PatternPolicy([], default="ask")) if ask else ControlOptions()
    return Harness(model=model, workspace=workspace, sessions=stores(), control=control)


async def _history(agent: Harness) -> list[str]:
    return [m.content for m in (await agent.sessions.get("alice", "s1")).messages]


async def test_a_retry_is_answered_from_the_store_and_the_model_runs_once(stores: Stores, tmp_path: Path) -> None:
    first_model, second_model = Counting(), Counting()
    async with _agent(stores, tmp_path, first_model) as first, _agent(stores, tmp_path, second_model) as second:
        answered = await first.run("hello", context=ALICE, idempotency_key="req-1")
        retried = await second.run("hello", context=ALICE, idempotency_key="req-1")  # another replica
        again = await first.run("hello", context=ALICE, idempotency_key="req-1")
        assert (answered.reply, answered.replayed) == ("answer 1", False)
        for replay in (retried, again):
            assert (replay.reply, replay.replayed, replay.usage) == ("answer 1", True, Usage())
            assert isinstance(replay.events[0], RunReplayed) and replay.events[0].key == "req-1"
        assert (first_model.calls, second_model.calls) == (1, 0)
        assert await _history(second) == ["hello", "answer 1"]
        nxt = await second.run("hello", context=ALICE, idempotency_key="req-2")  # a new key: a new turn
        assert nxt.reply == "answer 1" and not nxt.replayed and second_model.calls == 1
        assert await _history(first) == ["hello", "answer 1", "hello", "answer 1"]


async def test_a_key_sent_with_another_message_is_refused_and_named(stores: Stores, tmp_path: Path) -> None:
    model = Counting()
    async with _agent(stores, tmp_path, model) as agent:
        await agent.run("pay 10", context=ALICE, idempotency_key="req-1")
        with pytest.raises(IdempotencyKeyReused, match=r"idempotency key 'req-1'.*another message"):
            await agent.run("pay 1000", context=ALICE, idempotency_key="req-1")
        bob = RuntimeContext(user_id="bob", session_id="s1")  # keys are per conversation
        assert (await agent.run("pay 1000", context=bob, idempotency_key="req-1")).replayed is False
        for bad in ("", " req", "req\u200d", "r" * 256):
            with pytest.raises(ValueError, match="idempotency key"):
                await agent.run("pay 10", context=ALICE, idempotency_key=bad)
        assert model.calls == 2 and await _history(agent) == ["pay 10", "answer 1"]


class _Waiting(logging.Handler):
    """Sets ``seen`` when a run logs that it waits for a run of its key in progress elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "in progress elsewhere" in record.getMessage():
            self.seen.set()


async def test_a_retry_racing_the_first_run_waits_for_its_answer(stores: Stores, tmp_path: Path) -> None:
    gate = anyio.Event()
    first_model, second_model = Counting(gate), Counting(gate)
    waiting = _Waiting()
    logger = logging.getLogger("harness.agent.requests")
    logger.addHandler(waiting)
    logger.setLevel(logging.INFO)
    results = {}
    try:
        async with _agent(stores, tmp_path, first_model) as first, _agent(stores, tmp_path, second_model) as second:

            async def run(name: str, agent: Harness) -> None:
                results[name] = await agent.run("hello", context=ALICE, idempotency_key="req-1")

            async with anyio.create_task_group() as group:
                group.start_soon(run, "first", first)
                await first_model.entered.wait()  # the first run holds its key in the model call
                group.start_soon(run, "second", second)
                await waiting.seen.wait()  # the retry found it in progress
                gate.set()
            assert await _history(first) == ["hello", "answer 1"]
    finally:
        logger.removeHandler(waiting)
    assert (first_model.calls, second_model.calls) == (1, 0)
    assert [(r.reply, r.replayed) for r in (results["first"], results["second"])] == [
        ("answer 1", False),
        ("answer 1", True),
    ]


async def test_a_run_that_fails_gives_its_key_up_for_the_retry(stores: Stores, tmp_path: Path) -> None:
    model = Counting(failures=1)
    async with _agent(stores, tmp_path, model) as agent:
        with pytest.raises(ConnectionError):
            await agent.run("hello", context=ALICE, idempotency_key="req-1")
        retried = await agent.run("hello", context=ALICE, idempotency_key="req-1")
        assert (retried.reply, retried.replayed, model.calls) == ("answer 2", False, 2)
        assert await _history(agent) == ["hello", "answer 2"]


async def test_a_streamed_retry_yields_the_stored_answer(stores: Stores, tmp_path: Path) -> None:
    model = Counting()
    async with _agent(stores, tmp_path, model) as agent:
        await agent.run("hello", context=ALICE, idempotency_key="req-1")
        events = [e async for e in agent.stream("hello", context=ALICE, idempotency_key="req-1")]
    assert [type(e) for e in events] == [RunStarted, RunReplayed, ModelReplied, RunFinished]
    assert isinstance(events[-1], RunFinished) and events[-1].reply == "answer 1"
    assert model.calls == 1


async def test_a_retry_of_a_run_that_paused_gets_its_approvals(stores: Stores, tmp_path: Path) -> None:
    call = ToolCall(id="c1", name="execute_shell_command", arguments={"command": "touch marker"})

    class Asking(Counting):
        async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
            self.calls += 1
            return ModelReply(message=Message.assistant("", [call]), usage=Usage())

    model = Asking()
    async with _agent(stores, tmp_path, model, ask=True) as agent:
        paused = await agent.run("deploy", context=ALICE, idempotency_key="req-1")
        retried = await agent.run("deploy", context=ALICE, idempotency_key="req-1")
        assert retried.replayed and retried.approvals == paused.approvals and len(paused.approvals) == 1
        assert model.calls == 1
        assert [r.approval_id for r in await agent.pending_approvals(ALICE)] == [paused.approvals[0].approval_id]
    assert not (tmp_path / "alice" / "marker").exists()


async def test_keys_are_bounded_per_user_and_go_with_the_conversation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    model = Counting()
    bob = RuntimeContext(user_id="bob", session_id="s1")
    async with Harness(
        model=model, workspace=tmp_path, sessions=SQLiteSessionStore(tmp_path / "s.db", max_requests=2)
    ) as agent:
        await agent.run("m b1", context=bob, idempotency_key="b1")
        for key in ("k1", "k2", "k3"):
            await agent.run(f"m {key}", context=ALICE, idempotency_key=key)
        assert await raw_sql(url, "SELECT user_id, request_key FROM {requests} ORDER BY created") == [
            ("bob", "b1"),
            ("alice", "k2"),
            ("alice", "k3"),
        ]
        assert (await agent.run("m k3", context=ALICE, idempotency_key="k3")).replayed
        assert not (await agent.run("m k1", context=ALICE, idempotency_key="k1")).replayed  # the oldest went
        assert (await agent.run("m b1", context=bob, idempotency_key="b1")).replayed  # not bob's
        assert await agent.sessions.delete("alice", "s1")
        assert await raw_sql(url, "SELECT user_id FROM {requests}") == [("bob",)]
        assert not (await agent.run("m k3", context=ALICE, idempotency_key="k3")).replayed
    assert model.calls == 6

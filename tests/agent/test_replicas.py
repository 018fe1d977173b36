"""Conversations over real processes: two replicas on one MariaDB, or one SQLite file across
restarts. Each replica is ``replica_driver.py`` in its own process; the workspace folder is
shared, as a shared filesystem would be."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.agent.sessions import open_session_store
from harness.models import Message
from tests.support.cli import python_command
from tests.support.polling import eventually
from tests.support.sessions import session_url

DRIVER = Path(__file__).with_name("replica_driver.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "mysql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    dsn = request.getfixturevalue("mysql_dsn") if request.param == "mysql" else None
    async with session_url(request.param, tmp_path, dsn) as url:
        yield url


def _start(
    store: str, workspace: Path, *args: str, user: str = "alice", session: str = "s1", log: Path | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [*python_command(DRIVER), store, str(workspace), user, session, *args]
    if log is None:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    with log.open("w") as errors:  # the process keeps its own copy
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err or "(stderr in its log file)"
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _replica(store: str, workspace: Path, *args: str, **who: str) -> dict[str, Any]:
    return _finish(_start(store, workspace, *args, **who))


async def _history(store: str, user: str = "alice", session: str = "s1") -> list[Message]:
    async with open_session_store(store) as sessions:
        return (await sessions.get(user, session)).messages


async def test_the_next_turn_on_another_replica_sees_the_history(store: str, tmp_path: Path) -> None:
    first = _replica(store, tmp_path, "turn", "my name is alice")
    second = _replica(store, tmp_path, "turn", "what is my name?")
    assert first["reply"] == "seen: my name is alice"
    assert second["reply"] == "seen: my name is alice|what is my name?"
    assert _replica(store, tmp_path, "turn", "hello", user="bob")["reply"] == "seen: hello"  # bob's own


async def test_a_replica_killed_mid_turn_loses_only_that_turn(store: str, tmp_path: Path) -> None:
    _replica(store, tmp_path, "turn", "before")
    doomed = _start(store, tmp_path, "turn", "hold doomed")
    await eventually(lambda: _exists(tmp_path / "held-doomed"), within=60, what="the turn to reach its tool")
    doomed.send_signal(signal.SIGKILL)
    doomed.communicate(timeout=30)  # reaps it and closes its pipes
    after = _replica(store, tmp_path, "turn", "after")
    assert after["reply"] == "seen: before|after"
    assert [m.content for m in await _history(store) if m.role == "user"] == ["before", "after"]


async def test_two_concurrent_turns_of_one_session_leave_a_consistent_history(store: str, tmp_path: Path) -> None:
    _replica(store, tmp_path, "turn", "start")
    replicas = [_start(store, tmp_path, "turn", f"hold {name}") for name in ("a", "b")]
    for name in ("a", "b"):
        await eventually(lambda name=name: _exists(tmp_path / f"held-{name}"), within=60, what=f"turn {name}")
    (tmp_path / "release").write_text("", encoding="utf-8")
    replies = [_finish(process)["reply"] for process in replicas]
    assert sorted(replies) == ["seen: start|hold a", "seen: start|hold b"]  # neither saw the other's turn
    history = await _history(store)
    assert len(history) == 2 + 4 + 4
    turns = [history[2:6], history[6:10]]
    assert {turn[0].content for turn in turns} == {"hold a", "hold b"}
    for turn in turns:  # each turn whole and in its order: asked, called, returned, answered
        name = turn[0].content.removeprefix("hold ")
        assert [m.role for m in turn] == ["user", "assistant", "tool", "assistant"]
        assert turn[2].content == f"held {name}" and turn[3].content == f"seen: start|hold {name}"


async def test_an_approval_paused_on_one_replica_is_resolved_on_another(store: str, tmp_path: Path) -> None:
    paused = _replica(store, tmp_path, "turn", "touch marker")
    assert paused["reply"] == "" and len(paused["approvals"]) == 1
    assert not (tmp_path / "alice" / "marker").exists()
    with pytest.raises(AssertionError, match="ApprovalNotFound"):  # bob cannot decide it from anywhere
        _replica(store, tmp_path, "resolve", paused["approvals"][0], user="bob")
    resumed = _replica(store, tmp_path, "resolve", paused["approvals"][0])
    assert resumed["reply"] == "seen: touch marker" and resumed["approvals"] == []
    assert (tmp_path / "alice" / "marker").exists()
    history = await _history(store)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert "awaits approval" not in history[2].content  # the call's real result replaced the placeholder


async def _exists(path: Path) -> bool:
    await anyio.sleep(0)
    return path.exists()


async def test_a_retried_turn_on_another_replica_is_answered_from_the_store(store: str, tmp_path: Path) -> None:
    (tmp_path / "release").write_text("", encoding="utf-8")
    first = _replica(store, tmp_path, "turn", "hold once", "key-1")
    retry = _replica(store, tmp_path, "turn", "hold once", "key-1")
    assert first == {"reply": "seen: hold once", "approvals": [], "replayed": False}
    assert retry == {"reply": "seen: hold once", "approvals": [], "replayed": True}
    assert (tmp_path / "held-once.log").read_text() == "held\n"  # the model and its tool ran once
    assert [m.role for m in await _history(store)] == ["user", "assistant", "tool", "assistant"]
    reused = _start(store, tmp_path, "turn", "something else", "key-1")
    out, err = reused.communicate(timeout=120)
    assert reused.returncode != 0 and "IdempotencyKeyReused" in err and "key-1" in err


@pytest.mark.slow
async def test_a_retry_racing_the_first_run_on_another_replica_waits_for_its_answer(store: str, tmp_path: Path) -> None:
    logs = [tmp_path / f"replica-{n}.log" for n in range(2)]
    replicas = [_start(store, tmp_path, "turn", "hold race", "key-2", log=log) for log in logs]

    async def one_waits() -> bool:  # one replica runs the turn, the other waits for its answer
        return (tmp_path / "held-race").exists() and any("in progress elsewhere" in log.read_text() for log in logs)

    await eventually(one_waits, within=60, what="one replica to run the turn and the other to wait for it")
    (tmp_path / "release").write_text("", encoding="utf-8")
    results = [_finish(process) for process in replicas]
    assert [r["reply"] for r in results] == ["seen: hold race"] * 2
    assert sorted(r["replayed"] for r in results) == [False, True]
    assert (tmp_path / "held-race.log").read_text() == "held\n"
    assert [m.role for m in await _history(store)] == ["user", "assistant", "tool", "assistant"]

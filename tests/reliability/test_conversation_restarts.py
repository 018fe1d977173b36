"""A conversation kept in a SQLite file survives restarts whole: the next process continues it,
history trimming still applies, and the "already loaded" rule still knows which skills the
conversation read (and serves a skill's body again once trimming dropped it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import Harness, PipelineOptions
from harness.agent.sessions import SQLiteSessionStore
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from tests.support.skills import make_skill, served_body

ALICE = RuntimeContext(user_id="alice", session_id="s1")
LOAD = Message.assistant("", [ToolCall(id="c-load", name="load_skill_through_path", arguments={"skillId": "weather"})])


async def _turn(tmp_path: Path, replies: list[Message | str], message: str, max_messages: int) -> list[str]:
    """One turn in a fresh agent (a restarted process) on the conversation file; the tool results."""
    sessions = SQLiteSessionStore(tmp_path / "sessions.db", max_messages=max_messages)
    async with Harness(
        model=ScriptedModel(replies), workspace=tmp_path, sessions=sessions, pipeline=PipelineOptions(watch=False)
    ) as agent:
        result = await agent.run(message, context=ALICE)
    return [e.content for e in result.events if isinstance(e, ToolReturned)]


@pytest.mark.parametrize(("max_messages", "served"), [(200, "note"), (4, "body")], ids=["kept", "trimmed"])
async def test_the_already_loaded_rule_and_trimming_hold_across_restarts(
    tmp_path: Path, max_messages: int, served: str
) -> None:
    make_skill(tmp_path / "skills", "weather", description="Use for the weather.", body="Look outside.\n")
    [body] = await _turn(tmp_path, [LOAD, "a"], "one", max_messages)
    await _turn(tmp_path, ["b"], "two", max_messages)
    [again] = await _turn(tmp_path, [LOAD, "c"], "three", max_messages)
    assert served_body(body).startswith("---")
    assert (again == body) if served == "body" else ("already loaded" in again)
    async with SQLiteSessionStore(tmp_path / "sessions.db", max_messages=max_messages) as store:
        history = (await store.get("alice", "s1")).messages
    users = [m.content for m in history if m.role == "user"]
    assert users == (["one", "two", "three"] if served == "note" else ["three"])

"""``sessions:`` in harness.yaml (and ``Harness(sessions=URL)``) chooses where conversations live."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import Harness
from harness.agent.sessions import InMemorySessionStore, SQLiteSessionStore
from harness.config import SessionsConfig, load_config
from harness.errors import ConfigError
from harness.models import ScriptedModel

ALICE = RuntimeContext(user_id="alice", session_id="s1")


def _config(tmp_path: Path, sessions: str) -> Path:
    path = tmp_path / "harness.yaml"
    path.write_text(f"workspace: ws\nmodel: demo\n{sessions}\n", encoding="utf-8")
    return path


def test_a_url_alone_names_the_store_and_a_relative_sqlite_file_is_beside_the_config(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "sessions: sqlite:///data/sessions.db"))
    assert config.sessions == SessionsConfig(store=f"sqlite:///{tmp_path / 'data' / 'sessions.db'}")
    assert load_config(_config(tmp_path, "")).sessions == SessionsConfig()


def test_a_mapping_sets_the_bounds(tmp_path: Path) -> None:
    text = 'sessions:\n  store: "memory:"\n  max_messages: 50\n  max_age_days: 30'
    assert load_config(_config(tmp_path, text)).sessions == SessionsConfig(max_messages=50, max_age=30 * 86400.0)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sessions:\n  max_messages: 1", "max_messages"),
        ("sessions:\n  max_age_days: 0", "max_age_days"),
        ('sessions:\n  stor: "memory:"', r"did you mean sessions\.store"),
        ("sessions: 3", "a store URL or a mapping"),
    ],
)
def test_a_bad_sessions_block_is_a_config_error(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(_config(tmp_path, text))


def test_an_unknown_store_is_a_config_error_without_the_password(tmp_path: Path) -> None:
    path = _config(tmp_path, "sessions: redis://user:hunter2@db/0")
    with pytest.raises(ConfigError, match="unknown session store scheme") as caught:
        Harness.from_config(path)
    assert "hunter2" not in str(caught.value)


async def test_from_config_keeps_the_conversation_across_agents(tmp_path: Path) -> None:
    path = _config(tmp_path, "sessions: sqlite:///sessions.db")
    for message in ("one", "two"):
        async with Harness.from_config(path, model=ScriptedModel(["ok"]), watch=False) as agent:
            assert isinstance(agent.sessions, SQLiteSessionStore)
            await agent.run(message, context=ALICE)
    async with SQLiteSessionStore(tmp_path / "sessions.db") as store:
        assert [m.content for m in (await store.get("alice", "s1")).messages] == ["one", "ok", "two", "ok"]


def test_the_api_takes_a_store_or_its_url(tmp_path: Path) -> None:
    assert isinstance(Harness(workspace=tmp_path).sessions, InMemorySessionStore)
    agent = Harness(workspace=tmp_path, sessions=f"sqlite:///{tmp_path}/s.db")
    assert isinstance(agent.sessions, SQLiteSessionStore) and agent.sessions.path == tmp_path / "s.db"

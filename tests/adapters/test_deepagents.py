"""The deepagents adapter: a real ``create_deep_agent`` graph whose ``SkillsMiddleware`` and file
tools read one user's skills through :class:`SkillsBackend`, driven by langchain_core's fake
chat model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("deepagents", reason="the [deepagents] extra is not installed")

from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from harness import Harness, RuntimeContext
from harness.adapters.deepagents import SkillsBackend
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL


class ScriptedChatModel(GenericFakeChatModel):
    """Replies from a list and records the messages of every call; tools are accepted as bound."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def calls(*tool_calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": n, "args": a, "id": f"call-{i}"} for i, (n, a) in enumerate(tool_calls)]
    )


async def run(agent: Harness, context: RuntimeContext, *replies: AIMessage) -> tuple[ScriptedChatModel, list[str]]:
    model = ScriptedChatModel(messages=iter(replies))
    backend = CompositeBackend(default=StateBackend(), routes={"/skills/": SkillsBackend(agent, context)})
    deep = create_deep_agent(model=model, backend=backend, skills=["/skills/"])
    state = await deep.ainvoke({"messages": [{"role": "user", "content": "go"}]})
    tools = [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
    return model, tools


def system_prompt(model: ScriptedChatModel) -> str:
    return str(model.seen[0][0].content)


async def test_skills_middleware_lists_and_the_agent_reads_the_market_skill(agent: Harness) -> None:
    model, tools = await run(
        agent,
        ALICE,
        calls(("read_file", {"file_path": f"/skills/{MARKET_SKILL}/SKILL.md"})),
        calls(("read_file", {"file_path": f"/skills/{MARKET_SKILL}/scripts/forecast.py"})),
        calls(("grep", {"pattern": "sunny", "path": "/skills/"})),
        calls(("glob", {"pattern": "*.py", "path": "/skills/"})),
        AIMessage(content="sunny"),
    )
    assert f"/skills/{MARKET_SKILL}/SKILL.md" in system_prompt(model)
    skill_md, script, grep, glob = tools
    assert MARKET_BODY in skill_md
    assert FORECAST in script
    assert f"/skills/{MARKET_SKILL}/scripts/forecast.py" in grep
    assert f"/skills/{MARKET_SKILL}/scripts/forecast.py" in glob


async def test_another_users_skill_is_neither_listed_nor_readable(agent: Harness) -> None:
    model, tools = await run(
        agent,
        ALICE,
        calls(
            ("read_file", {"file_path": f"/skills/{BOB_SKILL}/SKILL.md"}),
            ("read_file", {"file_path": f"/skills/{BOB_SKILL}/notes.txt"}),
            ("read_file", {"file_path": f"/skills/{MARKET_SKILL}/../{BOB_SKILL}/SKILL.md"}),
            ("ls", {"path": "/skills/"}),
            ("grep", {"pattern": "BOB-SECRET", "path": "/skills/"}),
            ("glob", {"pattern": "**/*", "path": "/skills/"}),
        ),
        AIMessage(content="nothing"),
    )
    assert BOB_SKILL not in system_prompt(model)
    assert BOB_SECRET not in " ".join(tools)
    assert BOB_SKILL not in " ".join(tools[3:])
    assert f"/skills/{MARKET_SKILL}/" in tools[3]


async def test_the_owner_reads_their_own_skill(agent: Harness) -> None:
    model, tools = await run(
        agent, BOB, calls(("read_file", {"file_path": f"/skills/{BOB_SKILL}/notes.txt"})), AIMessage(content="ok")
    )
    assert f"/skills/{BOB_SKILL}/SKILL.md" in system_prompt(model)
    assert BOB_SECRET in tools[0]


async def test_writes_to_the_skills_are_refused_and_change_nothing(agent: Harness) -> None:
    path = f"/skills/{MARKET_SKILL}/SKILL.md"
    _, tools = await run(
        agent,
        ALICE,
        calls(("write_file", {"file_path": path, "content": "pwned"})),
        calls(("edit_file", {"file_path": path, "old_string": "weather", "new_string": "pwned"})),
        calls(("read_file", {"file_path": path})),
        AIMessage(content="done"),
    )
    assert "read-only" in tools[0] and "read-only" in tools[1]
    assert "pwned" not in tools[2] and MARKET_BODY in tools[2]


async def test_the_synchronous_methods_say_the_backend_is_asynchronous(agent: Harness) -> None:
    backend = SkillsBackend(agent, ALICE)
    assert "ainvoke" in (backend.ls("/").error or "")
    assert "ainvoke" in (backend.read(f"/{MARKET_SKILL}/SKILL.md").error or "")


async def test_the_backend_itself_refuses_climbing_out_of_a_skill(agent: Harness) -> None:
    backend = SkillsBackend(agent, ALICE)
    climbed = await backend.aread(f"/{MARKET_SKILL}/../{BOB_SKILL}/SKILL.md")
    [download] = await backend.adownload_files([f"/{BOB_SKILL}/notes.txt"])
    assert climbed.file_data is None and "not a path inside" in (climbed.error or "")
    assert download.content is None and download.error == "file_not_found"

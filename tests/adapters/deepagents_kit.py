"""deepagents, LangChain and the helpers over them, for ``test_deepagents.py`` (its ``kit`` fixture)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from harness import Harness, RuntimeContext
from harness.adapters.deepagents import SkillsBackend

__all__ = [
    "AIMessage",
    "SkillsBackend",
    "calls",
    "run",
    "system_prompt",
]  # what the tests use, imports included


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

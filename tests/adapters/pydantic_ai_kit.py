"""pydantic-ai and the helpers over it, for ``test_pydantic_ai.py`` (its ``kit`` fixture)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic_ai import Agent
from pydantic_ai.capabilities import Toolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from harness.adapters.pydantic_ai import SkillsToolset
from tests.adapters.conftest import MARKET_SKILL
from tests.support.catalog import read_catalog

__all__ = [
    "LOAD",
    "SHELL",
    "Agent",
    "FunctionModel",
    "Script",
    "SkillsToolset",
    "Toolset",
    "call",
    "reply",
    "returns",
    "run_forecast",
]  # what the tests use, imports included


LOAD = "load_skill_through_path"
SHELL = "execute_shell_command"

Step = Callable[[AgentInfo], ModelResponse]


class Script:
    """A FunctionModel body: one step per model request, recording what each request saw."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.seen: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(info)
        return self.steps.pop(0)(info)


def call(name: str, **args: object) -> Step:
    return lambda info: ModelResponse(parts=[ToolCallPart(name, args)])


def reply(text: str) -> Step:
    return lambda info: ModelResponse(parts=[TextPart(text)])


def run_forecast(info: AgentInfo) -> ModelResponse:
    root = read_catalog(info.instructions or "").by_name[MARKET_SKILL].files_root
    assert root is not None, info.instructions
    return ModelResponse(parts=[ToolCallPart(SHELL, {"command": f"python3 {root}/scripts/forecast.py"})])


def returns(messages: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]

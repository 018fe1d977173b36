"""The pydantic-ai adapter through a real ``Agent.run`` driven by pydantic-ai's ``FunctionModel``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")

from pydantic_ai import Agent
from pydantic_ai.capabilities import Toolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from harness import Harness, RuntimeContext
from harness.adapters import UserContextError
from harness.adapters.pydantic_ai import SkillsToolset
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL
from tests.support.catalog import read_catalog

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


async def test_a_run_loads_and_runs_the_market_skill_for_its_user(agent: Harness) -> None:
    script = Script(call(LOAD, skillId=MARKET_SKILL), run_forecast, reply("sunny"))
    pyd = Agent(FunctionModel(script), deps_type=RuntimeContext, toolsets=[SkillsToolset(agent)])
    result = await pyd.run("weather?", deps=ALICE)

    assert result.output == "sunny"
    first = script.seen[0]
    assert MARKET_SKILL in read_catalog(first.instructions or "").described
    assert {t.name for t in first.function_tools} == {LOAD, SHELL}
    loaded, ran = returns(result.all_messages())
    assert MARKET_BODY in loaded
    assert "exit code: 0" in ran and FORECAST in ran


async def test_another_users_skill_is_invisible_and_unloadable(agent: Harness) -> None:
    script = Script(
        call(LOAD, skillId=BOB_SKILL),
        call(LOAD, skillId=BOB_SKILL, path="notes.txt"),
        call(LOAD, skillId=MARKET_SKILL, path=f"../../{BOB.user_id}/skills/{BOB_SKILL}/notes.txt"),
        call(LOAD, skillId=BOB_SKILL, user_id=BOB.user_id),  # the model cannot pick the user
        reply("no"),
    )
    pyd = Agent(FunctionModel(script), deps_type=RuntimeContext, toolsets=[SkillsToolset(agent)])
    result = await pyd.run("bob's notes", deps=ALICE)

    outputs = returns(result.all_messages())
    assert BOB_SKILL not in (script.seen[0].instructions or "")
    assert BOB_SECRET not in " ".join([*(info.instructions or "" for info in script.seen), *outputs])
    assert [output.split(":")[1].strip() for output in outputs] == [
        "SkillNotFound",
        "SkillNotFound",
        "PermissionError",
        "ToolArgumentError",
    ]


async def test_the_user_comes_from_each_runs_deps_through_a_capability(agent: Harness) -> None:
    script = Script(call(LOAD, skillId=BOB_SKILL), reply("ok"), reply("ok"))
    pyd = Agent(FunctionModel(script), deps_type=RuntimeContext, capabilities=[Toolset(SkillsToolset(agent))])
    result = await pyd.run("my notes", deps=BOB)
    await pyd.run("my notes", deps=ALICE)

    assert BOB_SKILL in read_catalog(script.seen[0].instructions or "").described
    assert BOB_SECRET in returns(result.all_messages())[0]
    assert BOB_SKILL not in (script.seen[2].instructions or "")


async def test_a_run_without_a_user_fails_before_the_model_is_called(agent: Harness) -> None:
    script = Script(reply("unreachable"))
    pyd = Agent(FunctionModel(script), toolsets=[SkillsToolset(agent)])
    with pytest.raises(UserContextError, match="names no user"):
        await pyd.run("hi")
    assert script.seen == []

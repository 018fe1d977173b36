"""The OpenAI Agents SDK adapter through a real ``Runner`` run, with the SDK's own scripted
``Model`` (``agents.testing.ScriptedModel``) standing in for a hosted model."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from harness import Harness
from harness.adapters import UserContextError
from harness.adapters.openai_agents import OpenAIAgentsSkills
from harness.agent import PipelineOptions
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL
from tests.support.catalog import read_catalog

LOAD = "load_skill_through_path"
SHELL = "execute_shell_command"
SEARCH = "search_skills"

set_tracing_disabled(True)  # the SDK would otherwise try to export traces


def _agent(skills: OpenAIAgentsSkills, model: ScriptedModel) -> Agent[Any]:
    return Agent(
        name="assistant", instructions=skills.instructions("You are terse."), tools=skills.tools(), model=model
    )


def _outputs(result: Any) -> list[str]:
    return [str(item.output) for item in result.new_items if isinstance(item, ToolCallOutputItem)]


def _run_forecast(call: ModelCall) -> list[Any]:
    """Run the script from the files-root the catalog names (what a real model reads there)."""
    root = read_catalog(call.system_instructions or "").by_name[MARKET_SKILL].files_root
    assert root is not None, call.system_instructions
    return [function_call(SHELL, {"command": f"python3 {root}/scripts/forecast.py"}, call_id="shell")]


async def test_a_run_loads_and_runs_the_market_skill_for_its_user(agent: Harness) -> None:
    model = ScriptedModel(
        [
            [function_call(LOAD, {"skillId": MARKET_SKILL}, call_id="load")],
            ModelStep.respond(_run_forecast),
            [assistant_message("sunny")],
        ]
    )
    result = await Runner.run(_agent(OpenAIAgentsSkills(agent), model), "weather?", context=ALICE)

    assert result.final_output == "sunny"
    first = model.calls[0]
    assert first.system_instructions is not None
    assert first.system_instructions.startswith("You are terse.\n\n")
    assert MARKET_SKILL in read_catalog(first.system_instructions).described
    assert {t.name for t in first.tools} == {LOAD, SHELL}  # search only when the catalog is cut
    loaded, ran = _outputs(result)
    assert MARKET_BODY in loaded
    assert "exit code: 0" in ran and FORECAST in ran


async def test_another_users_skill_is_invisible_and_unloadable(agent: Harness) -> None:
    model = ScriptedModel(
        [
            [function_call(LOAD, {"skillId": BOB_SKILL}, call_id="steal")],
            [function_call(LOAD, {"skillId": BOB_SKILL, "path": "notes.txt"}, call_id="steal-file")],
            [assistant_message("nothing")],
        ]
    )
    result = await Runner.run(_agent(OpenAIAgentsSkills(agent), model), "bob's notes", context=ALICE)

    seen = " ".join([*(c.system_instructions or "" for c in model.calls), *_outputs(result)])
    assert BOB_SKILL not in (model.calls[0].system_instructions or "")
    assert BOB_SECRET not in seen
    assert all(output.startswith("error: SkillNotFound") for output in _outputs(result))


async def test_the_owner_sees_their_own_skill(agent: Harness) -> None:
    model = ScriptedModel([[function_call(LOAD, {"skillId": BOB_SKILL}, call_id="own")], [assistant_message("ok")]])
    result = await Runner.run(_agent(OpenAIAgentsSkills(agent), model), "my notes", context=BOB)

    assert BOB_SKILL in read_catalog(model.calls[0].system_instructions or "").described
    assert BOB_SECRET in _outputs(result)[0]


async def test_a_run_without_a_user_fails_before_the_model_is_called(agent: Harness) -> None:
    model = ScriptedModel([[assistant_message("unreachable")]])
    with pytest.raises(UserContextError, match="names no user"):
        await Runner.run(_agent(OpenAIAgentsSkills(agent), model), "hi", context={"tenant": "acme"})
    assert model.calls == ()


async def test_the_search_tool_is_enabled_only_when_the_catalog_is_cut(world: dict[str, Any]) -> None:
    async with Harness(**{**world, "pipeline": PipelineOptions(watch=False, catalog_budget=120)}) as small:
        model = ScriptedModel(
            [
                [function_call(SEARCH, {"query": "weather"}, call_id="find")],
                [function_call(SEARCH, {"query": "bob private notes"}, call_id="snoop")],
                [assistant_message("ok")],
            ]
        )
        result = await Runner.run(_agent(OpenAIAgentsSkills(small), model), "weather?", context=ALICE)

    assert SEARCH in {t.name for t in model.calls[0].tools}
    found, snooped = _outputs(result)
    assert MARKET_SKILL in found
    assert BOB_SKILL not in snooped and BOB_SECRET not in snooped


async def test_shell_false_offers_only_the_load_tool(agent: Harness) -> None:
    model = ScriptedModel([[assistant_message("ok")]])
    await Runner.run(_agent(OpenAIAgentsSkills(agent, shell=False), model), "hi", context=ALICE)
    assert [t.name for t in model.calls[0].tools] == [LOAD]

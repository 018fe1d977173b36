"""The OpenAI Agents SDK adapter through a real ``Runner`` run, with the SDK's own scripted
``Model`` (``agents.testing.ScriptedModel``) standing in for a hosted model."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from harness import Harness
from harness.adapters import UserContextError
from harness.agent import PipelineOptions
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL, require
from tests.support.catalog import read_catalog

require("agents", "openai-agents")


async def test_a_run_loads_and_runs_the_market_skill_for_its_user(agent: Harness, kit: ModuleType) -> None:
    model = kit.ScriptedModel(
        [
            [kit.function_call(kit.LOAD, {"skillId": MARKET_SKILL}, call_id="load")],
            kit.ModelStep.respond(kit.run_forecast),
            [kit.assistant_message("sunny")],
        ]
    )
    result = await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(agent), model), "weather?", context=ALICE)

    assert result.final_output == "sunny"
    first = model.calls[0]
    assert first.system_instructions is not None
    assert first.system_instructions.startswith("You are terse.\n\n")
    assert MARKET_SKILL in read_catalog(first.system_instructions).described
    assert {t.name for t in first.tools} == {kit.LOAD, kit.SHELL}  # search only when the catalog is cut
    loaded, ran = kit.outputs(result)
    assert MARKET_BODY in loaded
    assert "exit code: 0" in ran and FORECAST in ran


async def test_another_users_skill_is_invisible_and_unloadable(agent: Harness, kit: ModuleType) -> None:
    model = kit.ScriptedModel(
        [
            [kit.function_call(kit.LOAD, {"skillId": BOB_SKILL}, call_id="steal")],
            [kit.function_call(kit.LOAD, {"skillId": BOB_SKILL, "path": "notes.txt"}, call_id="steal-file")],
            [kit.assistant_message("nothing")],
        ]
    )
    result = await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(agent), model), "bob's notes", context=ALICE)

    seen = " ".join([*(c.system_instructions or "" for c in model.calls), *kit.outputs(result)])
    assert BOB_SKILL not in (model.calls[0].system_instructions or "")
    assert BOB_SECRET not in seen
    assert all(output.startswith("error: SkillNotFound") for output in kit.outputs(result))


async def test_the_owner_sees_their_own_skill(agent: Harness, kit: ModuleType) -> None:
    model = kit.ScriptedModel(
        [[kit.function_call(kit.LOAD, {"skillId": BOB_SKILL}, call_id="own")], [kit.assistant_message("ok")]]
    )
    result = await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(agent), model), "my notes", context=BOB)

    assert BOB_SKILL in read_catalog(model.calls[0].system_instructions or "").described
    assert BOB_SECRET in kit.outputs(result)[0]


async def test_a_run_without_a_user_fails_before_the_model_is_called(agent: Harness, kit: ModuleType) -> None:
    model = kit.ScriptedModel([[kit.assistant_message("unreachable")]])
    with pytest.raises(UserContextError, match="names no user"):
        await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(agent), model), "hi", context={"tenant": "acme"})
    assert model.calls == ()


async def test_the_search_tool_is_enabled_only_when_the_catalog_is_cut(world: dict[str, Any], kit: ModuleType) -> None:
    async with Harness(**{**world, "pipeline": PipelineOptions(watch=False, catalog_budget=120)}) as small:
        model = kit.ScriptedModel(
            [
                [kit.function_call(kit.SEARCH, {"query": "weather"}, call_id="find")],
                [kit.function_call(kit.SEARCH, {"query": "bob private notes"}, call_id="snoop")],
                [kit.assistant_message("ok")],
            ]
        )
        result = await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(small), model), "weather?", context=ALICE)

    assert kit.SEARCH in {t.name for t in model.calls[0].tools}
    found, snooped = kit.outputs(result)
    assert MARKET_SKILL in found
    assert BOB_SKILL not in snooped and BOB_SECRET not in snooped


async def test_shell_false_offers_only_the_load_tool(agent: Harness, kit: ModuleType) -> None:
    model = kit.ScriptedModel([[kit.assistant_message("ok")]])
    await kit.Runner.run(kit.sdk_agent(kit.OpenAIAgentsSkills(agent, shell=False), model), "hi", context=ALICE)
    assert [t.name for t in model.calls[0].tools] == [kit.LOAD]

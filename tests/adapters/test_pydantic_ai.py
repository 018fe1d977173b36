"""The pydantic-ai adapter through a real ``Agent.run`` driven by pydantic-ai's ``FunctionModel``."""

from __future__ import annotations

from types import ModuleType

import pytest

from harness import Harness, RuntimeContext
from harness.adapters import UserContextError
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL, require
from tests.support.catalog import read_catalog

require("pydantic_ai", "pydantic-ai")


async def test_a_run_loads_and_runs_the_market_skill_for_its_user(agent: Harness, kit: ModuleType) -> None:
    script = kit.Script(kit.call(kit.LOAD, skillId=MARKET_SKILL), kit.run_forecast, kit.reply("sunny"))
    pyd = kit.Agent(kit.FunctionModel(script), deps_type=RuntimeContext, toolsets=[kit.SkillsToolset(agent)])
    result = await pyd.run("weather?", deps=ALICE)

    assert result.output == "sunny"
    first = script.seen[0]
    assert MARKET_SKILL in read_catalog(first.instructions or "").described
    assert {t.name for t in first.function_tools} == {kit.LOAD, kit.SHELL}
    loaded, ran = kit.returns(result.all_messages())
    assert MARKET_BODY in loaded
    assert "exit code: 0" in ran and FORECAST in ran


async def test_another_users_skill_is_invisible_and_unloadable(agent: Harness, kit: ModuleType) -> None:
    script = kit.Script(
        kit.call(kit.LOAD, skillId=BOB_SKILL),
        kit.call(kit.LOAD, skillId=BOB_SKILL, path="notes.txt"),
        kit.call(kit.LOAD, skillId=MARKET_SKILL, path=f"../../{BOB.user_id}/skills/{BOB_SKILL}/notes.txt"),
        kit.call(kit.LOAD, skillId=BOB_SKILL, user_id=BOB.user_id),  # the model cannot pick the user
        kit.reply("no"),
    )
    pyd = kit.Agent(kit.FunctionModel(script), deps_type=RuntimeContext, toolsets=[kit.SkillsToolset(agent)])
    result = await pyd.run("bob's notes", deps=ALICE)

    outputs = kit.returns(result.all_messages())
    assert BOB_SKILL not in (script.seen[0].instructions or "")
    assert BOB_SECRET not in " ".join([*(info.instructions or "" for info in script.seen), *outputs])
    assert [output.split(":")[1].strip() for output in outputs] == [
        "SkillNotFound",
        "SkillNotFound",
        "PermissionError",
        "ToolArgumentError",
    ]


async def test_the_user_comes_from_each_runs_deps_through_a_capability(agent: Harness, kit: ModuleType) -> None:
    script = kit.Script(kit.call(kit.LOAD, skillId=BOB_SKILL), kit.reply("ok"), kit.reply("ok"))
    pyd = kit.Agent(
        kit.FunctionModel(script), deps_type=RuntimeContext, capabilities=[kit.Toolset(kit.SkillsToolset(agent))]
    )
    result = await pyd.run("my notes", deps=BOB)
    await pyd.run("my notes", deps=ALICE)

    assert BOB_SKILL in read_catalog(script.seen[0].instructions or "").described
    assert BOB_SECRET in kit.returns(result.all_messages())[0]
    assert BOB_SKILL not in (script.seen[2].instructions or "")


async def test_a_run_without_a_user_fails_before_the_model_is_called(agent: Harness, kit: ModuleType) -> None:
    script = kit.Script(kit.reply("unreachable"))
    pyd = kit.Agent(kit.FunctionModel(script), toolsets=[kit.SkillsToolset(agent)])
    with pytest.raises(UserContextError, match="names no user"):
        await pyd.run("hi")
    assert script.seen == []

"""What the adapters share: the user a run context names, and the lazily imported adapters."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import harness.adapters
from harness import Harness, RuntimeContext
from harness.adapters import SkillBridge, UserContextError, runtime_context_of
from tests.adapters.conftest import ALICE, BOB_SKILL, MARKET_SKILL


@dataclass
class AppContext:
    user_id: str
    tenant: str = "acme"


@dataclass
class Wrapped:
    runtime_context: RuntimeContext


def test_a_runtime_context_is_taken_as_it_is() -> None:
    assert runtime_context_of(ALICE) is ALICE
    assert runtime_context_of(Wrapped(ALICE)) is ALICE


def test_an_object_or_mapping_naming_a_user_becomes_a_runtime_context() -> None:
    assert runtime_context_of(AppContext(user_id="alice")) == RuntimeContext(user_id="alice")
    assert runtime_context_of({"user_id": "bob", "session_id": "s1"}) == RuntimeContext(user_id="bob", session_id="s1")


@pytest.mark.parametrize("value", [None, {}, {"user_id": 7}, object(), "alice"])
def test_a_context_without_a_user_is_refused(value: object) -> None:
    with pytest.raises(UserContextError, match="names no user"):
        runtime_context_of(value)


@pytest.mark.parametrize("user_id", ["../bob", "", ".skills-cache", "a/b"])
def test_an_unsafe_user_id_is_refused(user_id: str) -> None:
    with pytest.raises(UserContextError, match="not valid"):
        runtime_context_of({"user_id": user_id})


def test_the_framework_classes_are_importable_from_the_package() -> None:
    from harness.adapters.deepagents import SkillsBackend
    from harness.adapters.openai_agents import OpenAIAgentsSkills
    from harness.adapters.pydantic_ai import SkillsToolset

    assert harness.adapters.SkillsBackend is SkillsBackend
    assert harness.adapters.OpenAIAgentsSkills is OpenAIAgentsSkills
    assert harness.adapters.SkillsToolset is SkillsToolset
    with pytest.raises(AttributeError):
        _ = harness.adapters.NoSuchAdapter


async def test_a_turn_reports_an_unknown_tool_and_a_bad_argument_as_text(agent: Harness) -> None:
    turn = await SkillBridge(agent).turn(ALICE)
    assert (await turn.call("rm_rf", {})).startswith("error: there is no tool named 'rm_rf'")
    assert (await turn.call("load_skill_through_path", {"skillId": 3})).startswith("error: ToolArgumentError")
    assert MARKET_SKILL in turn.instructions and BOB_SKILL not in turn.instructions

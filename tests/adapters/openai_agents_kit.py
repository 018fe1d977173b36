"""The OpenAI Agents SDK and the helpers over it, for ``test_openai_agents.py`` (its ``kit`` fixture)."""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from harness.adapters.openai_agents import OpenAIAgentsSkills
from tests.adapters.conftest import MARKET_SKILL
from tests.support.catalog import read_catalog

__all__ = [
    "LOAD",
    "SEARCH",
    "SHELL",
    "ModelStep",
    "OpenAIAgentsSkills",
    "Runner",
    "ScriptedModel",
    "assistant_message",
    "function_call",
    "outputs",
    "run_forecast",
    "sdk_agent",
]  # what the tests use, imports included


LOAD = "load_skill_through_path"
SHELL = "execute_shell_command"
SEARCH = "search_skills"

set_tracing_disabled(True)  # the SDK would otherwise try to export traces


def sdk_agent(skills: OpenAIAgentsSkills, model: ScriptedModel) -> Agent[Any]:
    return Agent(
        name="assistant", instructions=skills.instructions("You are terse."), tools=skills.tools(), model=model
    )


def outputs(result: Any) -> list[str]:
    return [str(item.output) for item in result.new_items if isinstance(item, ToolCallOutputItem)]


def run_forecast(call: ModelCall) -> list[Any]:
    """Run the script from the files-root the catalog names (what a real model reads there)."""
    root = read_catalog(call.system_instructions or "").by_name[MARKET_SKILL].files_root
    assert root is not None, call.system_instructions
    return [function_call(SHELL, {"command": f"python3 {root}/scripts/forecast.py"}, call_id="shell")]

"""The harness's skills on an OpenAI Agents SDK ``Agent`` (extra ``[openai-agents]``).

:class:`OpenAIAgentsSkills` gives a plain ``agents.Agent`` two things, both resolved per run
from the run's context (what the application passes as ``Runner.run(..., context=...)``; see
:func:`~harness.adapters.runtime_context_of` for what it may be):

- dynamic instructions: a callable for ``Agent(instructions=...)`` that runs the harness's
  pipeline for the run's user and returns your prompt followed by that user's skill catalog;
- function tools: the harness's own ``load_skill_through_path``, ``execute_shell_command``
  (when the harness's filesystem has a shell) and ``search_skills`` (enabled only on runs
  whose catalog was cut), each serving only the run's user::

    skills = OpenAIAgentsSkills(harness)
    agent = Agent(name="assistant", instructions=skills.instructions("Be brief."), tools=skills.tools())
    result = await Runner.run(agent, "plan my trip", context=RuntimeContext(user_id="alice"))

A run whose context names no user fails with :class:`~harness.adapters.UserContextError`
before the model is called.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from harness.adapters.bridge import SkillBridge, runtime_context_of
from harness.agent.harness import Harness
from harness.context import RuntimeContext
from harness.models.base import ToolSpec

try:
    from agents import Agent, FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(
        "harness.adapters.openai_agents needs the OpenAI Agents SDK: pip install 'agent-skill-harness[openai-agents]'"
    ) from exc

__all__ = ["OpenAIAgentsSkills"]

#: The instructions callable ``Agent(instructions=...)`` takes.
Instructions = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


class OpenAIAgentsSkills:
    """Dynamic instructions and function tools serving ``harness``'s skills to an ``Agent``.

    ``harness`` must be open while the agent runs. ``shell=False`` leaves the shell tool out.
    ``context`` maps the run's context object to a :class:`~harness.RuntimeContext` (default
    :func:`~harness.adapters.runtime_context_of`).
    """

    def __init__(
        self,
        harness: Harness,
        *,
        shell: bool = True,
        context: Callable[[Any], RuntimeContext] = runtime_context_of,
    ) -> None:
        self.bridge = SkillBridge(harness, shell=shell)
        self._context = context

    def instructions(self, prompt: str = "") -> Instructions:
        """An ``instructions`` callable: ``prompt``, then the run's user's skill catalog."""

        async def instructions(run: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            turn = await self.bridge.turn(self._context(run.context))
            return "\n\n".join(part for part in (prompt, turn.instructions) if part)

        return instructions

    def tools(self) -> list[FunctionTool]:
        """The skill tools as ``FunctionTool`` s; each call runs against the run's user's plan."""
        return [self._function_tool(spec) for spec in self.bridge.tool_specs]

    def _function_tool(self, spec: ToolSpec) -> FunctionTool:
        async def invoke(tool_context: ToolContext[Any], arguments: str) -> str:
            turn = await self.bridge.turn(self._context(tool_context.context))
            try:
                parsed = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                return f"error: the arguments of {spec.name} are not JSON: {exc}"
            return await turn.call(spec.name, parsed)

        async def enabled(run: RunContextWrapper[Any], agent: Any) -> bool:
            return spec.name in (await self.bridge.turn(self._context(run.context))).tool_names

        return FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=dict(spec.parameters),
            on_invoke_tool=invoke,
            # The harness's schemas have optional arguments, which strict mode does not allow.
            strict_json_schema=False,
            is_enabled=enabled,
        )

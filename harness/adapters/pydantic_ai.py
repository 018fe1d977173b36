"""The harness's skills as a pydantic-ai toolset (extra ``[pydantic-ai]``).

:class:`SkillsToolset` is an ``AbstractToolset`` whose instructions and tools are resolved per
run: when a run starts (``for_run``) it runs the harness's pipeline for the user the run's
``deps`` name (see :func:`~harness.adapters.runtime_context_of`) and binds the catalog and the
harness's own skill tools to that plan for the whole run::

    agent = Agent(model, deps_type=RuntimeContext, toolsets=[SkillsToolset(harness)])
    result = await agent.run("plan my trip", deps=RuntimeContext(user_id="alice"))

As a capability: ``Agent(model, capabilities=[Toolset(SkillsToolset(harness))])``. The catalog
reaches the model through the toolset's ``get_instructions``; the tools are
``load_skill_through_path``, ``execute_shell_command`` (when the harness's filesystem has a
shell and ``shell`` is on) and ``search_skills`` (when the catalog was cut). A run whose deps
name no user fails with :class:`~harness.adapters.UserContextError` before the model is called.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from harness.adapters.bridge import SkillBridge, SkillTurn, runtime_context_of
from harness.agent.harness import Harness
from harness.context import RuntimeContext

try:
    from pydantic_ai import RunContext
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as exc:  # the framework is an optional extra
    raise ImportError(
        "harness.adapters.pydantic_ai needs pydantic-ai: pip install 'agent-skill-harness[pydantic-ai]'"
    ) from exc

__all__ = ["SkillsToolset"]

# The harness's tools check their own arguments against their schemas (and answer the model
# with the problem), so pydantic-ai only has to hand over a JSON object.
_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


class SkillsToolset(AbstractToolset[Any]):
    """``harness``'s skills for the user of each run: instructions plus the skill tools.

    ``harness`` must be open while the agent runs. ``shell=False`` leaves the shell tool out.
    ``user`` maps the run's ``deps`` to a :class:`~harness.RuntimeContext` (default
    :func:`~harness.adapters.runtime_context_of`). ``id`` names the toolset (durable execution
    needs one). ``max_retries`` is how often pydantic-ai lets the model retry a failed call.
    """

    def __init__(
        self,
        harness: Harness,
        *,
        shell: bool = True,
        user: Callable[[Any], RuntimeContext] = runtime_context_of,
        id: str | None = "harness-skills",
        max_retries: int = 1,
    ) -> None:
        self.bridge = SkillBridge(harness, shell=shell)
        self._user = user
        self._id = id
        self._max_retries = max_retries
        self._turn: SkillTurn | None = None  # set on the per-run copy ``for_run`` returns

    @property
    def id(self) -> str | None:
        return self._id

    async def for_run(self, ctx: RunContext[Any]) -> SkillsToolset:
        """A copy bound to this run's user: the pipeline runs once, at the start of the run."""
        bound = copy.copy(self)
        bound._turn = await self.bridge.turn(self._user(ctx.deps))
        return bound

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The run's user's skill catalog (``None`` when they have no visible skill)."""
        return (await self._current(ctx)).instructions or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        turn = await self._current(ctx)
        return {
            tool.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name, description=tool.description, parameters_json_schema=dict(tool.parameters)
                ),
                max_retries=self._max_retries,
                args_validator=_ARGUMENTS,
            )
            for tool in turn.tools
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return await (await self._current(ctx)).call(name, tool_args)

    async def _current(self, ctx: RunContext[Any]) -> SkillTurn:
        """The run's turn; a toolset used without ``for_run`` prepares one per call."""
        return self._turn if self._turn is not None else await self.bridge.turn(self._user(ctx.deps))

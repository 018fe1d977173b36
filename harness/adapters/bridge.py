"""What every framework adapter shares: one agent's skills, prepared per run for one user.

A framework runs its own loop; the harness still owns the skills. For each run an adapter
turns the framework's run context into a :class:`~harness.RuntimeContext`
(:func:`runtime_context_of`), asks :meth:`SkillBridge.turn` for that user's
:class:`SkillTurn` — the pipeline's plan, the catalog as instructions and the skill tools bound
to that plan — and hands the framework the text and the tools. Preparing is the harness's
per-turn pipeline, so a warm turn touches no file and an edited skill shows on the next run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.adapters.errors import UserContextError
from harness.agent.harness import Harness
from harness.context import RuntimeContext
from harness.models.base import ToolSpec
from harness.pipeline.plan import TurnPlan
from harness.pipeline.search import SkillIndex
from harness.tools.function import Tool
from harness.tools.search import search_tools
from harness.tools.skills import skill_tools

__all__ = ["SkillBridge", "SkillTurn", "runtime_context_of"]

# What a run context may carry instead of a RuntimeContext, the user first.
_FIELDS = ("user_id", "session_id", "environment")


def runtime_context_of(value: object) -> RuntimeContext:
    """The :class:`~harness.RuntimeContext` a framework's run context (or dependencies) carries.

    Accepted, in this order: a ``RuntimeContext``; an object whose ``runtime_context``
    attribute is one; a mapping or an object with a ``user_id`` (and optionally ``session_id``
    and ``environment``) string. Anything else — no context, no user, an unsafe user id —
    raises :class:`UserContextError`: a run without a user gets no skills at all.
    """
    if isinstance(value, RuntimeContext):
        return value
    nested = getattr(value, "runtime_context", None)
    if isinstance(nested, RuntimeContext):
        return nested
    fields = value if isinstance(value, Mapping) else {k: getattr(value, k, None) for k in _FIELDS}
    user_id = fields.get("user_id")
    if not isinstance(user_id, str):
        raise UserContextError(
            f"the run context ({type(value).__name__}) names no user: pass a RuntimeContext, an object with a "
            "runtime_context attribute, or one with a user_id string as the framework's context/deps"
        )
    extra: dict[str, str] = {k: v for k in _FIELDS[1:] if isinstance(v := fields.get(k), str)}
    try:
        return RuntimeContext(user_id=user_id, **extra)
    except ValueError as exc:
        raise UserContextError(f"the run context's user is not valid: {exc}") from exc


@dataclass(frozen=True, kw_only=True)
class SkillTurn:
    """One run of one user: the plan, its catalog as ``instructions`` and the tools bound to it."""

    plan: TurnPlan
    tools: tuple[Tool, ...]

    @property
    def instructions(self) -> str:
        """The ``<available_skills>`` catalog with its header naming the tools ("" when the user
        has no visible skill)."""
        return self.plan.catalog

    @property
    def tool_names(self) -> frozenset[str]:
        """The names of the tools this turn offers."""
        return frozenset(t.name for t in self.tools)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Call one of this turn's tools and return what the model reads.

        A failure (bad arguments, an unknown or another user's skill, a missing file, an unknown
        tool) comes back as ``"error: <Type>: <message>"`` text, as in the harness's own loop:
        the model can correct itself, and the framework's run goes on.
        """
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            return f"error: there is no tool named {name!r}; available: {', '.join(sorted(self.tool_names))}"
        try:
            return await tool.call(arguments)
        except Exception as exc:  # a tool's failure goes back to the model, never ends the run
            return f"error: {type(exc).__name__}: {exc}"


class SkillBridge:
    """Serves ``harness``'s skills to another framework's agent loop, one user per run.

    ``harness`` must be open (``async with Harness(...)``) while the framework runs; the bridge
    owns nothing. ``shell=False`` leaves out ``execute_shell_command`` even when the harness's
    filesystem has a shell. The tools are the harness's own skill tools (load, shell, and search
    when the catalog was cut), with its usage hooks.
    """

    def __init__(self, harness: Harness, *, shell: bool = True) -> None:
        self.harness = harness
        self.shell = shell

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """Every tool a turn may offer, for frameworks that register tools up front: a given
        turn offers a subset (:attr:`SkillTurn.tool_names`; search only when the catalog is cut)."""
        probe = TurnPlan(
            context=RuntimeContext(user_id="tool-specs"),
            filesystem=self.harness.filesystem,
            skills={},
            catalog="",
            shadowed=(),
            diagnostics=(),
            staged=None,
            search=SkillIndex(()),
        )
        return tuple(t.spec for t in self._tools(probe))

    async def turn(self, context: RuntimeContext) -> SkillTurn:
        """Run the harness's per-turn pipeline for ``context`` and bind the skill tools to it."""
        plan = await self.harness.prepare(context)
        return SkillTurn(plan=plan, tools=tuple(self._tools(plan)))

    def _tools(self, plan: TurnPlan) -> list[Tool]:
        return [*skill_tools(plan, usage=self.harness.usage, shell=self.shell), *search_tools(plan)]

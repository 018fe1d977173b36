"""What performs a run's actions: the interface the agent implements for ``run_until_blocked``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from harness.engine.definition import SkillDecl, ToolDecl
from harness.engine.run import Outcome

__all__ = ["Executor"]


class Executor(Protocol):
    """Performs ``call_tool`` and ``invoke_skill`` actions for :meth:`WorkflowEngine.run_until_blocked`.

    Both return the action's :class:`Outcome` (``outcome_id`` and ``action_id`` may be left
    ``None``: the engine fills in the action's id). A failure is an outcome with
    ``status="failed"``; an exception is recorded as a failed outcome too, with the exception as
    its summary. The engine never runs side effects itself. While a method runs,
    :func:`harness.engine.current_action` returns the action's :class:`ActionContext` (its id as
    an idempotency key, the step's reads and contract); an outcome that breaks the contract is
    recorded as a failed attempt.
    """

    async def call_tool(self, tool: ToolDecl, args: Mapping[str, Any]) -> Outcome:
        """Call the declared ``tool`` (``tool.source`` names the harness tool or script) with ``args``."""
        ...

    async def invoke_skill(
        self, skill: SkillDecl, instructions: str, *, allowed_tools: tuple[ToolDecl, ...]
    ) -> Outcome:
        """Run one agent turn with ``skill`` loaded and ``instructions``, using only ``allowed_tools``."""
        ...

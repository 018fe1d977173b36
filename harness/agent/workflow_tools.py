"""Agent tools that let a model drive workflow runs: start, continue with an outcome, status.

``workflow_tools(engine, resolve_skill)`` returns three :class:`harness.tools.function.Tool` objects
bound to ``engine`` (already scoped to the calling user); ``resolve_skill`` maps a skill name
the model uses to its :class:`SkillPackage` (e.g. from the merged skill layers). Each tool
answers with a JSON object describing the run and the ``next`` thing to do. The model can
report outcomes but never confirm a guarded action.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from harness.pipeline.catalog import WORKFLOW_CONTINUE_TOOL, WORKFLOW_START_TOOL
from harness.tools.function import Tool, tool_from_function

if TYPE_CHECKING:  # the engine loads with the first workflow, not with the agent
    from harness.engine.engine import WorkflowEngine
    from harness.engine.package import SkillPackage
    from harness.engine.run import Blocked, Run

__all__ = ["WORKFLOW_TOOL_NAMES", "run_summary", "workflow_tools"]

SkillResolver = Callable[[str], Awaitable["SkillPackage"]]
WORKFLOW_STATUS_TOOL = "workflow_status"
#: The names of the tools :func:`workflow_tools` gives.
WORKFLOW_TOOL_NAMES = (WORKFLOW_START_TOOL, WORKFLOW_CONTINUE_TOOL, WORKFLOW_STATUS_TOOL)


def workflow_tools(engine: WorkflowEngine, resolve_skill: SkillResolver) -> list[Tool]:
    """The ``workflow_start``, ``workflow_continue`` and ``workflow_status`` tools.

    None of them can confirm a blocked action: confirmations come from the application or the
    operator (:meth:`WorkflowEngine.resume` with ``confirm=``, ``harness engine continue
    --confirm``), and the blocked action's id is left out of their answers.
    """

    async def workflow_start(skill: str, run_id: str | None = None, inputs: dict[str, Any] | None = None) -> str:
        """Start a run of a workflow skill; returns the run and its first action.

        Args:
            skill: Name of the workflow skill (marked as a workflow in the skill catalog).
            run_id: Optional id for the run (letters, digits, '.', '_', '-').
            inputs: Initial values for the run's variables (the goal's inputs).
        """
        run = await engine.start(await resolve_skill(skill), run_id=run_id, inputs=inputs or {})
        return await _answer(engine, run)

    async def workflow_continue(
        run_id: str,
        status: Literal["succeeded", "failed"] | None = None,
        summary: str = "",
        outcome_id: str | None = None,
        artifacts: dict[str, str] | None = None,
        state: dict[str, Any] | None = None,
        to_state: str | None = None,
        schema_version: str | None = None,
    ) -> str:
        """Report the outcome of the run's pending action.

        Args:
            run_id: The run.
            status: Whether the pending action succeeded or failed (omit to only read the run).
            summary: What happened, in a sentence or two.
            outcome_id: Identifies this report; sending the same report again changes nothing.
            artifacts: Named results of the action (name to value or run-relative path).
            state: Values merged into the run's variables (checks read them as vars.NAME).
            to_state: The domain state the run moves to, when the workflow declares states.
            schema_version: The schema version of the step's hand-off (default: what the step produces).
        """
        from harness.engine.run import Outcome

        outcome = None
        if status is not None:
            outcome = Outcome(
                status=status,
                summary=summary,
                outcome_id=outcome_id,
                artifacts=artifacts or {},
                state=state or {},
                to_state=to_state,
                schema_version=schema_version,
            )
        return await _answer(engine, await engine.resume(run_id, outcome))

    async def workflow_status(run_id: str) -> str:
        """The run's status, pending or blocked action and what to do next.

        Args:
            run_id: The run.
        """
        return await _answer(engine, await engine.inspect(run_id))

    return [
        tool_from_function(workflow_start, name=WORKFLOW_START_TOOL),
        tool_from_function(workflow_continue, name=WORKFLOW_CONTINUE_TOOL),
        tool_from_function(workflow_status, name=WORKFLOW_STATUS_TOOL),
    ]


def run_summary(run: Run) -> dict[str, Any]:
    """A compact JSON view of ``run`` with a ``next`` sentence for a model."""
    pending = run.pending
    blocked = run.blocked
    return {
        "run_id": run.run_id,
        "skill": run.skill,
        "status": run.status,
        "current_step": run.current_step,
        "iteration": run.iteration,
        "pending_action": (
            {"id": pending.id, "step": pending.step_id, "attempt": pending.attempt, "action": _action(pending.action)}
            if pending
            else None
        ),
        "blocked": ({"kind": blocked.kind, "reason": _reason(blocked)} if blocked else None),
        "reason": run.reason,
        "vars": dict(run.vars),
        "next": _next(run),
    }


def _action(action: Any) -> dict[str, Any]:
    fields = {"type": action.type, "ref": action.ref, "to": action.to, "question": action.question}
    if action.args:
        fields["args"] = dict(action.args)
    if action.instructions:
        fields["instructions"] = action.instructions
    return {k: v for k, v in fields.items() if v is not None}


def _next(run: Run) -> str:
    if run.done:
        return f"nothing: the run is {run.status}."
    if run.blocked is not None:
        if run.blocked.kind == "confirmation":
            return (
                f"tell the user the run waits for their confirmation ({_reason(run.blocked)}); "
                "only the user or the operator can give it, through the application."
            )
        return f"tell the user the run is blocked: {run.blocked.reason}."
    if run.pending is None:
        return "this adaptive run waits for the application to propose its next action."
    from harness.engine.describe import describe_action

    return (
        f"{describe_action(run.pending)}, then call workflow_continue with status and summary "
        f"(outcome_id={run.pending.id!r})."
    )


def _reason(blocked: Blocked) -> str:
    # The action id is what an operator confirms; the model never gets it.
    return blocked.reason.replace(blocked.action.id, "this step")


async def _answer(engine: WorkflowEngine, run: Run) -> str:
    summary = run_summary(run)
    action = await engine.action(run.run_id) if run.pending is not None else None
    if action is not None:
        summary["pending_action"]["contract"] = action.contract()
    return json.dumps(summary, ensure_ascii=False)

"""A workflow step performed by the agent: what its skill turn is told, the ``workflow_report``
tool it reports with, and the outcome a step's script reports.

Inside a skill turn run for a workflow step (``agent.run_workflow``, ``continue_workflow``),
the skill is offered ``workflow_report``: it reports the step's ``status``, ``summary``,
``state`` updates, ``artifacts``, a domain ``to_state`` and the ``schema_version`` of its
hand-off. A report that breaks the step's contract (undeclared writes, a final artifact
replaced, an illegal transition) is refused on the spot so the skill can correct it; the last
accepted report is the step's outcome, and the step's checks then decide. Without a report the
turn's reply is a succeeded outcome, as for any skill turn.

A ``script`` tool reports the same fields by printing, as its last line of output,
``{"workflow_report": {...}}``; the action id reaches it as ``HARNESS_ACTION_ID``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Literal

from filesystems import CommandResult
from harness.pipeline.catalog import WORKFLOW_REPORT_TOOL
from harness.tools.function import Tool, ToolError, tool_from_function
from harness.tools.skills import format_command_result

if TYPE_CHECKING:
    from harness.engine import ActionContext, Outcome

__all__ = ["StepReports", "script_outcome", "step_message"]

_REPORT_KEY = "workflow_report"


class StepReports:
    """The reports one skill turn made for ``action``; the last one is the step's outcome."""

    def __init__(self, action: ActionContext) -> None:
        self.action = action
        self.outcomes: list[Outcome] = []

    def outcome(self, reply: str) -> Outcome:
        """The step's outcome: the last report, else the turn's ``reply`` as a success."""
        from harness.engine import Outcome

        if self.outcomes:
            return self.outcomes[-1]
        return Outcome(status="succeeded", summary=reply)

    def tool(self) -> Tool:
        """The ``workflow_report`` tool bound to this step."""
        action = self.action

        async def workflow_report(
            status: Literal["succeeded", "failed"],
            summary: str = "",
            state: dict[str, Any] | None = None,
            artifacts: dict[str, str] | None = None,
            to_state: str | None = None,
            schema_version: str | None = None,
        ) -> str:
            """Report the outcome of the workflow step you are performing; the step's checks then decide.

            Args:
                status: Whether the step's work succeeded or failed (a failed QA verdict is "failed").
                summary: What you did or found, in a sentence or two.
                state: Values for the run's variables; only the keys the step may write.
                artifacts: Named results (name to value or run-relative path); only the step's writes.
                to_state: The domain state the run moves to (a legal transition), if the workflow has states.
                schema_version: The schema version your hand-off follows (default: the step's produces).
            """
            from harness.engine import Outcome

            try:
                outcome = Outcome(
                    status=status,
                    summary=summary,
                    state=state or {},
                    artifacts=artifacts or {},
                    to_state=to_state,
                    schema_version=schema_version,
                )
            except (TypeError, ValueError) as exc:
                raise ToolError(f"{WORKFLOW_REPORT_TOOL}: {exc}") from exc
            action.check(outcome)
            self.outcomes.append(outcome)
            return json.dumps(
                {
                    "reported": status,
                    "step": action.step_id,
                    "next": "end your turn with a short answer; the step's checks decide what follows",
                },
                ensure_ascii=False,
            )

        return tool_from_function(workflow_report, name=WORKFLOW_REPORT_TOOL)


def step_message(instructions: str, action: ActionContext) -> str:
    """The step's ``instructions`` followed by its contract, for the skill turn."""
    contract = {
        "run": action.run_id,
        "step": action.step_id,
        "attempt": action.attempt,
        "action_id": action.action_id,
        **action.contract(),
    }
    block = json.dumps(contract, ensure_ascii=False, indent=1)
    report = (
        f"Report the step's outcome with {WORKFLOW_REPORT_TOOL} (status, summary, state, artifacts) "
        "before you answer; use action_id to make side effects idempotent."
    )
    return f"{instructions}\n\n<workflow-step>\n{block}\n</workflow-step>\n{report}".lstrip()


def script_outcome(result: CommandResult) -> Outcome:
    """The outcome of a step's script: its ``{"workflow_report": ...}`` last line if it printed
    one (a non-zero exit still fails the step), else succeeded or failed by exit status."""
    from harness.engine import Outcome

    summary = format_command_result(result)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    report = _report(lines[-1]) if lines else None
    if report is None:
        return Outcome(status="succeeded" if result.ok else "failed", summary=summary)
    try:
        outcome = Outcome(
            status=report.get("status", "succeeded"),
            summary=str(report.get("summary") or summary),
            state=report.get("state") or {},
            artifacts=report.get("artifacts") or {},
            to_state=report.get("to_state"),
            schema_version=report.get("schema_version"),
        )
    except (TypeError, ValueError, AttributeError) as exc:
        return Outcome(status="failed", summary=f"the script's {_REPORT_KEY} is invalid: {exc}")
    return outcome if result.ok else dataclasses.replace(outcome, status="failed")


def _report(line: str) -> dict[str, Any] | None:
    try:
        document = json.loads(line)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get(_REPORT_KEY), dict):
        return None
    report: dict[str, Any] = document[_REPORT_KEY]
    return report

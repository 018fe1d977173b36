"""The Comet names of run statuses and trajectory events, where the engine's differ.

The engine's own vocabulary is what it stores and returns; these tables translate it for tools
that speak Comet (``harness engine show --format comet``, the ``comet`` object of ``--json``).
A name missing from a table is spelled the same in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.engine.run import Event, Run

__all__ = ["COMET_EVENTS", "COMET_STATUSES", "comet_event", "comet_status"]

#: Run status → Comet run status.
COMET_STATUSES: Mapping[str, str] = {
    "running": "running",
    "waiting": "awaiting_input",
    "blocked": "blocked",
    "completed": "succeeded",
    "failed": "failed",
    "cancelled": "aborted",
}

#: Trajectory event type → Comet event type.
COMET_EVENTS: Mapping[str, str] = {
    "run_started": "run.started",
    "action_proposed": "action.proposed",
    "action_blocked": "run.blocked",
    "confirmation_given": "confirmation.granted",
    "operator_decision": "run.resolved",
    "outcome_recorded": "action.completed",
    "checks_evaluated": "evals.evaluated",
    "checks_failed": "evals.failed",
    "step_retried": "step.retried",
    "step_completed": "step.completed",
    "handoff_refused": "handoff.rejected",
    "state_changed": "state.changed",
    "run_upgraded": "run.upgraded",
    "run_completed": "run.succeeded",
    "run_failed": "run.failed",
    "run_cancelled": "run.aborted",
}


def comet_status(run: Run) -> str:
    """``run``'s status in Comet's words."""
    return COMET_STATUSES.get(run.status, run.status)


def comet_event(event: Event) -> dict[str, Any]:
    """``event`` as a Comet trajectory entry: ``{seq, at, type, data}`` with Comet's type name."""
    return {
        "seq": event.seq,
        "at": event.at,
        "type": COMET_EVENTS.get(event.type, event.type),
        "data": dict(event.data),
    }

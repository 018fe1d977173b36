"""Comet's side files: ``context.md`` and ``checkpoint.json`` next to a run's record.

A package asks for them with ``side_files`` (Comet: ``sideFiles``) naming either or both. They
are views for people and Comet tools, rewritten after every change of the run: ``context.md``
says in prose where the run stands, ``checkpoint.json`` holds the same in Comet's words. The
engine never reads them back — the authenticated ``run.json`` stays the only source of truth.
"""

from __future__ import annotations

import json
from typing import Any

from harness.engine.comet import comet_status
from harness.engine.definition import Workflow
from harness.engine.describe import describe_action
from harness.engine.run import Run

__all__ = ["SIDE_FILES", "render_side_file"]

#: The side files a package may ask for.
SIDE_FILES = ("context.md", "checkpoint.json")


def render_side_file(name: str, workflow: Workflow, run: Run) -> bytes:
    """The content of side file ``name`` (one of :data:`SIDE_FILES`) for ``run``."""
    if name == "checkpoint.json":
        return (json.dumps(_checkpoint(run), ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
    if name == "context.md":
        return _context(workflow, run).encode()
    raise ValueError(f"no side file {name!r} ({', '.join(SIDE_FILES)})")


def _checkpoint(run: Run) -> dict[str, Any]:
    action = run.next_action
    return {
        "runId": run.run_id,
        "skill": run.skill,
        "status": comet_status(run),
        "revision": run.revision,
        "iteration": run.iteration,
        "currentStep": run.current_step,
        "action": (
            {"id": action.id, "step": action.step_id, "attempt": action.attempt, "type": action.action.type}
            if action
            else None
        ),
        "blocked": {"kind": run.blocked.kind, "reason": run.blocked.reason} if run.blocked else None,
        "reason": run.reason,
        "state": run.domain_state,
        "vars": dict(run.vars),
        "artifacts": dict(run.artifacts),
        "updatedAt": run.updated_at,
    }


def _context(workflow: Workflow, run: Run) -> str:
    lines = [
        f"# {workflow.name} — run {run.run_id}",
        "",
        f"Goal: {workflow.goal.statement}",
        "",
        f"- status: {comet_status(run)}" + (f" ({run.reason})" if run.reason else ""),
        f"- current step: {run.current_step or '-'}",
    ]
    if run.domain_state is not None:
        lines.append(f"- domain state: {run.domain_state}")
    if run.pending is not None:
        lines.append(f"- next: {describe_action(run.pending)}")
    elif run.blocked is not None:
        lines.append(f"- blocked ({run.blocked.kind}): {run.blocked.reason}")
    for title, values in (("Variables", run.vars), ("Artifacts", run.artifacts)):
        if values:
            lines += ["", f"## {title}", ""]
            lines += [f"- `{k}`: {json.dumps(v, ensure_ascii=False)}" for k, v in sorted(values.items())]
    if run.handoffs:
        lines += ["", "## Hand-offs", ""]
        for handoff in run.handoffs:
            schema = f", schema {handoff.schema_version}" if handoff.schema_version else ""
            lines.append(f"- {handoff.from_step} → {handoff.to_step or 'end'} ({handoff.status}{schema})")
    return "\n".join(lines) + "\n"

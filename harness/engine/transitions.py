"""Run transitions as pure functions: (workflow, run, input) → the next run record.

Nothing here does I/O: the engine loads the run, calls one of these, and writes the result
with a compare-and-set. Each transition bumps ``revision`` and leaves its events in
``outbox`` (numbered after ``last_seq``) for the engine to append to the trajectory.

After every outcome of a step its checks (``completion_checks``) are evaluated and recorded
(``checks_evaluated``); a succeeded outcome whose checks fail counts as failed.

Failure routing after an outcome, in this order: a ``next`` map entry for the outcome's status
wins; otherwise a failed outcome retries the step while ``attempt <= max_retries_per_action``;
then the step's ``on_failure``; otherwise the run is ``blocked`` (kind ``retries``) until an
operator decides with :func:`resolve`: retry the step, skip it, or abort the run. A ``next`` of
``None`` (or a map entry ``None``) ends the workflow: it completes if the completion checks pass,
else it fails.

Skill-group contracts: an outcome that writes outside the step's ``writes``, replaces a
``final`` artifact or names an illegal ``to_state`` is refused before anything is recorded
(:class:`OutcomeRefused`). Every hand-off (leaving a step by an outcome) is then checked: the
schema version carried (the outcome's ``schema_version``, default the step's ``produces``) must
equal ``produces`` and be one the next step ``accepts``, the next step's ``requires`` must hold
and the domain state move (the outcome's ``to_state``, default the step's ``moves_to``) must be
a legal transition; a refused hand-off (``handoff_refused``) fails the step, which retries
within its budget and otherwise blocks. An operator's ``skip`` hands off without these checks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any, Literal, TypeAlias

from harness.engine.action import ActionContext
from harness.engine.checks import evaluate_checks
from harness.engine.definition import Action, Step, Workflow
from harness.engine.errors import (
    ChecksFailed,
    OutcomeConflict,
    RequirementUnmet,
    RunStateError,
    UpgradeRefused,
)
from harness.engine.run import (
    Blocked,
    Event,
    HandoffRecord,
    Outcome,
    OutcomeStatus,
    PendingAction,
    RecordedOutcome,
    Run,
    RunStatus,
    action_id,
)

__all__ = [
    "DECISIONS",
    "Decision",
    "action_context",
    "apply_outcome",
    "cancel",
    "confirm",
    "propose",
    "resolve",
    "start",
    "unmet_requirements",
    "upgrade",
]

_WAITING_TYPES = ("ask_user", "handoff")

#: What an operator may decide for a run blocked by an exhausted retry budget.
Decision: TypeAlias = Literal["retry", "skip", "abort"]
DECISIONS: tuple[Decision, ...] = ("retry", "skip", "abort")


def start(workflow: Workflow, *, run_id: str, snapshot: str, inputs: Mapping[str, Any], now: str) -> Run:
    """A new run (revision 1); deterministic runs already hold their entry step's action."""
    run = Run(
        run_id=run_id,
        skill=workflow.name,
        snapshot=snapshot,
        mode=workflow.mode,
        status="running",
        revision=0,
        created_at=now,
        updated_at=now,
        vars=dict(inputs),
        domain_state=workflow.states.initial if workflow.states is not None else None,
    )
    if workflow.mode == "deterministic" and workflow.entry is not None:
        unmet = unmet_requirements(workflow, run, workflow.step(workflow.entry), frozenset())
        if unmet:
            raise RequirementUnmet(
                f"step {workflow.entry!r} requires {'; '.join(unmet)}: pass the missing inputs when starting the run"
            )
    change = _Change(workflow, run, now)
    change.emit("run_started", skill=workflow.name, snapshot=snapshot, mode=workflow.mode)
    if workflow.mode == "deterministic" and workflow.entry is not None:
        change.enter(workflow.entry, attempt=1)
    return change.finish()


def unmet_requirements(workflow: Workflow, run: Run, step: Step, files: frozenset[str]) -> list[str]:
    """What of ``step``'s ``requires`` does not hold: a check that fails (with its detail), or a
    state key / artifact that is neither set nor a file under the run's ``artifacts/``."""
    unmet = []
    checks = {check.id for check in workflow.checks}
    for requirement in step.requires:
        if requirement in checks:
            [result] = evaluate_checks(workflow, run, "step", files, ids=[requirement]).results
            if not result.passed:
                unmet.append(f"{requirement} ({result.detail})")
        elif requirement not in run.vars and requirement not in run.artifacts and requirement not in files:
            unmet.append(f"{requirement!r}, which is not set")
    return unmet


def action_context(workflow: Workflow, run: Run, pending: PendingAction) -> ActionContext:
    """The contract of ``pending`` as the performer sees it (see :class:`ActionContext`)."""
    step = workflow.step(pending.step_id) if run.mode == "deterministic" else None
    machine = workflow.states
    values = {**run.artifacts, **run.vars}
    return ActionContext(
        run_id=run.run_id,
        action_id=pending.id,
        step_id=pending.step_id,
        attempt=pending.attempt,
        workflow=workflow.name,
        reads={name: values[name] for name in (step.reads if step else ()) if name in values},
        writes=step.writes if step else None,
        final={name: run.artifacts[name] for name in sorted(workflow.final_artifacts) if name in run.artifacts},
        domain_state=run.domain_state,
        next_states=machine.transitions.get(run.domain_state or "", ()) if machine is not None else None,
        produces=step.produces if step else None,
    )


def apply_outcome(workflow: Workflow, run: Run, outcome: Outcome, files: frozenset[str], *, now: str) -> Run | None:
    """Apply ``outcome`` to the pending action; ``None`` if it was already applied (no-op).

    Raises :class:`OutcomeConflict` for a known outcome id with different content or an action
    that already has its outcome, :class:`RunStateError` when nothing waits for an outcome.
    """
    pending = run.pending
    outcome_id = outcome.outcome_id or outcome.action_id or (pending.id if pending else None)
    recorded = run.outcomes.get(outcome_id) if outcome_id else None
    if recorded is not None:
        if recorded.fingerprint == outcome.fingerprint() and outcome.action_id in (None, recorded.action_id):
            return None
        raise OutcomeConflict(
            f"outcome {outcome_id!r} was already recorded for action {recorded.action_id} with "
            "different content; submit a new outcome id for a new result"
        )
    if outcome.action_id is not None and (pending is None or outcome.action_id != pending.id):
        answered = [oid for oid, rec in run.outcomes.items() if rec.action_id == outcome.action_id]
        if answered:
            raise OutcomeConflict(f"action {outcome.action_id} already has outcome {answered[0]!r}; the run moved on")
        raise RunStateError(f"action {outcome.action_id} is not the run's pending action")
    if pending is None or outcome_id is None:
        raise RunStateError(f"run {run.run_id} is {run.status}; no action waits for an outcome")
    action_context(workflow, run, pending).check(outcome)
    change = _Change(workflow, run, now, files)
    change.record(outcome_id, pending, outcome)
    if run.mode == "adaptive":
        change.adaptive_outcome(pending, outcome)
    else:
        change.route(pending, outcome)
    return change.finish()


def confirm(workflow: Workflow, run: Run, confirmed: str, *, now: str) -> Run | None:
    """Give the confirmation the blocked action ``confirmed`` waits for; ``None`` if given already."""
    if confirmed in run.confirmations:
        return None
    blocked = run.blocked
    if blocked is None or blocked.action.id != confirmed:
        waiting = f"; action {blocked.action.id} is blocked" if blocked else ""
        raise RunStateError(f"action {confirmed} does not wait for a confirmation (run is {run.status}{waiting})")
    if blocked.kind == "retries":
        raise RunStateError(f"action {confirmed} is blocked ({blocked.reason}); decide with retry, skip or abort")
    if blocked.kind != "confirmation":
        raise RunStateError(
            f"action {confirmed} is blocked by the guardrails ({blocked.reason}); a confirmation "
            "cannot lift that: upgrade the skill or cancel the run"
        )
    change = _Change(workflow, run, now)
    change.run = replace(change.run, confirmations=run.confirmations + (confirmed,))
    change.emit("confirmation_given", action_id=confirmed)
    change.issue(blocked.action)
    return change.finish()


def resolve(workflow: Workflow, run: Run, decision: Decision, files: frozenset[str], *, note: str, now: str) -> Run:
    """An operator's decision for a run blocked by an exhausted retry budget.

    ``retry`` issues the action again with a fresh budget, ``skip`` moves on as if the step had
    succeeded (an adaptive run waits for the next proposal), ``abort`` fails the run. The
    decision is recorded as an ``operator_decision`` event. Raises :class:`RunStateError` when
    the run is not blocked by its retry budget or the decision is unknown.
    """
    if decision not in DECISIONS:
        raise RunStateError(f"decision {decision!r} is not one of {', '.join(DECISIONS)}")
    blocked = run.blocked
    if blocked is None or blocked.kind != "retries":
        why = f"blocked by {blocked.kind} ({blocked.reason})" if blocked else run.status
        raise RunStateError(
            f"run {run.run_id} is {why}; retry, skip and abort decide only a run blocked by an exhausted retry budget"
        )
    pending = blocked.action
    change = _Change(workflow, replace(run, blocked=None, status="running", reason=None), now, files)
    change.emit("operator_decision", action_id=pending.id, step_id=pending.step_id, decision=decision, note=note)
    if decision == "abort":
        change.fail(f"aborted by the operator after {blocked.reason}" + (f": {note}" if note else ""))
    elif run.mode == "adaptive":
        change.run = replace(change.run, failures={**run.failures, _action_key(pending.action): 0})
        if decision == "retry":
            iteration = run.iteration + 1
            new_id = action_id(run.run_id, iteration, pending.step_id)
            change.issue(replace(pending, id=new_id, iteration=iteration, attempt=1))
    elif decision == "retry":
        change.enter(pending.step_id, attempt=1)
    else:
        step = workflow.step(pending.step_id)
        target = step.next.get("succeeded") if isinstance(step.next, Mapping) else step.next
        change.leave(pending, "failed", target)
    return change.finish()


def propose(
    workflow: Workflow,
    run: Run,
    action: Action,
    files: frozenset[str],
    *,
    label: str | None,
    allowed_tools: tuple[str, ...] | None,
    now: str,
) -> Run:
    """Adaptive runs: issue ``action`` as the next pending action, or finish on ``complete``.

    A blocked adaptive run accepts a new proposal (replanning), which is guarded like any other.
    Raises :class:`ChecksFailed` when ``complete`` is proposed before the completion checks pass.
    """
    if workflow.mode != "adaptive":
        raise RunStateError(f"run {run.run_id} is deterministic; actions come from its steps")
    if run.done:
        raise RunStateError(f"run {run.run_id} is {run.status}")
    if run.pending is not None:
        raise RunStateError(f"action {run.pending.id} still waits for its outcome")
    if run.blocked is not None and run.blocked.kind == "retries":
        raise RunStateError(
            f"run {run.run_id} is blocked ({run.blocked.reason}); an operator retries, skips or aborts it"
        )
    change = _Change(workflow, run, now, files)
    if action.type == "complete":
        report = evaluate_checks(workflow, run, "completion", files)
        if not report.passed:
            raise ChecksFailed(
                f"run {run.run_id} cannot complete: checks {', '.join(report.failed)} failed", report.failed
            )
        change.complete(action.note or "complete proposed")
        return change.finish()
    step_id = label or action.type
    iteration = run.iteration + 1
    change.issue(
        PendingAction(
            id=action_id(run.run_id, iteration, step_id),
            iteration=iteration,
            step_id=step_id,
            attempt=run.failures.get(_action_key(action), 0) + 1,
            action=action,
            allowed_tools=allowed_tools if allowed_tools is not None else workflow.guardrails.allowed_tools,
        )
    )
    return change.finish()


def cancel(workflow: Workflow, run: Run, reason: str, *, now: str) -> Run | None:
    """Cancel the run; ``None`` if it is cancelled already. Finished runs cannot be cancelled."""
    if run.status == "cancelled":
        return None
    if run.done:
        raise RunStateError(f"run {run.run_id} is already {run.status}")
    change = _Change(workflow, run, now)
    change.run = replace(run, status="cancelled", pending=None, blocked=None, reason=reason or "cancelled")
    change.emit("run_cancelled", reason=reason)
    return change.finish()


def upgrade(old: Workflow, new: Workflow, run: Run, snapshot: str, *, now: str) -> Run | None:
    """Move ``run`` to the skill version ``new`` (snapshot ``snapshot``); ``None`` if already there.

    Refused (:class:`UpgradeRefused`) for a finished run, a pending action, another name or
    mode, or a current step the new version lacks. A blocked action is re-evaluated.
    """
    if run.snapshot == snapshot:
        return None
    if run.done:
        raise UpgradeRefused(f"run {run.run_id} is {run.status}; only unfinished runs move")
    if run.pending is not None:
        raise UpgradeRefused(f"action {run.pending.id} is pending; report its outcome before upgrading")
    if new.name != old.name:
        raise UpgradeRefused(f"the new version is skill {new.name!r}, the run belongs to {old.name!r}")
    if new.mode != old.mode:
        raise UpgradeRefused(f"the new version is {new.mode}, the run is {old.mode}")
    if run.mode == "deterministic" and run.current_step and not new.has_step(run.current_step):
        raise UpgradeRefused(f"the new version has no step {run.current_step!r}, where the run stands")
    # A version that introduces a state machine starts the run in its initial state.
    state = run.domain_state if run.domain_state is not None or new.states is None else new.states.initial
    change = _Change(new, replace(run, snapshot=snapshot, domain_state=state), now)
    change.emit("run_upgraded", from_snapshot=run.snapshot, to_snapshot=snapshot)
    blocked = run.blocked
    if blocked is not None:
        action = blocked.action
        if run.mode == "deterministic":
            step = new.step(action.step_id)
            action = replace(action, action=step.action, allowed_tools=_step_tools(new, step))
        change.issue(action)
    return change.finish()


def _action_key(action: Action) -> str:
    return f"{action.type}:{action.target or ''}"


def _step_tools(workflow: Workflow, step: Step) -> tuple[str, ...]:
    allowed = workflow.guardrails.allowed_tools
    if step.allowed_tools is None:
        return allowed
    return tuple(tool for tool in step.allowed_tools if tool in allowed)


class _Change:
    """One transition in the making: the evolving record and the events it emits."""

    def __init__(self, workflow: Workflow, run: Run, now: str, files: frozenset[str] = frozenset()) -> None:
        self.workflow = workflow
        self.run = run
        self.now = now
        self.files = files
        self.events: list[Event] = []

    def emit(self, event_type: str, *, at_index: int | None = None, **data: Any) -> None:
        """Add an event (at the end, or at ``at_index``); sequence numbers stay contiguous."""
        index = len(self.events) if at_index is None else at_index
        # Stored events are JSON; keep the in-memory ones identical to what is read back.
        self.events.insert(index, Event(seq=0, at=self.now, type=event_type, data=json.loads(json.dumps(data))))
        first = self.run.last_seq + 1
        self.events = [replace(event, seq=first + i) for i, event in enumerate(self.events)]

    def finish(self) -> Run:
        return replace(
            self.run,
            revision=self.run.revision + 1,
            updated_at=self.now,
            last_seq=self.run.last_seq + len(self.events),
            outbox=tuple(self.events),
        )

    # -- issuing actions -------------------------------------------------------------------------

    def enter(self, step_id: str, *, attempt: int) -> None:
        step = self.workflow.step(step_id)
        iteration = self.run.iteration + 1
        self.issue(
            PendingAction(
                id=action_id(self.run.run_id, iteration, step_id),
                iteration=iteration,
                step_id=step_id,
                attempt=attempt,
                action=step.action,
                allowed_tools=_step_tools(self.workflow, step),
            )
        )

    def issue(self, pending: PendingAction) -> None:
        blocked = self.guard(pending)
        current = pending.step_id if self.run.mode == "deterministic" else self.run.current_step
        if blocked is not None:
            self.run = replace(self.run, status="blocked", pending=None, blocked=blocked, current_step=current)
            self.emit(
                "action_blocked",
                action_id=pending.id,
                step_id=pending.step_id,
                kind=blocked.kind,
                reason=blocked.reason,
            )
            return
        status: RunStatus = "waiting" if pending.action.type in _WAITING_TYPES else "running"
        self.run = replace(
            self.run,
            status=status,
            pending=pending,
            blocked=None,
            iteration=pending.iteration,
            current_step=current,
            reason=None,
        )
        self.emit(
            "action_proposed",
            action_id=pending.id,
            step_id=pending.step_id,
            iteration=pending.iteration,
            attempt=pending.attempt,
            action=asdict(pending.action),
        )

    def guard(self, pending: PendingAction) -> Blocked | None:
        """Why ``pending`` may not be issued, or ``None`` when it may."""
        rails = self.workflow.guardrails
        action = pending.action

        def block(kind: Any, reason: str) -> Blocked:
            return Blocked(kind=kind, reason=reason, action=pending)

        if pending.iteration > rails.max_iterations:
            return block("iterations", f"max_iterations ({rails.max_iterations}) reached")
        pools = {
            "invoke_skill": ("skill", rails.allowed_skills, {s.id for s in self.workflow.skills}),
            "call_tool": ("tool", rails.allowed_tools, {t.id for t in self.workflow.tools}),
            "handoff": ("agent", rails.allowed_agents, {a.id for a in self.workflow.agents}),
        }
        target = action.target or ""
        if action.type in pools:
            what, allowed, declared = pools[action.type]
            if target not in declared:
                return block("guardrail", f"{what} {target!r} is not declared by the workflow")
            if target not in allowed:
                return block("guardrail", f"{what} {target!r} is not allowed by the guardrails")
        tools = pending.allowed_tools
        if tools is not None:
            wider = [tool for tool in tools if tool not in rails.allowed_tools]
            if wider:
                return block("guardrail", f"tools {', '.join(wider)} would widen the guardrails")
            if action.type == "call_tool" and target not in tools:
                return block("guardrail", f"tool {target!r} is not allowed in step {pending.step_id!r}")
        needs = action.type in rails.confirmation_required_for or target in rails.confirmation_required_for
        if needs and pending.id not in self.run.confirmations:
            return block(
                "confirmation",
                f"{action.type} {target or ''} requires confirmation of action {pending.id}".replace("  ", " "),
            )
        return None

    # -- outcomes ----------------------------------------------------------------------------------

    def record(self, outcome_id: str, pending: PendingAction, outcome: Outcome) -> None:
        self.run = replace(
            self.run,
            pending=None,
            vars={**self.run.vars, **outcome.state},
            artifacts={**self.run.artifacts, **outcome.artifacts},
            outcomes={
                **self.run.outcomes,
                outcome_id: RecordedOutcome(action_id=pending.id, fingerprint=outcome.fingerprint()),
            },
        )
        data: dict[str, Any] = {
            "outcome_id": outcome_id,
            "action_id": pending.id,
            "step_id": pending.step_id,
            "status": outcome.status,
            "summary": outcome.summary,
            "artifacts": dict(outcome.artifacts),
            "state": dict(outcome.state),
        }
        # Only when set, so the events of workflows without schemas or states stay as they were.
        for key in ("to_state", "schema_version"):
            if getattr(outcome, key) is not None:
                data[key] = getattr(outcome, key)
        self.emit("outcome_recorded", **data)

    def route(self, pending: PendingAction, outcome: Outcome) -> None:
        step = self.workflow.step(pending.step_id)
        status: OutcomeStatus = outcome.status
        if step.completion_checks:
            report = evaluate_checks(self.workflow, self.run, "step", self.files, ids=step.completion_checks)
            self.emit(
                "checks_evaluated",
                step_id=step.id,
                outcome=outcome.status,
                passed=report.passed,
                results=[{"id": r.id, "passed": r.passed, "detail": r.detail} for r in report.results],
            )
            if status == "succeeded" and not report.passed:
                status = "failed"
                self.emit("checks_failed", step_id=step.id, checks=list(report.failed))
        if isinstance(step.next, Mapping) and status in step.next:
            self.hand_off(pending, outcome, status, step.next[status])
        elif status == "failed":
            reason = f"step {step.id!r} failed after {pending.attempt} attempt(s): {outcome.summary}".rstrip(": ")
            self.fail_step(pending, outcome, reason)
        else:
            self.hand_off(pending, outcome, status, step.next if isinstance(step.next, str) else None)

    def fail_step(self, pending: PendingAction, outcome: Outcome, reason: str, *, fallback: bool = True) -> None:
        """A failed attempt: retry within the budget, else ``on_failure``, else block for an operator."""
        step = self.workflow.step(pending.step_id)
        if pending.attempt <= self.workflow.guardrails.max_retries_per_action:
            self.emit("step_retried", step_id=step.id, attempt=pending.attempt + 1, reason=reason)
            self.enter(step.id, attempt=pending.attempt + 1)
        elif fallback and step.on_failure:
            self.hand_off(pending, outcome, "failed", step.on_failure)
        else:
            self.block_retries(pending, reason)

    def hand_off(self, pending: PendingAction, outcome: Outcome, status: OutcomeStatus, target: str | None) -> None:
        """Leave the step for ``target`` if the hand-off keeps the contract (schema versions,
        the next step's ``requires``, a legal domain state); otherwise the step failed."""
        step = self.workflow.step(pending.step_id)
        schema = outcome.schema_version or step.produces
        # A reported state goes with the reported status; when the step's checks failed the
        # outcome, the step's own ``moves_to`` for the failure applies.
        reported = outcome.to_state if outcome.status == status else None
        to_state = reported or step.moves_to.get(status)
        problem = self.handoff_problem(step, schema, to_state, target)
        if problem is not None:
            self.emit("handoff_refused", step_id=step.id, to_step=target, reason=problem)
            reason = f"step {step.id!r} failed after {pending.attempt} attempt(s): {problem}"
            self.fail_step(pending, outcome, reason, fallback=False)
            return
        if to_state is not None and to_state != self.run.domain_state:
            self.emit("state_changed", step_id=step.id, from_state=self.run.domain_state, to_state=to_state)
            self.run = replace(self.run, domain_state=to_state)
        self.leave(pending, status, target, schema=schema)

    def handoff_problem(self, step: Step, schema: str | None, to_state: str | None, target: str | None) -> str | None:
        if step.produces is not None and schema != step.produces:
            return f"it produced schema {schema!r}, but it declares produces {step.produces!r}"
        machine = self.workflow.states
        if to_state is not None and machine is not None and not machine.allows(self.run.domain_state, to_state):
            return f"illegal transition {self.run.domain_state!r} -> {to_state!r}"
        if target is None:
            return None
        nxt = self.workflow.step(target)
        if nxt.accepts is not None and schema not in nxt.accepts:
            carried = f"schema {schema!r}" if schema else "no schema version"
            return f"the hand-off carries {carried}, but step {target!r} accepts {', '.join(map(repr, nxt.accepts))}"
        unmet = unmet_requirements(self.workflow, self.run, nxt, self.files)
        if unmet:
            return f"step {target!r} requires {'; '.join(unmet)}"
        return None

    def adaptive_outcome(self, pending: PendingAction, outcome: Outcome) -> None:
        key = _action_key(pending.action)
        failures = dict(self.run.failures)
        failures[key] = failures.get(key, 0) + 1 if outcome.status == "failed" else 0
        self.run = replace(self.run, status="running", failures=failures)
        self.handoff(pending, outcome.status, None)
        if failures[key] > self.workflow.guardrails.max_retries_per_action:
            self.block_retries(
                pending, f"{key} failed {failures[key]} time(s) in a row (max_retries_per_action exhausted)"
            )

    def block_retries(self, pending: PendingAction, reason: str) -> None:
        """Stop on an exhausted retry budget until an operator decides (see :func:`resolve`)."""
        blocked = Blocked(kind="retries", reason=reason, action=pending)
        self.run = replace(self.run, status="blocked", pending=None, blocked=blocked, reason=reason)
        self.emit("action_blocked", action_id=pending.id, step_id=pending.step_id, kind="retries", reason=reason)

    def leave(
        self, pending: PendingAction, status: OutcomeStatus, target: str | None, *, schema: str | None = None
    ) -> None:
        if target is None:
            self.handoff(pending, status, None, schema=schema)
            self.finish_workflow()
            return
        # The handoff names what the next step needs (its tools, open confirmations), so it is
        # built after entering that step but recorded before the step's own events.
        mark = len(self.events)
        self.enter(target, attempt=1)
        self.handoff(pending, status, target, at_index=mark, schema=schema)

    def handoff(
        self,
        pending: PendingAction,
        status: OutcomeStatus,
        target: str | None,
        *,
        at_index: int | None = None,
        schema: str | None = None,
    ) -> None:
        rails = self.workflow.guardrails
        run = self.run
        blocked = run.blocked
        nxt = run.next_action if target is not None else None
        record = HandoffRecord(
            from_step=pending.step_id,
            to_step=target,
            action_id=pending.id,
            status=status,
            artifacts=dict(run.artifacts),
            open_confirmations=(blocked.action.id,) if blocked and blocked.kind == "confirmation" else (),
            constraints={
                "allowed_tools": list(nxt.allowed_tools or ()) if nxt else list(rails.allowed_tools),
                "iterations_left": max(rails.max_iterations - run.iteration, 0),
                "max_retries_per_action": rails.max_retries_per_action,
            },
            schema_version=schema,
            domain_state=run.domain_state,
        )
        self.run = replace(run, handoffs=run.handoffs + (record,))
        self.emit("step_completed", at_index=at_index, handoff=asdict(record))

    # -- endings -----------------------------------------------------------------------------------

    def finish_workflow(self) -> None:
        report = evaluate_checks(self.workflow, self.run, "completion", self.files)
        if report.passed:
            self.complete("workflow ended")
        else:
            self.fail(f"completion checks failed: {', '.join(report.failed)}")

    def complete(self, note: str) -> None:
        self.run = replace(self.run, status="completed", pending=None, blocked=None, reason=None)
        self.emit("run_completed", note=note)

    def fail(self, reason: str) -> None:
        self.run = replace(self.run, status="failed", pending=None, blocked=None, reason=reason)
        self.emit("run_failed", reason=reason)

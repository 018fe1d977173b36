"""The values of a workflow run: its record, pending action, outcomes, handoffs and events.

A :class:`Run` is written as one JSON file (``run.json``) with a ``schema_version``; each
trajectory event is one JSON line. :func:`run_to_json` / :func:`run_from_json` convert.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias, cast

from harness.engine.definition import Action

__all__ = [
    "SCHEMA_VERSION",
    "TERMINAL_STATUSES",
    "Blocked",
    "Event",
    "HandoffRecord",
    "Outcome",
    "OutcomeStatus",
    "PendingAction",
    "RecordedOutcome",
    "Run",
    "RunStatus",
    "action_id",
    "canonical_json",
    "event_from_json",
    "run_from_json",
    "run_to_json",
]

SCHEMA_VERSION = 1
RunStatus: TypeAlias = Literal["running", "waiting", "blocked", "completed", "failed", "cancelled"]
OutcomeStatus: TypeAlias = Literal["succeeded", "failed"]
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


def canonical_json(value: Any) -> str:
    """JSON with keys sorted by code point and no insignificant whitespace (for hashing)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def action_id(run_id: str, iteration: int, step_id: str) -> str:
    """The deterministic id of an action: first 16 hex chars of sha256(``run:iteration:step``)."""
    return hashlib.sha256(f"{run_id}:{iteration}:{step_id}".encode()).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class PendingAction:
    """An action the engine proposed and waits on (or that is blocked).

    ``step_id`` is the step (deterministic) or the proposal's label (adaptive); ``attempt``
    counts tries of the step in a row (1 = first); ``allowed_tools`` is what the executor may
    use while performing it (``None`` = the guardrails').
    """

    id: str
    iteration: int
    step_id: str
    attempt: int
    action: Action
    allowed_tools: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Blocked:
    """Why a run is blocked: ``confirmation`` (confirm ``action.id``), ``guardrail`` (outside
    the allowed skills/tools/agents), ``iterations`` (``max_iterations`` reached) or
    ``retries`` (``action`` failed with its retry budget spent: an operator retries, skips or
    aborts)."""

    kind: Literal["confirmation", "guardrail", "iterations", "retries"]
    reason: str
    action: PendingAction


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The result of performing the pending action, reported to :meth:`WorkflowEngine.resume`.

    ``outcome_id`` identifies the report (default: the action id), so a resubmission is a
    no-op; ``action_id`` (optional) names the action it answers, guarding against answering a
    later one by mistake. ``state`` is merged into the run's ``vars``; ``artifacts`` (name →
    value, typically a run-relative path) into its artifacts. ``to_state`` moves the run's
    domain state (a legal transition of the workflow's ``states``); ``schema_version`` says
    which schema the step's hand-off follows (default: the step's ``produces``).
    """

    status: OutcomeStatus
    summary: str = ""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    outcome_id: str | None = None
    action_id: str | None = None
    to_state: str | None = None
    schema_version: str | None = None

    def __post_init__(self) -> None:
        if self.status not in ("succeeded", "failed"):
            raise ValueError(f"outcome status must be 'succeeded' or 'failed', not {self.status!r}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.artifacts.items()):
            raise ValueError("outcome artifacts must map names to strings")
        if not all(isinstance(k, str) for k in self.state):
            raise ValueError("outcome state must be a mapping with string keys")
        canonical_json(dict(self.state))  # refuses what JSON cannot store
        for name in ("to_state", "schema_version"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"outcome {name} must be a non-empty string, not {value!r}")

    def fingerprint(self) -> str:
        """A digest of the reported content (status, summary, artifacts, state)."""
        content = {
            "status": self.status,
            "summary": self.summary,
            "artifacts": dict(self.artifacts),
            "state": dict(self.state),
        }
        # Only when set, so outcomes recorded before these fields keep their fingerprint.
        if self.to_state is not None:
            content["to_state"] = self.to_state
        if self.schema_version is not None:
            content["schema_version"] = self.schema_version
        return hashlib.sha256(canonical_json(content).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class RecordedOutcome:
    """What the run remembers of an applied outcome, to refuse contradicting resubmissions."""

    action_id: str
    fingerprint: str


@dataclass(frozen=True, kw_only=True)
class HandoffRecord:
    """Left by every completed step: where the run goes next and what it carries along.

    ``constraints`` holds the guardrails in force for the next step (allowed tools, iterations
    left, retry budget); ``open_confirmations`` lists action ids still waiting for one;
    ``schema_version`` is the schema the hand-off follows and ``domain_state`` the run's domain
    state after the step (both ``None`` when the workflow does not declare them).
    """

    from_step: str
    to_step: str | None
    action_id: str
    status: OutcomeStatus
    artifacts: Mapping[str, str]
    open_confirmations: tuple[str, ...]
    constraints: Mapping[str, Any]
    schema_version: str | None = None
    domain_state: str | None = None


@dataclass(frozen=True, kw_only=True)
class Event:
    """One trajectory entry; ``seq`` counts from 1 without gaps within a run."""

    seq: int
    at: str
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON line written to ``trajectory.jsonl``."""
        return {
            "schema_version": SCHEMA_VERSION,
            "seq": self.seq,
            "at": self.at,
            "type": self.type,
            "data": dict(self.data),
        }


@dataclass(frozen=True, kw_only=True)
class Run:
    """The state of one run, stored atomically as a whole.

    ``revision`` grows by one with every write (the compare-and-set guard); ``snapshot`` is
    the content hash of the skill version the run is pinned to; ``iteration`` counts issued
    actions. Exactly one of ``pending`` / ``blocked`` is set while the run waits on something;
    an adaptive run that is ``running`` with neither waits for a proposal. ``outbox`` holds the
    events of the latest write until they are in the trajectory. ``domain_state`` is the
    workflow's domain state (``None`` without a ``states`` table).
    """

    run_id: str
    skill: str
    snapshot: str
    mode: Literal["deterministic", "adaptive"]
    status: RunStatus
    revision: int
    created_at: str
    updated_at: str
    iteration: int = 0
    current_step: str | None = None
    pending: PendingAction | None = None
    blocked: Blocked | None = None
    confirmations: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict)
    artifacts: Mapping[str, str] = field(default_factory=dict)
    outcomes: Mapping[str, RecordedOutcome] = field(default_factory=dict)
    failures: Mapping[str, int] = field(default_factory=dict)
    handoffs: tuple[HandoffRecord, ...] = ()
    reason: str | None = None
    last_seq: int = 0
    outbox: tuple[Event, ...] = ()
    domain_state: str | None = None

    @property
    def done(self) -> bool:
        """Whether the run reached completed, failed or cancelled."""
        return self.status in TERMINAL_STATUSES

    @property
    def next_action(self) -> PendingAction | None:
        """The action waiting for an outcome, or the blocked one."""
        if self.pending is not None:
            return self.pending
        return self.blocked.action if self.blocked is not None else None


def run_to_json(run: Run) -> dict[str, Any]:
    """The JSON document stored as ``run.json``."""
    document = asdict(run)
    document["outbox"] = [event.to_json() for event in run.outbox]
    return {"schema_version": SCHEMA_VERSION, **document}


def run_from_json(document: Mapping[str, Any]) -> Run:
    """Rebuild a :class:`Run` from :func:`run_to_json`'s document; ``ValueError`` if unknown."""
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"run record has schema_version {version!r}; this engine reads {SCHEMA_VERSION}")
    d = dict(document)
    blocked = d.get("blocked")
    return Run(
        run_id=d["run_id"],
        skill=d["skill"],
        snapshot=d["snapshot"],
        mode=d["mode"],
        status=d["status"],
        revision=d["revision"],
        created_at=d["created_at"],
        updated_at=d["updated_at"],
        iteration=d["iteration"],
        current_step=d["current_step"],
        pending=_pending(d["pending"]) if d.get("pending") else None,
        blocked=(
            Blocked(kind=blocked["kind"], reason=blocked["reason"], action=_pending(blocked["action"]))
            if blocked
            else None
        ),
        confirmations=tuple(d["confirmations"]),
        vars=d["vars"],
        artifacts=d["artifacts"],
        outcomes={k: RecordedOutcome(**v) for k, v in d["outcomes"].items()},
        failures=d["failures"],
        handoffs=tuple(_handoff(h) for h in d["handoffs"]),
        reason=d["reason"],
        last_seq=d["last_seq"],
        outbox=tuple(event_from_json(e) for e in d["outbox"]),
        domain_state=d.get("domain_state"),
    )


def event_from_json(document: Mapping[str, Any]) -> Event:
    """Rebuild an :class:`Event` from its JSON line."""
    return Event(seq=document["seq"], at=document["at"], type=document["type"], data=document["data"])


def _pending(d: Mapping[str, Any]) -> PendingAction:
    action = dict(d["action"])
    action["options"] = tuple(action.get("options", ()))
    tools = d.get("allowed_tools")
    return PendingAction(
        id=d["id"],
        iteration=d["iteration"],
        step_id=d["step_id"],
        attempt=d["attempt"],
        action=Action(**action),
        allowed_tools=tuple(tools) if tools is not None else None,
    )


def _handoff(d: Mapping[str, Any]) -> HandoffRecord:
    return HandoffRecord(
        from_step=d["from_step"],
        to_step=d["to_step"],
        action_id=d["action_id"],
        status=cast(OutcomeStatus, d["status"]),
        artifacts=d["artifacts"],
        open_confirmations=tuple(d["open_confirmations"]),
        constraints=d["constraints"],
        schema_version=d.get("schema_version"),
        domain_state=d.get("domain_state"),
    )

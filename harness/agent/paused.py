"""A run paused for the app's approval, as data: what the conversation store keeps.

A :class:`PausedRun` holds no code, only what its turn needs to go on anywhere: the turn's
message (to rebuild its plan, tools and model), its messages so far, the calls waiting for a
decision (:class:`WaitingCall`: the judged request, the placeholder its result replaces, the
decision once made) and the steering and follow-up texts it had queued. It is written as JSON
so any replica, or the same one after a restart, can decide and resume it.

The record comes back from a database that people other than the harness can edit, and it
says which command runs and whether the app allowed it, so it is signed (:class:`PausedSeal`):
an HMAC-SHA256 with the workspace's run key (``.harness/engine.key``, the key workflow run
records are signed with) over the record, its owner (agent, user and session) and its
revision. The newest revision of each session's paused run is kept beside the key, so a record
edited in the store, copied from another user's (or agent's, or session's) row, or restored
from an older copy — an approved call that already ran, say — raises
:class:`PausedRunTampered` and nothing of it runs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from filesystems import AbstractFilesystem
from harness.agent.sessions.base import decode_message, encode_message
from harness.approval import ApprovalError, ApprovalKind, Decision, ToolRequest, Waiting
from harness.context import RuntimeContext
from harness.models import Message

if TYPE_CHECKING:
    from harness.engine.store import RunOwner

__all__ = ["PausedRun", "PausedRunTampered", "PausedSeal", "WaitingCall"]

_VERSION = 2
_MAC = "mac"
_REMEDY = "nothing of it ran; send the session a new message to drop it, then ask again"


class PausedRunTampered(ApprovalError):
    """A paused run read from the conversation store fails its check: edited there, copied from
    another user's, agent's or session's record, restored from an older copy, or kept by a
    version that did not sign paused runs. Nothing of it runs."""


@dataclass(kw_only=True)
class WaitingCall:
    """A call that waits for the app: its request, the placeholder result the turn holds in its
    place, and the app's decision once made."""

    request: ToolRequest
    placeholder: str
    decision: Decision | None = None

    @classmethod
    def of(cls, waiting: Waiting) -> WaitingCall:
        """The data of a call the gate made wait."""
        return cls(request=waiting.request, placeholder=waiting.placeholder, decision=waiting.decision)


@dataclass(kw_only=True)
class PausedRun:
    """A run stopped at gated calls that wait for the app (see the module docstring)."""

    message: str
    strict: bool
    turn: list[Message]
    waiting: list[WaitingCall]
    steering: list[str] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    revision: int = 0

    def undecided(self) -> list[str]:
        """The approval ids still waiting for a decision."""
        return [w.request.approval_id for w in self.waiting if w.decision is None]


class PausedSeal:
    """Signs the paused runs of the agent named ``agent`` and checks them when they come back
    (see the module docstring). ``filesystem`` is the workspace root: the run key and the
    revision marks live in its ``.harness/`` (outside every user's area and any sandbox).

    A session's paused runs take increasing revisions (:meth:`next_revision` when a run
    pauses, one more with each decision); :meth:`seen` raises the mark once a revision is
    stored or taken, and :meth:`open` refuses a revision below it."""

    def __init__(self, filesystem: AbstractFilesystem, agent: str) -> None:
        from harness.engine.store import RevisionMarks, RunKey  # the engine's key and marks, loaded on first pause

        self.agent = agent
        self._key = RunKey(filesystem)
        self._marks = RevisionMarks(filesystem)

    async def next_revision(self, context: RuntimeContext) -> int:
        """The revision a new paused run of ``context``'s session takes."""
        owner, run_id = self._mark(context)
        return (await self._marks.newest(owner, run_id) or 0) + 1

    async def seen(self, context: RuntimeContext, revision: int) -> None:
        """Record that ``revision`` of the session's paused run was stored (or, one past it, taken)."""
        owner, run_id = self._mark(context)
        await self._marks.raise_to(owner, run_id, revision)

    async def seal(self, run: PausedRun, context: RuntimeContext) -> str:
        """``run`` (at ``run.revision``) as signed JSON text for ``context``'s session."""
        document: dict[str, Any] = {
            "version": _VERSION,
            "owner": self._owner(context),
            "revision": run.revision,
            "message": run.message,
            "strict": run.strict,
            "turn": [encode_message(message) for message in run.turn],
            "waiting": [_waiting_data(w) for w in run.waiting],
            "steering": run.steering,
            "follow_ups": run.follow_ups,
        }
        document = json.loads(json.dumps(document, ensure_ascii=False, default=str))  # signed as it reads back
        document[_MAC] = await self._key.sign(document)
        return json.dumps(document, ensure_ascii=False)

    async def open(self, text: str, context: RuntimeContext) -> PausedRun:
        """The run :meth:`seal` wrote for ``context``'s session, if it is that record at its
        newest revision; :class:`PausedRunTampered` otherwise."""
        where = f"the paused run of user {context.user_id!r}, session {context.session_id!r}"
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise PausedRunTampered(f"{where} cannot be read; {_REMEDY}")
        if document.get("version") != _VERSION or _MAC not in document:
            raise PausedRunTampered(
                f"{where} was kept by a version that did not sign paused runs, so an edited record cannot be told "
                f"from it; {_REMEDY}"
            )
        mac = document[_MAC]
        if not isinstance(mac, str) or not hmac.compare_digest(mac, await self._key.sign(document)):
            raise PausedRunTampered(
                f"{where} was changed outside the harness, or comes from another workspace (its signature does not "
                f"match this workspace's run key); {_REMEDY}"
            )
        owner = document.get("owner")
        if owner != self._owner(context):
            raise PausedRunTampered(f"{where} belongs to {_describe(owner)}: it was copied into this row; {_REMEDY}")
        run = _run(document, context, where)
        await self._check_fresh(run, context, where)
        return run

    async def _check_fresh(self, run: PausedRun, context: RuntimeContext, where: str) -> None:
        owner, run_id = self._mark(context)
        newest = await self._marks.newest(owner, run_id)
        if newest is not None and run.revision < newest:
            raise PausedRunTampered(
                f"{where} is revision {run.revision}, older than revision {newest} the harness kept since: an "
                f"older copy was restored over it (its calls may have run already); {_REMEDY}"
            )
        if newest is None or run.revision > newest:
            await self._marks.raise_to(owner, run_id, run.revision)

    def _owner(self, context: RuntimeContext) -> dict[str, str]:
        return {"agent": self.agent, "user": context.user_id, "session": context.session_id}

    def _mark(self, context: RuntimeContext) -> tuple[RunOwner, str]:
        """The revision marks' owner and run id of the session's paused runs."""
        from harness.engine.store import RunOwner

        session = hashlib.sha256(context.session_id.encode("utf-8")).hexdigest()
        return RunOwner(agent=self.agent, user=context.user_id), f"paused.{session}"


def _describe(owner: object) -> str:
    if not isinstance(owner, dict):
        return "nobody this harness knows"
    return f"user {owner.get('user')!r}, session {owner.get('session')!r} of agent {owner.get('agent')!r}"


def _run(document: dict[str, Any], context: RuntimeContext, where: str) -> PausedRun:
    try:
        return PausedRun(
            message=str(document["message"]),
            strict=bool(document["strict"]),
            turn=[decode_message(item) for item in document["turn"]],
            waiting=[_waiting(item, context) for item in document["waiting"]],
            steering=[str(text) for text in document["steering"]],
            follow_ups=[str(text) for text in document["follow_ups"]],
            revision=int(document["revision"]),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise PausedRunTampered(f"{where} cannot be read ({type(exc).__name__}: {exc}); {_REMEDY}") from None


def _waiting_data(waiting: WaitingCall) -> dict[str, Any]:
    request, decision = waiting.request, waiting.decision
    return {
        "approval_id": request.approval_id,
        "tool": request.tool,
        "kind": request.kind,
        "subject": request.subject,
        "arguments": dict(request.arguments),
        "agent": request.agent,
        "environment": request.context.environment,
        "skill_roots": list(request.skill_roots),
        "activations": list(request.activations),
        "placeholder": waiting.placeholder,
        "decision": None
        if decision is None
        else {"action": decision.action, "reason": decision.reason, "by": decision.by},
    }


def _waiting(data: dict[str, Any], context: RuntimeContext) -> WaitingCall:
    decision = data["decision"]
    if data["kind"] not in get_args(ApprovalKind):
        raise ValueError(f"unknown kind of call {data['kind']!r}")
    request = ToolRequest(
        approval_id=str(data["approval_id"]),
        tool=str(data["tool"]),
        kind=data["kind"],
        subject=str(data["subject"]),
        arguments=dict(data["arguments"]),
        context=RuntimeContext(
            user_id=context.user_id, session_id=context.session_id, environment=str(data["environment"])
        ),
        agent=str(data["agent"]),
        skill_roots=tuple(str(root) for root in data["skill_roots"]),
        activations=tuple(str(line) for line in data.get("activations", ())),
    )
    return WaitingCall(
        request=request,
        placeholder=str(data["placeholder"]),
        decision=None if decision is None else Decision(**decision),
    )

"""A run paused for the app's approval, as data: what the conversation store keeps.

A :class:`PausedRun` holds no code, only what its turn needs to go on anywhere: the turn's
message (to rebuild its plan, tools and model), its messages so far, the calls waiting for a
decision (:class:`WaitingCall`: the judged request, the placeholder its result replaces, the
decision once made) and the steering and follow-up texts it had queued. It is written as JSON
(:func:`encode_paused`, :func:`decode_paused`) so any replica, or the same one after a restart,
can decide and resume it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, get_args

from harness.agent.sessions.base import decode_message, encode_message
from harness.approval import ApprovalKind, Decision, ToolRequest, Waiting
from harness.context import RuntimeContext
from harness.models import Message

__all__ = ["PausedRun", "WaitingCall", "decode_paused", "encode_paused"]

_VERSION = 1


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

    def undecided(self) -> list[str]:
        """The approval ids still waiting for a decision."""
        return [w.request.approval_id for w in self.waiting if w.decision is None]


def encode_paused(run: PausedRun) -> str:
    """``run`` as JSON text."""
    return json.dumps(
        {
            "version": _VERSION,
            "message": run.message,
            "strict": run.strict,
            "turn": [encode_message(message) for message in run.turn],
            "waiting": [_waiting_data(w) for w in run.waiting],
            "steering": run.steering,
            "follow_ups": run.follow_ups,
        },
        ensure_ascii=False,
        default=str,
    )


def decode_paused(text: str, context: RuntimeContext) -> PausedRun:
    """The run :func:`encode_paused` wrote for ``context``'s user and session (``ValueError``
    for text it did not write)."""
    try:
        data = json.loads(text)
        if data.get("version") != _VERSION:
            raise ValueError(f"unknown paused run version {data.get('version')!r}")
        return PausedRun(
            message=str(data["message"]),
            strict=bool(data["strict"]),
            turn=[decode_message(item) for item in data["turn"]],
            waiting=[_waiting(item, context) for item in data["waiting"]],
            steering=[str(text) for text in data["steering"]],
            follow_ups=[str(text) for text in data["follow_ups"]],
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"a paused run that cannot be read ({type(exc).__name__}: {exc})") from None


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

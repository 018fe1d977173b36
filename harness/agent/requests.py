"""Idempotent runs: a client's retry of a message is answered from the conversation store.

``Harness.run(message, context=..., idempotency_key=KEY)`` (and ``stream``) claims ``KEY`` for
the user's session in the agent's :class:`~harness.agent.sessions.SessionStore` before
anything runs (:func:`claim`): the first run of the key goes ahead, and the turn it stores
carries its :class:`Outcome` in the same transaction (the reply, the calls it paused at, or the
step-limit error). A retry of the key — later, at the same time in this process, or on another
replica sharing the store — runs nothing: it waits while the first run is in progress, then
answers with the stored outcome (:meth:`Outcome.events`, after a :class:`RunReplayed`). A key
sent again with another message raises
:class:`~harness.agent.sessions.IdempotencyKeyReused`.

A run that fails before its turn is stored gives its key up (:meth:`SessionStore.release`),
so the retry runs it; a replica that dies mid-run holds its key for :data:`REQUEST_LEASE`
seconds, after which a retry takes it over. Two runs of one key therefore store one turn at
most: the first to finish answers the key, and a later one stores nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from harness.agent.sessions import SessionStore
from harness.agent.sessions.base import Claim, Completion
from harness.context import RuntimeContext
from harness.events import ApprovalRequested, Event, ModelReplied, RunReplayed
from harness.models import Usage

if TYPE_CHECKING:
    from harness.approval import ToolRequest

__all__ = ["REQUEST_LEASE", "Outcome", "RunRequest", "claim"]

log = logging.getLogger(__name__)

#: Seconds a run holds its idempotency key before a retry may take it over (its replica died).
REQUEST_LEASE = 600.0
#: Longest pause between two looks at a key whose run is in progress elsewhere.
_MOST_WAIT = 1.0


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a run answered: its final ``reply``, the gated calls it stopped at (``approvals``),
    or the ``error`` it raised after storing its turn (the step limit)."""

    reply: str = ""
    approvals: tuple[ApprovalRequested, ...] = ()
    error: str | None = None

    @classmethod
    def paused(cls, requests: Sequence[ToolRequest]) -> Outcome:
        """The outcome of a run that stopped at ``requests``, waiting for the app."""
        return cls(
            approvals=tuple(
                ApprovalRequested(
                    approval_id=r.approval_id, tool=r.tool, kind=r.kind, subject=r.subject, activations=r.activations
                )
                for r in requests
            )
        )

    def encode(self) -> str:
        """The outcome as JSON text (what the store keeps)."""
        data: dict[str, Any] = {"reply": self.reply, "error": self.error}
        data["approvals"] = [
            {
                "approval_id": a.approval_id,
                "tool": a.tool,
                "kind": a.kind,
                "subject": a.subject,
                "activations": a.activations,
            }
            for a in self.approvals
        ]
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def decode(cls, text: str) -> Outcome:
        """The outcome :meth:`encode` wrote."""
        data = json.loads(text)
        approvals = tuple(
            ApprovalRequested(
                approval_id=str(a["approval_id"]),
                tool=str(a["tool"]),
                kind=str(a["kind"]),
                subject=str(a["subject"]),
                activations=tuple(str(line) for line in a["activations"]),
            )
            for a in data["approvals"]
        )
        error = data.get("error")
        return cls(reply=str(data["reply"]), approvals=approvals, error=None if error is None else str(error))

    def events(self, key: str) -> list[Event]:
        """The events a retry of ``key`` gets: :class:`RunReplayed`, then the calls the run
        stopped at, or its reply as a final :class:`ModelReplied` that no model made."""
        if self.approvals:
            return [RunReplayed(key=key), *self.approvals]
        return [RunReplayed(key=key), ModelReplied(content=self.reply, usage=Usage(), final=True)]


@dataclass(kw_only=True, eq=False)
class RunRequest:
    """A run's claim of its idempotency ``key`` (``digest``: of its message; ``token``: the
    claim's), ``done`` once the run's turn was stored with its outcome."""

    key: str
    digest: str
    token: str
    done: bool = False

    def completion(self, outcome: Outcome) -> Completion:
        """What the write of the run's turn carries to answer the key with ``outcome``."""
        return Completion(key=self.key, digest=self.digest, outcome=outcome.encode())


async def claim(
    store: SessionStore, context: RuntimeContext, key: str, message: str, *, lease: float = REQUEST_LEASE
) -> RunRequest | Outcome:
    """Claim ``key`` for a run of ``message`` in ``context``'s session: the claim to run it
    under, or the outcome a run of it stored. While a run of the key is in progress elsewhere,
    wait (looking again at most every second) until it stores its outcome, or its lease ends
    and this caller takes it over."""
    digest = hashlib.sha256(message.encode("utf-8")).hexdigest()
    pause = 0.02
    while True:
        found: Claim = await store.claim(context.user_id, context.session_id, key, digest, lease=lease)
        if found.outcome is not None:
            return Outcome.decode(found.outcome)
        if found.token is not None:
            return RunRequest(key=key, digest=digest, token=found.token)
        if pause == 0.02:
            log.info(
                "user %r, session %r: the run of idempotency key %r is in progress elsewhere; waiting for its answer",
                context.user_id,
                context.session_id,
                key,
            )
        await anyio.sleep(pause)
        pause = min(pause * 2, _MOST_WAIT)

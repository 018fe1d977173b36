"""The runs an app starts: input hooks, then turns, with steering, follow-ups and paused calls.

A run (``run``, ``stream``, ``skill``, ``resume``) is :meth:`Runs.controlled`: ``on_input``
for user input, the turn, then the steering the turn could not take and the follow-ups, each
as a turn of its own (see :mod:`harness.agent.queues` for the queues and paused runs). A run
given an idempotency key first claims it (:mod:`harness.agent.requests`): a retry of the key
is answered with what the first run stored, and nothing runs again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from harness.agent.hooks import Answer, call_hook
from harness.agent.options import ControlOptions
from harness.agent.queues import MessageQueues, RunControl
from harness.agent.turn import StepLimitExceeded, Turns
from harness.context import RuntimeContext
from harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    MessageInjected,
    ModelReplied,
    RunReplayed,
    RunTally,
)
from harness.models import Usage

if TYPE_CHECKING:  # loaded with the agent's approval gate (or the first idempotency key), if it has one
    from harness.agent.requests import RunRequest
    from harness.approval import ApprovalGate, ToolRequest

__all__ = ["RunResult", "Runs", "collect"]


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """The final reply of a turn with its usage and everything that happened on the way.

    ``approvals`` are the gated calls the run stopped at, waiting for the app
    (:meth:`Harness.resolve_approval`, then :meth:`Harness.resume`). ``replayed``: the run's
    idempotency key was answered before, and this is that answer (nothing ran)."""

    reply: str
    usage: Usage
    steps: int
    events: tuple[Event, ...] = field(default=())
    approvals: tuple[ApprovalRequested, ...] = field(default=())
    replayed: bool = False


class Runs:
    """The app's runs of one agent's ``turns``, with its ``control`` options and approval ``gate``."""

    def __init__(self, turns: Turns, control: ControlOptions, gate: ApprovalGate | None) -> None:
        self.turns = turns
        self.control = control
        self.gate = gate
        self.queues = MessageQueues(
            store=turns.sessions, filesystem=turns.toolset.filesystem, agent=turns.name, limits=control.queue_limits
        )

    async def controlled(
        self,
        message: str | None,
        context: RuntimeContext,
        *,
        strict: bool = False,
        user_input: bool = True,
        stream: bool = False,
        idempotency_key: str | None = None,
    ) -> AsyncIterator[Event]:
        """A run the app started: ``on_input`` (for user input), the turn, then the steering it
        could not take and the follow-ups, each as a turn. ``message=None`` resumes the paused
        run. With ``idempotency_key`` (a new message only), a key answered before is answered
        again from the store, and nothing runs (see :mod:`harness.agent.requests`)."""
        if idempotency_key is None or message is None:
            async for event in self._controlled(message, context, strict, user_input, stream, None):
                yield event
            return
        from harness.agent.requests import Outcome, claim  # loaded by the first run with a key

        claimed = await claim(self.turns.sessions, context, idempotency_key, message)
        if isinstance(claimed, Outcome):
            for event in claimed.events(idempotency_key):
                yield event
            if claimed.error is not None:
                raise StepLimitExceeded(claimed.error)
            return
        reply = ""
        try:
            async for event in self._controlled(message, context, strict, user_input, stream, claimed):
                if isinstance(event, ModelReplied) and event.final:
                    reply = event.content
                yield event
            if not claimed.done:  # the run stored no turn of its own (an input hook answered, say)
                done = claimed.completion(Outcome(reply=reply))
                await self.turns.sessions.append(context.user_id, context.session_id, [], done=done)
                claimed.done = True
        finally:
            if not claimed.done:  # it failed before storing its turn: a retry runs it again
                with anyio.CancelScope(shield=True):
                    await self.turns.sessions.release(context.user_id, context.session_id, claimed.key, claimed.token)

    async def _controlled(
        self,
        message: str | None,
        context: RuntimeContext,
        strict: bool,
        user_input: bool,
        stream: bool,
        request: RunRequest | None,
    ) -> AsyncIterator[Event]:
        on_input = self.control.on_input
        if message is not None:
            await self._discard_paused(context)
            if user_input and on_input is not None:
                answer = await call_hook(on_input(message, context))
                if isinstance(answer, Answer):
                    yield ModelReplied(content=answer.text, usage=Usage(), final=True)
                    return
                if answer is not None and not isinstance(answer, str):
                    raise TypeError(f"on_input returned {type(answer).__name__}; return None, text or Answer(text=...)")
                message = message if answer is None else answer
        before_run = self.control.before_run
        async with self.queues.open(context, before_run=before_run, resume=message is None, request=request) as control:
            paused = control.resumed
            text, strict = (paused.message, paused.strict) if paused is not None else (message or "", strict)
            async for event in self.turns.run(text, context, strict=strict, control=control, stream=stream):
                yield event
            while (queued := control.next_queued()) is not None:
                kind, text = queued
                yield MessageInjected(kind=kind, text=text)
                async for event in self.turns.run(text, context, strict=False, control=control, stream=stream):
                    yield event

    async def _discard_paused(self, context: RuntimeContext) -> None:
        """A new message moves the conversation on: a paused run's turn joins the session as it
        stood (its waiting calls never run). An agent without an approval policy never pauses,
        so its turns skip the look-up."""
        if self.gate is None:
            return
        paused = await self.queues.discard(context)
        if paused is not None:
            await self.turns.sessions.append(context.user_id, context.session_id, paused.turn)

    async def queued(self, text: str, context: RuntimeContext) -> tuple[RunControl, str]:
        """The run in progress for ``context`` and ``text`` expanded for it."""
        plan = self.queues.active(context).plan or await self.turns.prepare(context)
        expanded = self.turns.expand(text, plan, user=True).text
        return self.queues.active(context), expanded  # the run may have ended meanwhile

    async def pending(self, context: RuntimeContext) -> list[ToolRequest]:
        """The calls of ``context``'s paused run that wait for a decision."""
        return [w.request for w in await self.queues.waiting(context) if w.decision is None]

    async def decide(
        self, approval_id: str, *, approved: bool, context: RuntimeContext, reviewer: str, reason: str
    ) -> None:
        """The app's decision on a waiting call (see :meth:`Harness.resolve_approval`)."""
        from harness.approval import ApprovalNotFound, Decision  # loaded with a gate, or here

        if self.gate is None:
            raise ApprovalNotFound(f"agent {self.turns.name!r} has no approval policy")
        default = "approved by the app" if approved else "refused by the app"
        decision = Decision(action="allow" if approved else "deny", reason=reason or default, by=f"operator:{reviewer}")
        await self.queues.decide(approval_id, decision, context=context, gate=self.gate)


async def collect(stream: AsyncIterator[Event]) -> RunResult:
    """The events of ``stream`` as a :class:`RunResult`."""
    events = [event async for event in stream]
    tally = RunTally.of(events)
    decided = {e.approval_id for e in events if isinstance(e, ApprovalDecided)}
    waiting = tuple(e for e in events if isinstance(e, ApprovalRequested) and e.approval_id not in decided)
    replayed = any(isinstance(e, RunReplayed) for e in events)
    return RunResult(
        reply=tally.reply,
        usage=tally.usage,
        steps=tally.steps,
        events=tuple(events),
        approvals=waiting,
        replayed=replayed,
    )

"""The runs an app starts: input hooks, then turns, with steering, follow-ups and paused calls.

A run (``run``, ``stream``, ``skill``, ``resume``) is :meth:`Runs.controlled`: ``on_input``
for user input, the turn, then the steering the turn could not take and the follow-ups, each
as a turn of its own (see :mod:`harness.agent.queues` for the queues and paused runs).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.agent.hooks import Answer, call_hook
from harness.agent.options import ControlOptions
from harness.agent.queues import MessageQueues, RunControl
from harness.agent.turn import Turns
from harness.context import RuntimeContext
from harness.events import ApprovalDecided, ApprovalRequested, Event, MessageInjected, ModelReplied, RunTally
from harness.models import Usage

if TYPE_CHECKING:  # loaded with the agent's approval gate, if it has one
    from harness.approval import ApprovalGate, ToolRequest

__all__ = ["RunResult", "Runs", "collect"]


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """The final reply of a turn with its usage and everything that happened on the way.

    ``approvals`` are the gated calls the run stopped at, waiting for the app
    (:meth:`Harness.resolve_approval`, then :meth:`Harness.resume`)."""

    reply: str
    usage: Usage
    steps: int
    events: tuple[Event, ...] = field(default=())
    approvals: tuple[ApprovalRequested, ...] = field(default=())


class Runs:
    """The app's runs of one agent's ``turns``, with its ``control`` options and approval ``gate``."""

    def __init__(self, turns: Turns, control: ControlOptions, gate: ApprovalGate | None) -> None:
        self.turns = turns
        self.control = control
        self.gate = gate
        self.queues = MessageQueues(store=turns.sessions, limits=control.queue_limits)

    async def controlled(
        self,
        message: str | None,
        context: RuntimeContext,
        *,
        strict: bool = False,
        user_input: bool = True,
        stream: bool = False,
    ) -> AsyncIterator[Event]:
        """A run the app started: ``on_input`` (for user input), the turn, then the steering it
        could not take and the follow-ups, each as a turn. ``message=None`` resumes the paused run."""
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
        async with self.queues.open(context, before_run=self.control.before_run, resume=message is None) as control:
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
    return RunResult(reply=tally.reply, usage=tally.usage, steps=tally.steps, events=tuple(events), approvals=waiting)

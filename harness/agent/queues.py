"""Runs in progress per (user, session): their steering and follow-up queues, and paused runs.

A run the app starts (``run``, ``stream``, ``skill``, ``resume``) registers a
:class:`RunControl` under its (user id, session id) while it is in progress:

- ``steer`` texts join the run at the next step boundary (after the current step's tool
  results, or instead of ending when the model has just answered);
- ``follow_up`` texts run as turns of their own after the run's last reply;
- gated calls that wait for the app pause the run: its partial turn is kept as a
  :class:`PausedRun` until ``resolve_approval`` and ``resume``.

Keys are exact (user, session) pairs, so one user's queue never reaches another's run.

What they hold is bounded by :class:`QueueLimits`: a run queues at most ``queued`` steering and
``queued`` follow-up texts (:class:`QueueFull` past that); a user keeps at most
``paused_per_user`` paused runs (a run that would pause past it fails with
:class:`TooManyPausedRuns`, and nobody else's paused run is touched); and when ``paused`` runs
are kept in all, the oldest paused run of the user keeping the most is dropped.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.agent.hooks import BeforeRun, RunStart, call_hook
from harness.approval import ApprovalGate, ApprovalNotFound, ApprovalStillPending, Decision, Waiting, refusal
from harness.context import RuntimeContext
from harness.errors import HarnessError
from harness.events import Event, MessageInjected, ToolReturned
from harness.models import Message

if TYPE_CHECKING:
    from harness.pipeline.plan import TurnPlan

__all__ = ["MessageQueues", "NoActiveRun", "PausedRun", "QueueFull", "QueueLimits", "RunControl", "TooManyPausedRuns"]

log = logging.getLogger(__name__)

Key = tuple[str, str]


class NoActiveRun(HarnessError):
    """``steer`` or ``follow_up`` named a (user, session) with no run in progress."""


class QueueFull(HarnessError):
    """``steer`` or ``follow_up`` found the run's queue at its bound (:attr:`QueueLimits.queued`)."""


class TooManyPausedRuns(HarnessError):
    """A run would pause while its user already keeps :attr:`QueueLimits.paused_per_user` paused runs."""


@dataclass(frozen=True, kw_only=True)
class QueueLimits:
    """Bounds on what the runs of one agent keep in memory for their users.

    ``queued``: steering texts, and follow-up texts, one run may have waiting (each);
    ``paused_per_user``: paused runs (calls waiting for the app) one user may keep, across their
    sessions; ``paused``: paused runs kept in all, for every user.
    """

    queued: int = 100
    paused_per_user: int = 16
    paused: int = 1000

    def __post_init__(self) -> None:
        if self.queued < 1:
            raise ValueError("queued must be at least 1")
        if not 1 <= self.paused_per_user <= self.paused:
            raise ValueError("need 1 <= paused_per_user <= paused")


@dataclass(kw_only=True)
class PausedRun:
    """A run stopped at gated calls that wait for the app: the turn's message (to rebuild its
    tools and model on resume), its messages so far, the waiting calls and the queued texts."""

    message: str
    strict: bool
    turn: list[Message]
    waiting: list[Waiting]
    steering: collections.deque[str]
    follow_ups: collections.deque[str]
    events: list[Event] = field(default_factory=list)


@dataclass(kw_only=True, eq=False)
class RunControl:
    """One run in progress: what its turn needs from the queues, hooks and approvals."""

    key: Key
    limits: QueueLimits = field(default_factory=QueueLimits)
    keep: Callable[[Key, PausedRun], None] | None = None
    before_run: BeforeRun | None = None
    resumed: PausedRun | None = None
    plan: TurnPlan | None = None
    steering: collections.deque[str] = field(default_factory=collections.deque)
    follow_ups: collections.deque[str] = field(default_factory=collections.deque)
    waiting: list[Waiting] = field(default_factory=list)
    paused: PausedRun | None = None

    def steer(self, text: str) -> None:
        """Queue a steering text; :class:`QueueFull` when ``limits.queued`` already wait."""
        self._queue(self.steering, text, "steering")

    def follow_up(self, text: str) -> None:
        """Queue a follow-up text; :class:`QueueFull` when ``limits.queued`` already wait."""
        self._queue(self.follow_ups, text, "follow-up")

    def _queue(self, queue: collections.deque[str], text: str, kind: str) -> None:
        if len(queue) >= self.limits.queued:
            raise QueueFull(
                f"user {self.key[0]!r}, session {self.key[1]!r}: the run already has {len(queue)} {kind} messages "
                "queued (the most one run takes); wait for it to take them"
            )
        queue.append(text)

    def take_steering(self) -> list[str]:
        """The steering texts queued so far (the queue is emptied)."""
        texts = list(self.steering)
        self.steering.clear()
        return texts

    def next_queued(self) -> tuple[str, str] | None:
        """The next text to run as a turn of its own once the run's turn has ended, as
        ``(kind, text)``: steering the turn could not take first, then follow-ups."""
        if self.paused is not None:
            return None
        if self.steering:
            return "steer", self.steering.popleft()
        if self.follow_ups:
            return "follow_up", self.follow_ups.popleft()
        return None

    def pause(self, turn: list[Message], *, message: str, strict: bool) -> bool:
        """Keep the turn when calls wait for the app; ``True`` when the run must stop here.
        Raises :class:`TooManyPausedRuns` when the user may keep no more paused runs."""
        if not self.waiting:
            return False
        paused = PausedRun(
            message=message,
            strict=strict,
            turn=list(turn),
            waiting=list(self.waiting),
            steering=collections.deque(self.steering),
            follow_ups=collections.deque(self.follow_ups),
        )
        if self.keep is not None:
            self.keep(self.key, paused)
        self.paused = paused
        return True

    async def opening(self, turn: list[Message], start: RunStart) -> AsyncIterator[Event]:
        """Set up a turn's messages: a resumed run's partial turn with the app's decisions
        applied, or the first turn of a run with what ``before_run`` adds."""
        self.plan = start.plan
        if self.resumed is not None:
            resumed, self.resumed = self.resumed, None
            turn[:] = resumed.turn
            for event in resumed.events:
                yield event
            for waiting in resumed.waiting:
                async for event in _settle(turn, waiting):
                    yield event
            for text in self.take_steering():  # the pause was a step boundary
                turn.append(Message.user(text))
                yield MessageInjected(kind="steer", text=text)
            return
        if self.before_run is not None:
            hook, self.before_run = self.before_run, None
            extra = await call_hook(hook(start))
            if extra is not None and not isinstance(extra, str):
                raise TypeError(f"before_run returned {type(extra).__name__}; return None or context text")
            if extra:
                turn.insert(0, Message.user(extra))
                yield MessageInjected(kind="context", text=extra)


async def _settle(turn: list[Message], waiting: Waiting) -> AsyncIterator[Event]:
    """Run (or refuse) a waiting call the app decided, putting its result where the
    placeholder stood."""
    decision = waiting.decision
    assert decision is not None
    error = decision.action != "allow"
    if error:
        content = f"error: ToolDenied: {refusal(waiting.request, decision)}"
    else:
        try:
            result = await waiting.execute()
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        except Exception as exc:  # as in the turn: a tool's failure goes back to the model
            content, error = f"error: {type(exc).__name__}: {exc}", True
        for event in waiting.events:  # what the tool reported while it ran (ShellRan, ...)
            yield event
        waiting.events.clear()
    for index, message in enumerate(turn):
        if message.role == "tool" and message.content.endswith(waiting.placeholder):
            turn[index] = Message(role="tool", content=content, tool_call_id=message.tool_call_id, name=message.name)
            yield ToolReturned(
                call_id=message.tool_call_id or "", name=message.name or "", content=content, error=error
            )
            return


class MessageQueues:
    """The runs in progress and the paused runs of one agent, by (user, session).

    Paused runs live in this process, within ``limits`` (see the module docstring); a paused run
    that is dropped never runs its waiting calls."""

    def __init__(self, *, limits: QueueLimits | None = None) -> None:
        self.limits = limits or QueueLimits()
        self._active: dict[Key, list[RunControl]] = {}
        self._paused: dict[Key, PausedRun] = {}

    @contextmanager
    def open(self, context: RuntimeContext, *, before_run: BeforeRun | None, resume: bool) -> Iterator[RunControl]:
        """Register a run of ``context`` for its duration. ``resume`` continues the paused run
        (:class:`ApprovalStillPending` if a call of it is undecided); a new run leaves a paused
        one to :meth:`discard` first."""
        key = _key(context)
        if resume:
            paused = self._paused.get(key)
            if paused is None:
                raise ApprovalNotFound(f"user {key[0]!r}, session {key[1]!r} has no paused run to resume")
            undecided = [w.request.approval_id for w in paused.waiting if w.decision is None]
            if undecided:
                raise ApprovalStillPending(
                    f"approval {', '.join(undecided)} still waits for a decision; call resolve_approval first"
                )
            del self._paused[key]
            control = RunControl(
                key=key,
                limits=self.limits,
                keep=self._keep,
                resumed=paused,
                steering=paused.steering,
                follow_ups=paused.follow_ups,
            )
        else:
            control = RunControl(key=key, limits=self.limits, keep=self._keep, before_run=before_run)
        runs = self._active.setdefault(key, [])
        runs.append(control)
        try:
            yield control
        finally:
            runs.remove(control)
            if not runs:
                del self._active[key]

    def _keep(self, key: Key, paused: PausedRun) -> None:
        """Keep ``key``'s paused run within the limits (see the module docstring)."""
        user = key[0]
        held = sum(1 for other in self._paused if other[0] == user and other != key)
        if held >= self.limits.paused_per_user:
            raise TooManyPausedRuns(
                f"user {user!r} already keeps {held} paused runs waiting for approval (the most one user may "
                f"keep); decide and resume them, or send their sessions a new message, before session {key[1]!r} "
                "can pause"
            )
        self._paused.pop(key, None)
        self._paused[key] = paused
        while len(self._paused) > self.limits.paused:
            counts = collections.Counter(other[0] for other in self._paused)
            largest = max(counts, key=lambda u: counts[u])
            oldest = next(other for other in self._paused if other[0] == largest)
            log.warning(
                "dropping the oldest paused run of user %r (session %r): %d paused runs are kept in all",
                largest,
                oldest[1],
                self.limits.paused,
            )
            del self._paused[oldest]

    def active(self, context: RuntimeContext) -> RunControl:
        """The latest run in progress of ``context``'s user and session."""
        runs = self._active.get(_key(context))
        if not runs:
            raise NoActiveRun(
                f"user {context.user_id!r}, session {context.session_id!r} has no run in progress; "
                "start one with run() or stream()"
            )
        return runs[-1]

    def discard(self, context: RuntimeContext) -> PausedRun | None:
        """Drop ``context``'s paused run (a new message moved the conversation on) and return it."""
        return self._paused.pop(_key(context), None)

    def waiting(self, context: RuntimeContext) -> list[Waiting]:
        """The calls of ``context``'s paused run (decided or not), oldest first."""
        paused = self._paused.get(_key(context))
        return list(paused.waiting) if paused is not None else []

    async def decide(
        self, approval_id: str, decision: Decision, *, context: RuntimeContext, gate: ApprovalGate
    ) -> Waiting:
        """Record the app's decision on a waiting call of ``context``'s paused run (event and
        audit record); the call runs, or is refused, when the run resumes."""
        paused = self._paused.get(_key(context))
        found = next((w for w in paused.waiting if w.request.approval_id == approval_id), None) if paused else None
        if paused is None or found is None:
            raise ApprovalNotFound(
                f"no call of user {context.user_id!r}, session {context.session_id!r} waits for approval {approval_id!r}"
            )
        if found.decision is not None:
            raise ApprovalNotFound(f"approval {approval_id!r} was already decided ({found.decision.action})")
        found.decision = decision
        await gate.record(found.request, decision, paused.events.append)
        return found


def _key(context: RuntimeContext) -> Key:
    return (context.user_id, context.session_id)

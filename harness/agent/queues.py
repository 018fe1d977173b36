"""Runs in progress per (user, session): their steering and follow-up queues, and paused runs.

A run the app starts (``run``, ``stream``, ``skill``, ``resume``) registers a
:class:`RunControl` under its (user id, session id) while it is in progress:

- ``steer`` texts join the run at the next step boundary (after the current step's tool
  results, or instead of ending when the model has just answered);
- ``follow_up`` texts run as turns of their own after the run's last reply;
- gated calls that wait for the app pause the run: its partial turn is kept as a
  :class:`~harness.agent.paused.PausedRun` in the agent's conversation store until
  ``resolve_approval`` and ``resume``, which any replica sharing the store may call (the
  runs in progress, and their queues, live in the process running them). The record is
  signed (:class:`~harness.agent.paused.PausedSeal`) and checked whenever it is read back:
  one edited in the store, copied from another's or restored from an older copy raises
  :class:`~harness.agent.paused.PausedRunTampered` (a new message drops it, unread).

Keys are exact (user, session) pairs, so one user's queue never reaches another's run.

What they hold is bounded by :class:`QueueLimits`: a run queues at most ``queued`` steering and
``queued`` follow-up texts (:class:`QueueFull` past that); a user keeps at most
``paused_per_user`` paused runs (a run that would pause past it fails with
:class:`TooManyPausedRuns`, and nobody else's paused run is touched); and when ``paused`` runs
are kept in all, the oldest paused run of the user keeping the most is dropped.

Only an agent with an approval gate has calls that wait, so the paused-run codec
(:mod:`harness.agent.paused`) and the approval module load with the first run that pauses, is
resumed or is decided: the methods that handle paused runs import them where they run.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from filesystems import AbstractFilesystem
from harness.agent.calls import CallResult
from harness.agent.hooks import BeforeRun, RunStart, call_hook
from harness.agent.sessions import SessionStore
from harness.agent.sessions.base import Completion
from harness.context import RuntimeContext
from harness.errors import HarnessError
from harness.events import Event, MessageInjected, ToolReturned
from harness.models import Message

if TYPE_CHECKING:
    from harness.agent.paused import PausedRun, PausedSeal, WaitingCall
    from harness.agent.requests import RunRequest
    from harness.approval import ApprovalGate, ApprovalNotFound, Decision, ToolRequest, Waiting
    from harness.pipeline.plan import TurnPlan

__all__ = [
    "MessageQueues",
    "NoActiveRun",
    "QueueFull",
    "QueueLimits",
    "RunControl",
    "RunDecided",
    "TooManyPausedRuns",
]

log = logging.getLogger(__name__)

Key = tuple[str, str]
#: Tries to decide or take a paused run that other replicas keep changing meanwhile.
_ATTEMPTS = 5

#: Runs a call the app allowed while its run was paused, in the resumed turn (given the
#: request and the model's call id).
RunDecided = Callable[["ToolRequest", str], Awaitable[CallResult]]


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


@dataclass(kw_only=True, eq=False)
class RunControl:
    """One run in progress: what its turn needs from the queues, hooks and approvals."""

    key: Key
    limits: QueueLimits = field(default_factory=QueueLimits)
    keep: Callable[[Key, PausedRun, Completion | None], Awaitable[None]] | None = None
    before_run: BeforeRun | None = None
    request: RunRequest | None = None
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

    def answering(
        self, *, reply: str = "", waiting: Sequence[ToolRequest] = (), error: str | None = None
    ) -> Completion | None:
        """What the next write of the run's own turn carries to answer the run's idempotency
        key with its outcome: its ``reply``, the calls ``waiting`` for the app, or the ``error``
        it raises (``None`` without a key, or once the key is answered)."""
        request = self.request
        if request is None or request.done:
            return None
        from harness.agent.requests import Outcome  # loaded by the runs that have a key

        return request.completion(Outcome.paused(waiting) if waiting else Outcome(reply=reply, error=error))

    def answered(self, completion: Completion | None) -> None:
        """The write carrying ``completion`` (from :meth:`answering`) was stored."""
        if completion is not None and self.request is not None:
            self.request.done = True

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

    async def pause(self, turn: list[Message], *, message: str, strict: bool) -> bool:
        """Keep the turn when calls wait for the app; ``True`` when the run must stop here.
        Raises :class:`TooManyPausedRuns` when the user may keep no more paused runs."""
        if not self.waiting:
            return False
        from harness.agent.paused import PausedRun, WaitingCall

        paused = PausedRun(
            message=message,
            strict=strict,
            turn=list(turn),
            waiting=[WaitingCall.of(waiting) for waiting in self.waiting],
            steering=list(self.steering),
            follow_ups=list(self.follow_ups),
        )
        if self.keep is not None:
            done = self.answering(waiting=[w.request for w in paused.waiting])
            await self.keep(self.key, paused, done)
            self.answered(done)
        self.paused = paused
        return True

    async def opening(self, turn: list[Message], start: RunStart, run: RunDecided) -> AsyncIterator[Event]:
        """Set up a turn's messages: a resumed run's partial turn with the app's decisions
        applied (an allowed call runs through ``run``), or the first turn of a run with what
        ``before_run`` adds."""
        self.plan = start.plan
        if self.resumed is not None:
            from harness.approval import decided_event

            resumed, self.resumed = self.resumed, None
            turn[:] = resumed.turn
            for waiting in resumed.waiting:
                assert waiting.decision is not None
                yield decided_event(waiting.request, waiting.decision)
            for waiting in resumed.waiting:
                async for event in _settle(turn, waiting, run):
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


async def _settle(turn: list[Message], waiting: WaitingCall, run: RunDecided) -> AsyncIterator[Event]:
    """Run (or refuse) a waiting call the app decided, putting its result where the
    placeholder stood."""
    decision = waiting.decision
    assert decision is not None
    for index, message in enumerate(turn):
        if message.role == "tool" and message.content.endswith(waiting.placeholder):
            call_id = message.tool_call_id or ""
            if decision.action != "allow":
                from harness.approval import refusal

                result = CallResult(
                    content=f"error: ToolDenied: {refusal(waiting.request, decision)}", error_type="ToolDenied"
                )
            else:
                result = await run(waiting.request, call_id)
                for event in result.events:  # what the tool reported while it ran (ShellRan, ...)
                    yield event
            turn[index] = Message(role="tool", content=result.content, tool_call_id=call_id, name=message.name)
            yield ToolReturned(
                call_id=call_id,
                name=message.name or "",
                content=result.content,
                error=result.error_type is not None,
                error_type=result.error_type,
                duration=result.duration,
            )
            return


class MessageQueues:
    """The runs in progress of one agent (named ``agent``), by (user, session), and its paused
    runs, kept in the conversation ``store`` (so any replica, or this one after a restart, can
    decide and resume them) within ``limits`` (see the module docstring), signed with the key
    of the workspace ``filesystem``; a paused run that is dropped never runs its waiting calls."""

    def __init__(
        self, *, store: SessionStore, filesystem: AbstractFilesystem, agent: str, limits: QueueLimits | None = None
    ) -> None:
        self.store = store
        self.limits = limits or QueueLimits()
        self.filesystem = filesystem
        self.agent = agent
        self._seal: PausedSeal | None = None
        self._active: dict[Key, list[RunControl]] = {}

    @property
    def seal(self) -> PausedSeal:
        """What signs and checks this agent's paused runs (built on first use)."""
        if self._seal is None:
            from harness.agent.paused import PausedSeal

            self._seal = PausedSeal(self.filesystem, self.agent)
        return self._seal

    @asynccontextmanager
    async def open(
        self,
        context: RuntimeContext,
        *,
        before_run: BeforeRun | None,
        resume: bool,
        request: RunRequest | None = None,
    ) -> AsyncIterator[RunControl]:
        """Register a run of ``context`` for its duration. ``resume`` takes the paused run out
        of the store to continue it (:class:`ApprovalStillPending` if a call of it is
        undecided); a new run leaves a paused one to :meth:`discard` first. ``request`` is a
        new run's claimed idempotency key, answered when its turn is stored."""
        key = _key(context)
        if resume:
            paused = await self._take(context)
            control = RunControl(
                key=key,
                limits=self.limits,
                keep=self._keep,
                resumed=paused,
                steering=collections.deque(paused.steering),
                follow_ups=collections.deque(paused.follow_ups),
            )
        else:
            control = RunControl(key=key, limits=self.limits, keep=self._keep, before_run=before_run, request=request)
        runs = self._active.setdefault(key, [])
        runs.append(control)
        try:
            yield control
        finally:
            runs.remove(control)
            if not runs:
                del self._active[key]

    async def _take(self, context: RuntimeContext) -> PausedRun:
        """Remove ``context``'s paused run from the store when every call of it is decided."""
        from harness.approval import ApprovalStillPending

        for _ in range(_ATTEMPTS):
            text, paused = await self._read(context)
            undecided = paused.undecided()
            if undecided:
                raise ApprovalStillPending(
                    f"approval {', '.join(undecided)} still waits for a decision; call resolve_approval first"
                )
            if await self._replace(context, text, None):
                await self.seal.seen(context, paused.revision + 1)  # taken: this revision never runs again
                return paused
        raise self._busy(context)

    async def _keep(self, key: Key, paused: PausedRun, done: Completion | None = None) -> None:
        """Keep ``key``'s paused run within the limits (see the module docstring), signed at the
        session's next revision; ``done`` answers the run's idempotency key with it."""
        user, session = key
        context = RuntimeContext(user_id=user, session_id=session)
        paused.revision = await self.seal.next_revision(context)
        kept = await self.store.keep_paused(
            user,
            session,
            await self.seal.seal(paused, context),
            per_user=self.limits.paused_per_user,
            total=self.limits.paused,
            done=done,
        )
        if not kept:
            raise TooManyPausedRuns(
                f"user {user!r} already keeps {self.limits.paused_per_user} paused runs waiting for approval (the "
                f"most one user may keep); decide and resume them, or send their sessions a new message, before "
                f"session {session!r} can pause"
            )
        await self.seal.seen(context, paused.revision)

    async def _read(self, context: RuntimeContext) -> tuple[str, PausedRun]:
        """``context``'s paused run as stored and as checked (:class:`PausedRunTampered`);
        :class:`ApprovalNotFound` when there is none."""
        from harness.approval import ApprovalNotFound

        text = await self.store.paused(context.user_id, context.session_id)
        if text is None:
            raise ApprovalNotFound(
                f"user {context.user_id!r}, session {context.session_id!r} has no paused run to resume"
            )
        return text, await self.seal.open(text, context)

    async def _replace(self, context: RuntimeContext, text: str, new: str | None) -> bool:
        """Replace the paused run ``text`` with ``new`` (``None``: take it out), in one
        transaction; ``False`` when another replica changed or took it since it was read."""

        def unchanged(current: str) -> None:
            if current != text:
                raise _Changed

        def replaced(current: str) -> str:
            unchanged(current)
            return new or ""

        try:
            if new is None:
                found = await self.store.take_paused(context.user_id, context.session_id, unchanged)
            else:
                found = await self.store.update_paused(context.user_id, context.session_id, replaced)
        except _Changed:
            return False
        return found is not None

    @staticmethod
    def _busy(context: RuntimeContext) -> HarnessError:
        from harness.approval import ApprovalError

        return ApprovalError(
            f"the paused run of user {context.user_id!r}, session {context.session_id!r} kept changing while it was "
            "being decided or resumed elsewhere; try again"
        )

    def active(self, context: RuntimeContext) -> RunControl:
        """The latest run in progress of ``context``'s user and session."""
        runs = self._active.get(_key(context))
        if not runs:
            raise NoActiveRun(
                f"user {context.user_id!r}, session {context.session_id!r} has no run in progress; "
                "start one with run() or stream()"
            )
        return runs[-1]

    async def discard(self, context: RuntimeContext) -> PausedRun | None:
        """Drop ``context``'s paused run (a new message moved the conversation on) and return it
        (``None`` when there was none, or it fails its check: then it is dropped unread)."""
        from harness.agent.paused import PausedRunTampered

        user, session = _key(context)
        # A plain read first: most messages find no paused run, and taking one locks its row.
        text = await self.store.paused(user, session)
        if text is None:
            return None
        try:
            paused = await self.seal.open(text, context)
        except PausedRunTampered as exc:
            log.warning("dropped a paused run unread: %s", exc)
            await self.store.take_paused(user, session)
            return None
        if not await self._replace(context, text, None):
            return None  # resumed or replaced meanwhile, elsewhere
        await self.seal.seen(context, paused.revision + 1)
        return paused

    async def waiting(self, context: RuntimeContext) -> list[WaitingCall]:
        """The calls of ``context``'s paused run (decided or not), oldest first."""
        text = await self.store.paused(context.user_id, context.session_id)
        return (await self.seal.open(text, context)).waiting if text is not None else []

    async def decide(
        self, approval_id: str, decision: Decision, *, context: RuntimeContext, gate: ApprovalGate
    ) -> WaitingCall:
        """Record the app's decision on a waiting call of ``context``'s paused run (in the store,
        as the run's next revision, and as an audit record); the call runs, or is refused, when
        the run resumes."""
        from harness.approval import ApprovalNotFound

        for _ in range(_ATTEMPTS):
            text = await self.store.paused(context.user_id, context.session_id)
            if text is None:
                raise self._not_found(approval_id, context)
            paused = await self.seal.open(text, context)
            found = next((w for w in paused.waiting if w.request.approval_id == approval_id), None)
            if found is None:
                raise self._not_found(approval_id, context)
            if found.decision is not None:
                raise ApprovalNotFound(f"approval {approval_id!r} was already decided ({found.decision.action})")
            found.decision = decision
            paused.revision += 1
            if await self._replace(context, text, await self.seal.seal(paused, context)):
                await self.seal.seen(context, paused.revision)
                await gate.record(found.request, decision, lambda event: None)  # the event comes with the resumed run
                return found
        raise self._busy(context)

    @staticmethod
    def _not_found(approval_id: str, context: RuntimeContext) -> ApprovalNotFound:
        from harness.approval import ApprovalNotFound

        return ApprovalNotFound(
            f"no call of user {context.user_id!r}, session {context.session_id!r} waits for approval {approval_id!r}"
        )


class _Changed(Exception):
    """The paused run changed between its read and its write."""


def _key(context: RuntimeContext) -> Key:
    return (context.user_id, context.session_id)

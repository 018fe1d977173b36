"""The contract of a conversation store: :class:`SessionStore` and the :class:`Session` it serves.

A store keeps, per (user id, session id), the conversation's messages (at most
``max_messages``, oldest dropped) and the ids of the skills whose SKILL.md the conversation has
already loaded; per (user id, session id), at most one *paused run* (calls waiting for the
app's approval) as an opaque text the agent encodes; and the *requests* answered under an
idempotency key, so that a client's retry of a turn is answered from the store instead of run
again. Users never share a conversation: every key is the exact pair, compared byte for byte,
and ids a store could fold together (case, accents, surrounding spaces, invisible or
non-NFC characters) are refused before they reach one.

The public methods check their arguments and apply the bounds; a backend implements the
private primitives (``_read``, ``_append``, ...), each one transaction.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from filesystems import AsyncResource, validate_user_id
from harness.context import validate_exact_id, validate_session_id
from harness.errors import HarnessError
from harness.models import Message, ToolCall

if TYPE_CHECKING:  # an annotation: a caller passing a timedelta has datetime loaded
    from datetime import timedelta

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_REQUESTS",
    "Claim",
    "ClaimFound",
    "Completion",
    "IdempotencyKeyReused",
    "PausedChange",
    "PausedLimits",
    "RequestAnswer",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "SessionStoreUnavailable",
    "TurnWrite",
    "decode_loaded",
    "decode_message",
    "encode_message",
]

log = logging.getLogger(__name__)

#: Messages a session keeps unless the store is told otherwise.
DEFAULT_MAX_MESSAGES = 200
#: Answered requests (idempotency keys) one user keeps unless the store is told otherwise.
DEFAULT_MAX_REQUESTS = 1000

#: Changes a paused run's text inside the store's transaction; may raise to leave it as it was.
PausedChange = Callable[[str], str]


class SessionError(HarnessError):
    """A conversation store failed."""


class SessionStoreUnavailable(SessionError):
    """The store's database could not be reached or refused a query (the message says why)."""


class IdempotencyKeyReused(SessionError):
    """An idempotency key already stands for a different message in this conversation."""


@dataclass(frozen=True, kw_only=True)
class Claim:
    """What :meth:`SessionStore.claim` found for an idempotency key.

    ``token`` is set when the caller now runs the request: it stores the turn with a
    :class:`Completion`, or gives the key up with :meth:`SessionStore.release`. ``outcome`` is
    set when the request was answered: the text its :class:`Completion` stored. Neither is set
    while another caller runs it, until ``lease_until`` (seconds since the epoch) passes."""

    token: str | None = None
    outcome: str | None = None
    lease_until: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Completion:
    """Answers the request of idempotency key ``key`` (``digest``: of its message, as claimed)
    with ``outcome`` (what a retry is told), in the same transaction that stores its turn
    (:meth:`SessionStore.append`) or its paused run (:meth:`SessionStore.keep_paused`)."""

    key: str
    digest: str
    outcome: str


@dataclass(kw_only=True)
class Session:
    """One conversation: its messages and the skills whose SKILL.md it has already loaded."""

    messages: list[Message] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)


@dataclass(frozen=True, kw_only=True)
class SessionInfo:
    """One stored conversation of a user: its id, how many messages it keeps and when it last
    changed (seconds since the epoch)."""

    session_id: str
    messages: int
    updated: float


class SessionStore(AsyncResource, ABC):
    """Where conversations (and runs paused for approval) live; keys are (user id, session id).

    ``max_messages`` bounds each session's history: after an append only the newest
    ``max_messages`` are kept, and a history never starts with tool results whose call was
    dropped. ``max_age`` (seconds or a ``timedelta``; ``None``: forever) is the retention: a
    session untouched for longer reads as empty, and :meth:`prune` deletes it along with paused
    runs older than that. ``now`` is the clock (seconds since the epoch).

    **Concurrent turns.** :meth:`append` adds one turn's messages in one transaction, after
    whatever the session holds by then, so two turns of one session (on two replicas) both land,
    each turn's messages together, in the order the appends commit; nothing is lost or written
    twice. A turn sees the history as it stood when the turn read it (:meth:`get`), not the
    messages of a turn still running elsewhere. A process that dies mid-turn loses that turn
    only: nothing of a turn is written before its end.

    **Idempotent turns.** :meth:`claim` takes an idempotency key for a request (the digest of
    its message): the first caller runs it, and stores its turn with a :class:`Completion` in
    the same transaction as the turn, so a key is answered once and its turn stored once. A
    later claim of the key gets the stored outcome; one made while the request runs elsewhere
    gets neither and waits; one with another message raises :class:`IdempotencyKeyReused`. A
    user keeps at most ``max_requests`` answered keys (the oldest dropped); they go with their
    conversation (:meth:`delete`, :meth:`delete_user`) and with the retention.

    User ids must be valid (:func:`filesystems.validate_user_id`); session ids and idempotency
    keys are non-empty, at most 255 UTF-8 bytes, and refused as user ids are for control,
    format and line-separator characters, surrounding whitespace and text not in NFC (``ValueError``
    otherwise): ids a store would fold together never reach one. Database failures raise
    :class:`SessionStoreUnavailable`.
    """

    def __init__(
        self,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ) -> None:
        super().__init__()
        if max_messages < 2:
            raise ValueError("max_messages must be at least 2")
        if max_requests < 1:
            raise ValueError("max_requests must be at least 1")
        seconds = _seconds(max_age)
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"max_age must be a positive duration, got {max_age!r}")
        self.max_messages = max_messages
        self.max_age: float | None = seconds
        self.max_requests = max_requests
        self._now = now

    # -- conversations ---------------------------------------------------------------------

    async def get(self, user_id: str, session_id: str) -> Session:
        """The session (its newest ``max_messages`` messages and loaded skills), or a new empty
        one. A stored message that cannot be read is left out (and logged), never fatal."""
        _check(user_id, session_id)
        rows, loaded = await self._read(user_id, session_id, self.max_messages, self._since())
        messages = []
        for row in rows:
            try:
                messages.append(row if isinstance(row, Message) else decode_message(row))
            except (ValueError, TypeError, KeyError) as exc:
                log.warning(
                    "session %r of user %r: skipping a message that cannot be read (%s)", session_id, user_id, exc
                )
        while messages and messages[0].role == "tool":  # its call was trimmed away
            messages.pop(0)
        return Session(messages=messages, loaded=set(loaded))

    async def append(
        self,
        user_id: str,
        session_id: str,
        messages: Sequence[Message],
        *,
        loaded: Collection[str] = (),
        done: Completion | None = None,
    ) -> bool:
        """Add ``messages`` (one turn) after the session's messages and ``loaded`` to its loaded
        skills, in one transaction; then keep only the newest ``max_messages``. With ``done``,
        the same transaction answers its claimed request; ``False``, and nothing stored, when
        that request was answered already (by a retry that took over an expired claim)."""
        _check(user_id, session_id)
        if done is not None:
            _check_key(done.key)
        elif not messages and not loaded:
            return True
        rows = [encode_message(message) for message in messages]
        write = TurnWrite(rows=rows, loaded=sorted(set(loaded)), now=self._now(), keep=self.max_messages)
        return await self._append(user_id, session_id, write, self._answer(done))

    async def claim(self, user_id: str, session_id: str, key: str, digest: str, *, lease: float) -> Claim:
        """Claim the request of idempotency ``key`` (``digest``: of its message) for
        ``lease`` seconds, in one transaction (see the class docstring). Raises
        :class:`IdempotencyKeyReused` when the key was claimed for another digest."""
        _check(user_id, session_id)
        _check_key(key)
        now = self._now()
        found = await self._claim(
            user_id, session_id, key, digest, secrets.token_hex(16), now, now + lease, self._since()
        )
        if found.stored_digest is not None:
            raise IdempotencyKeyReused(
                f"idempotency key {key!r} of user {user_id!r}, session {session_id!r} was already used for another "
                "message; a retry must send the same message, a new message needs a new key"
            )
        return found.claim

    async def release(self, user_id: str, session_id: str, key: str, token: str) -> None:
        """Give up a claim that stored nothing (its run failed), so a retry runs the request."""
        _check(user_id, session_id)
        _check_key(key)
        await self._release(user_id, session_id, key, token)

    def _answer(self, done: Completion | None) -> RequestAnswer | None:
        if done is None:
            return None
        return RequestAnswer(
            key=done.key, digest=done.digest, outcome=done.outcome, now=self._now(), per_user=self.max_requests
        )

    async def delete(self, user_id: str, session_id: str) -> bool:
        """Forget one conversation, its paused run and its answered requests; ``False`` when
        there was no conversation."""
        _check(user_id, session_id)
        return await self._delete(user_id, session_id) > 0

    async def delete_user(self, user_id: str) -> int:
        """Forget every conversation, paused run and answered request of ``user_id``; returns
        how many conversations were deleted."""
        validate_user_id(user_id)
        return await self._delete(user_id, None)

    async def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """``user_id``'s stored conversations within the retention, most recently changed first."""
        validate_user_id(user_id)
        return await self._list(user_id, self._since())

    async def prune(self, older_than: timedelta | float | None = None) -> int:
        """Delete conversations untouched, and paused runs and requests kept, for longer than
        ``older_than`` (default: ``max_age``; nothing without either); returns the conversations
        deleted."""
        seconds = _seconds(older_than)
        seconds = self.max_age if seconds is None else seconds
        if seconds is None:
            return 0
        if seconds < 0:
            raise ValueError(f"older_than must not be negative, got {older_than!r}")
        return await self._prune(self._now() - seconds)

    # -- paused runs -------------------------------------------------------------------------

    async def keep_paused(
        self, user_id: str, session_id: str, data: str, *, per_user: int, total: int, done: Completion | None = None
    ) -> bool:
        """Keep ``data`` as the session's paused run (replacing its own earlier one). ``False``,
        and nothing kept, when the user already keeps ``per_user`` paused runs in other
        sessions; past ``total`` paused runs in all, the oldest of the user keeping the most is
        dropped (logged). ``done`` answers the run's claimed request in the same transaction
        (nothing is kept when that request was answered already)."""
        _check(user_id, session_id)
        if done is not None:
            _check_key(done.key)
        return await self._keep_paused(
            user_id, session_id, data, PausedLimits(now=self._now(), per_user=per_user, total=total), self._answer(done)
        )

    async def paused(self, user_id: str, session_id: str) -> str | None:
        """The session's paused run, or ``None``."""
        _check(user_id, session_id)
        return await self._paused(user_id, session_id, self._since())

    async def update_paused(self, user_id: str, session_id: str, change: PausedChange) -> str | None:
        """Replace the session's paused run with ``change(run)`` in one transaction (an
        exception from ``change`` leaves it as it was and propagates); ``None`` when there is none."""
        _check(user_id, session_id)
        return await self._update_paused(user_id, session_id, change, False, self._since())

    async def take_paused(
        self, user_id: str, session_id: str, check: Callable[[str], None] | None = None
    ) -> str | None:
        """Remove and return the session's paused run (``None`` when there is none): of two
        replicas taking it at once, one gets it. ``check`` may raise to leave it in place."""
        _check(user_id, session_id)

        def take(data: str) -> str:
            if check is not None:
                check(data)
            return ""

        return await self._update_paused(user_id, session_id, take, True, self._since())

    def _since(self) -> float | None:
        return None if self.max_age is None else self._now() - self.max_age

    # -- what a backend implements -------------------------------------------------------------

    @abstractmethod
    async def _read(
        self, user_id: str, session_id: str, limit: int, since: float | None
    ) -> tuple[Sequence[str | Message], list[str]]:
        """The newest ``limit`` messages, oldest first, encoded (:func:`encode_message`) or as
        they were decoded once, and the loaded skill ids of a session changed at or after
        ``since`` (nothing for an older or unknown one)."""

    @abstractmethod
    async def _append(self, user_id: str, session_id: str, write: TurnWrite, answer: RequestAnswer | None) -> bool:
        """Append ``write.rows`` after the session's messages, add ``write.loaded``, mark it
        changed at ``write.now`` and keep the newest ``write.keep`` messages: one transaction,
        serialised against the other appends of the session. With ``answer``, record it (see
        :class:`RequestAnswer`); when its request was answered already, write nothing and return
        ``False``."""

    @abstractmethod
    async def _claim(
        self,
        user_id: str,
        session_id: str,
        key: str,
        digest: str,
        token: str,
        now: float,
        lease_until: float,
        since: float | None,
    ) -> ClaimFound:
        """In one transaction: the request of ``key``. None (or one created before ``since``):
        create it, pending for ``token`` until ``lease_until``, and return that claim. Another
        digest: return it as ``stored_digest``. Answered: its outcome. Pending past its lease:
        take it over for ``token``. Else: the pending claim's ``lease_until``."""

    @abstractmethod
    async def _release(self, user_id: str, session_id: str, key: str, token: str) -> None:
        """Delete the request of ``key`` if it is still pending for ``token``."""

    @abstractmethod
    async def _delete(self, user_id: str, session_id: str | None) -> int:
        """Delete one session (``None``: all of the user's) with its paused run and requests;
        how many sessions."""

    @abstractmethod
    async def _list(self, user_id: str, since: float | None) -> list[SessionInfo]:
        """The user's sessions changed at or after ``since``, most recent first."""

    @abstractmethod
    async def _prune(self, before: float) -> int:
        """Delete sessions changed, and paused runs and requests kept, before ``before``; how
        many sessions."""

    @abstractmethod
    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, limits: PausedLimits, answer: RequestAnswer | None
    ) -> bool:
        """See :meth:`keep_paused`; one transaction (``limits.now`` is the time kept). With an
        ``answer`` whose request was answered already, keep nothing and return ``True``."""

    @abstractmethod
    async def _paused(self, user_id: str, session_id: str, since: float | None) -> str | None:
        """The session's paused run kept at or after ``since``."""

    @abstractmethod
    async def _update_paused(
        self, user_id: str, session_id: str, change: PausedChange, remove: bool, since: float | None
    ) -> str | None:
        """In one transaction: read the paused run (kept at or after ``since``), call ``change``
        on it, then store the result, or with ``remove`` delete the run and return what was read."""


@dataclass(frozen=True, kw_only=True)
class TurnWrite:
    """One turn as an append writes it: encoded ``rows``, ``loaded`` skill ids, the time
    ``now`` and how many messages to ``keep``."""

    rows: list[str]
    loaded: list[str]
    now: float
    keep: int


@dataclass(frozen=True, kw_only=True)
class RequestAnswer:
    """The outcome of a claimed request, recorded with its turn: the request's ``key`` and
    ``digest``, the ``outcome`` text, the time ``now`` and how many answered requests the user
    keeps (``per_user``).

    Recording it, in the transaction of the turn: when the request is answered already, nothing
    is written (the turn neither); else it is marked answered with ``outcome`` at ``now``
    (created so when it is missing), and the user's oldest answered requests beyond ``per_user``
    are deleted, with their claims whose lease ran out."""

    key: str
    digest: str
    outcome: str
    now: float
    per_user: int


@dataclass(frozen=True, kw_only=True)
class PausedLimits:
    """The bounds a paused run is kept within, and the time it is kept."""

    now: float
    per_user: int
    total: int


@dataclass(frozen=True, kw_only=True)
class ClaimFound:
    """What :meth:`SessionStore._claim` found: the claim, or the digest the key stands for
    when it is another."""

    claim: Claim = field(default_factory=Claim)
    stored_digest: str | None = None


def _check(user_id: str, session_id: str) -> None:
    validate_user_id(user_id)
    validate_session_id(session_id)


def _check_key(key: str) -> None:
    """Raise ``ValueError`` unless ``key`` is a valid idempotency key (the rules of session ids)."""
    validate_exact_id(key, "idempotency key")


def encode_message(message: Message) -> str:
    """``message`` as one line of JSON (what the stores keep)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        data["name"] = message.name
    return json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))


def decode_message(text: str) -> Message:
    """The message :func:`encode_message` wrote (``ValueError`` / ``KeyError`` / ``TypeError``
    for anything else)."""
    data = json.loads(text)
    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=dict(c.get("arguments") or {}))
        for c in data.get("tool_calls") or ()
    )
    return Message(
        role=data["role"],
        content=str(data["content"]),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def decode_loaded(text: str) -> list[str]:
    """The loaded skill ids a store keeps as a JSON list (nothing for a value that is not a
    list of strings: a damaged row costs a reload, never the conversation)."""
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _seconds(duration: timedelta | float | None) -> float | None:
    """``duration`` in seconds (``None`` stays ``None``)."""
    if duration is None or isinstance(duration, (int, float)):
        return duration
    return duration.total_seconds()

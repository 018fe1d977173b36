"""The contract of a conversation store: :class:`SessionStore` and the :class:`Session` it serves.

A store keeps, per (user id, session id), the conversation's messages (at most
``max_messages``, oldest dropped) and the ids of the skills whose SKILL.md the conversation has
already loaded; and, per (user id, session id), at most one *paused run* (calls waiting for the
app's approval) as an opaque text the agent encodes. Users never share a conversation: every
key is the exact pair, compared byte for byte.

The public methods check their arguments and apply the bounds; a backend implements the
private primitives (``_read``, ``_append``, ...), each one transaction.
"""

from __future__ import annotations

import json
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from filesystems import AsyncResource, validate_user_id
from harness.context import validate_session_id
from harness.errors import HarnessError
from harness.models import Message, ToolCall

if TYPE_CHECKING:  # an annotation: a caller passing a timedelta has datetime loaded
    from datetime import timedelta

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "PausedChange",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "SessionStoreUnavailable",
    "decode_loaded",
    "decode_message",
    "encode_message",
]

log = logging.getLogger(__name__)

#: Messages a session keeps unless the store is told otherwise.
DEFAULT_MAX_MESSAGES = 200

#: Changes a paused run's text inside the store's transaction; may raise to leave it as it was.
PausedChange = Callable[[str], str]


class SessionError(HarnessError):
    """A conversation store failed."""


class SessionStoreUnavailable(SessionError):
    """The store's database could not be reached or refused a query (the message says why)."""


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

    User ids must be valid (:func:`filesystems.validate_user_id`); session ids are non-empty, at
    most 255 UTF-8 bytes, without control characters (``ValueError`` otherwise). Database
    failures raise :class:`SessionStoreUnavailable`.
    """

    def __init__(
        self,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        if max_messages < 2:
            raise ValueError("max_messages must be at least 2")
        seconds = _seconds(max_age)
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"max_age must be a positive duration, got {max_age!r}")
        self.max_messages = max_messages
        self.max_age: float | None = seconds
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
        self, user_id: str, session_id: str, messages: Sequence[Message], *, loaded: Collection[str] = ()
    ) -> None:
        """Add ``messages`` (one turn) after the session's messages and ``loaded`` to its loaded
        skills, in one transaction; then keep only the newest ``max_messages``."""
        _check(user_id, session_id)
        if not messages and not loaded:
            return
        rows = [encode_message(message) for message in messages]
        await self._append(user_id, session_id, rows, sorted(set(loaded)), self._now(), self.max_messages)

    async def delete(self, user_id: str, session_id: str) -> bool:
        """Forget one conversation and its paused run; ``False`` when there was none."""
        _check(user_id, session_id)
        return await self._delete(user_id, session_id) > 0

    async def delete_user(self, user_id: str) -> int:
        """Forget every conversation and paused run of ``user_id``; returns how many
        conversations were deleted."""
        validate_user_id(user_id)
        return await self._delete(user_id, None)

    async def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """``user_id``'s stored conversations within the retention, most recently changed first."""
        validate_user_id(user_id)
        return await self._list(user_id, self._since())

    async def prune(self, older_than: timedelta | float | None = None) -> int:
        """Delete conversations untouched, and paused runs kept, for longer than ``older_than``
        (default: ``max_age``; nothing without either); returns the conversations deleted."""
        seconds = _seconds(older_than)
        seconds = self.max_age if seconds is None else seconds
        if seconds is None:
            return 0
        if seconds < 0:
            raise ValueError(f"older_than must not be negative, got {older_than!r}")
        return await self._prune(self._now() - seconds)

    # -- paused runs -------------------------------------------------------------------------

    async def keep_paused(self, user_id: str, session_id: str, data: str, *, per_user: int, total: int) -> bool:
        """Keep ``data`` as the session's paused run (replacing its own earlier one). ``False``,
        and nothing kept, when the user already keeps ``per_user`` paused runs in other
        sessions; past ``total`` paused runs in all, the oldest of the user keeping the most is
        dropped (logged)."""
        _check(user_id, session_id)
        return await self._keep_paused(user_id, session_id, data, self._now(), per_user, total)

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
    async def _append(
        self, user_id: str, session_id: str, rows: list[str], loaded: list[str], now: float, keep: int
    ) -> None:
        """Append ``rows`` after the session's messages, add ``loaded``, mark it changed at
        ``now`` and keep the newest ``keep`` messages: one transaction, serialised against the
        other appends of the session."""

    @abstractmethod
    async def _delete(self, user_id: str, session_id: str | None) -> int:
        """Delete one session (``None``: all of the user's) with its paused run; how many sessions."""

    @abstractmethod
    async def _list(self, user_id: str, since: float | None) -> list[SessionInfo]:
        """The user's sessions changed at or after ``since``, most recent first."""

    @abstractmethod
    async def _prune(self, before: float) -> int:
        """Delete sessions changed, and paused runs kept, before ``before``; how many sessions."""

    @abstractmethod
    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, now: float, per_user: int, total: int
    ) -> bool:
        """See :meth:`keep_paused`; one transaction."""

    @abstractmethod
    async def _paused(self, user_id: str, session_id: str, since: float | None) -> str | None:
        """The session's paused run kept at or after ``since``."""

    @abstractmethod
    async def _update_paused(
        self, user_id: str, session_id: str, change: PausedChange, remove: bool, since: float | None
    ) -> str | None:
        """In one transaction: read the paused run (kept at or after ``since``), call ``change``
        on it, then store the result, or with ``remove`` delete the run and return what was read."""


def _check(user_id: str, session_id: str) -> None:
    validate_user_id(user_id)
    validate_session_id(session_id)


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

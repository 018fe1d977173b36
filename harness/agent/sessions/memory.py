"""Conversations in this process's memory: the embedded default, gone with the process."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.agent.sessions.base import (
    DEFAULT_MAX_MESSAGES,
    PausedChange,
    SessionInfo,
    SessionStore,
    decode_message,
)
from harness.models import Message

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = ["InMemorySessionStore"]

log = logging.getLogger(__name__)

Key = tuple[str, str]


@dataclass(kw_only=True)
class _Stored:
    """One session as the store keeps it."""

    messages: list[Message] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)
    updated: float = 0.0


class InMemorySessionStore(SessionStore):
    """Keeps at most ``max_sessions`` sessions (the least recently used evicted) of at most
    ``max_messages`` messages each; see :class:`SessionStore` for the rest."""

    def __init__(
        self,
        *,
        max_sessions: int = 1000,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        super().__init__(max_messages=max_messages, max_age=max_age, now=now)
        self.max_sessions = max_sessions
        self._sessions: collections.OrderedDict[Key, _Stored] = collections.OrderedDict()
        self._runs: collections.OrderedDict[Key, tuple[str, float]] = collections.OrderedDict()

    async def _aclose(self) -> None:
        return None

    async def _read(
        self, user_id: str, session_id: str, limit: int, since: float | None
    ) -> tuple[Sequence[str | Message], list[str]]:
        key = (user_id, session_id)
        stored = self._sessions.get(key)
        if stored is None or (since is not None and stored.updated < since):
            return [], []
        self._sessions.move_to_end(key)
        return stored.messages[-limit:], sorted(stored.loaded)

    async def _append(
        self, user_id: str, session_id: str, rows: list[str], loaded: list[str], now: float, keep: int
    ) -> None:
        key = (user_id, session_id)
        stored = self._sessions.setdefault(key, _Stored())
        # Decoded once here, not on every read: messages are frozen values, safe to share.
        stored.messages = [*stored.messages, *(decode_message(row) for row in rows)][-keep:]
        stored.loaded.update(loaded)
        stored.updated = now
        self._sessions.move_to_end(key)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    async def _delete(self, user_id: str, session_id: str | None) -> int:
        keys = [k for k in self._sessions if k[0] == user_id and session_id in (None, k[1])]
        for key in [k for k in self._runs if k[0] == user_id and session_id in (None, k[1])]:
            del self._runs[key]
        for key in keys:
            del self._sessions[key]
        return len(keys)

    async def _list(self, user_id: str, since: float | None) -> list[SessionInfo]:
        found = [
            SessionInfo(session_id=key[1], messages=len(stored.messages), updated=stored.updated)
            for key, stored in self._sessions.items()
            if key[0] == user_id and (since is None or stored.updated >= since)
        ]
        return sorted(found, key=lambda info: -info.updated)

    async def _prune(self, before: float) -> int:
        old = [key for key, stored in self._sessions.items() if stored.updated < before]
        for key in old:
            del self._sessions[key]
        for key in [k for k, (_, kept) in self._runs.items() if kept < before]:
            del self._runs[key]
        return len(old)

    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, now: float, per_user: int, total: int
    ) -> bool:
        key = (user_id, session_id)
        if sum(1 for other in self._runs if other[0] == user_id and other != key) >= per_user:
            return False
        self._runs.pop(key, None)
        self._runs[key] = (data, now)
        while len(self._runs) > total:
            counts = collections.Counter(other[0] for other in self._runs)
            largest = max(counts, key=lambda user: counts[user])
            oldest = next(other for other in self._runs if other[0] == largest)
            log.warning(
                "dropping the oldest paused run of user %r (session %r): %d paused runs are kept in all",
                largest,
                oldest[1],
                total,
            )
            del self._runs[oldest]
        return True

    async def _paused(self, user_id: str, session_id: str, since: float | None) -> str | None:
        found = self._runs.get((user_id, session_id))
        if found is None or (since is not None and found[1] < since):
            return None
        return found[0]

    async def _update_paused(
        self, user_id: str, session_id: str, change: PausedChange, remove: bool, since: float | None
    ) -> str | None:
        key = (user_id, session_id)
        data = await self._paused(user_id, session_id, since)
        if data is None:
            return None
        changed = change(data)
        if remove:
            del self._runs[key]
            return data
        self._runs[key] = (changed, self._runs[key][1])
        return changed

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
    DEFAULT_MAX_REQUESTS,
    Claim,
    ClaimFound,
    PausedChange,
    PausedLimits,
    RequestAnswer,
    SessionInfo,
    SessionStore,
    TurnWrite,
    decode_message,
)
from harness.models import Message

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = ["InMemorySessionStore"]

log = logging.getLogger(__name__)

Key = tuple[str, str]
RequestKey = tuple[str, str, str]


@dataclass(kw_only=True)
class _Stored:
    """One session as the store keeps it."""

    messages: list[Message] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)
    updated: float = 0.0


@dataclass(kw_only=True)
class _Request:
    """One idempotency key's request: its message's digest, and its claim or its outcome."""

    digest: str
    created: float
    token: str = ""
    lease_until: float = 0.0
    outcome: str | None = None


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
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        super().__init__(max_messages=max_messages, max_age=max_age, now=now, max_requests=max_requests)
        self.max_sessions = max_sessions
        self._sessions: collections.OrderedDict[Key, _Stored] = collections.OrderedDict()
        self._runs: collections.OrderedDict[Key, tuple[str, float]] = collections.OrderedDict()
        self._requests: dict[RequestKey, _Request] = {}

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

    async def _append(self, user_id: str, session_id: str, write: TurnWrite, answer: RequestAnswer | None) -> bool:
        if answer is not None and not self._record(user_id, session_id, answer):
            return False
        if not write.rows and not write.loaded:
            return True
        key = (user_id, session_id)
        stored = self._sessions.setdefault(key, _Stored())
        # Decoded once here, not on every read: messages are frozen values, safe to share.
        stored.messages = [*stored.messages, *(decode_message(row) for row in write.rows)][-write.keep :]
        stored.loaded.update(write.loaded)
        stored.updated = write.now
        self._sessions.move_to_end(key)
        while len(self._sessions) > self.max_sessions:
            evicted, _ = self._sessions.popitem(last=False)
            self._forget_requests(*evicted)
        return True

    def _record(self, user_id: str, session_id: str, answer: RequestAnswer) -> bool:
        """Record ``answer`` (see :class:`RequestAnswer`); ``False`` when it was answered already."""
        place = (user_id, session_id, answer.key)
        request = self._requests.get(place)
        if request is not None and request.outcome is not None:
            return False
        mine = [(k, r) for k, r in self._requests.items() if k[0] == user_id and k != place]
        stale = [k for k, r in mine if r.outcome is None and r.lease_until < answer.now]
        answered = sorted((r.created, k) for k, r in mine if r.outcome is not None)
        for key in stale + [k for _, k in answered[: max(0, len(answered) - answer.per_user + 1)]]:
            del self._requests[key]
        self._requests[place] = _Request(digest=answer.digest, created=answer.now, outcome=answer.outcome)
        return True

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
        place = (user_id, session_id, key)
        request = self._requests.get(place)
        if request is None or (since is not None and request.created < since):
            self._requests[place] = _Request(digest=digest, created=now, token=token, lease_until=lease_until)
            return ClaimFound(claim=Claim(token=token, lease_until=lease_until))
        if request.digest != digest:
            return ClaimFound(stored_digest=request.digest)
        if request.outcome is not None:
            return ClaimFound(claim=Claim(outcome=request.outcome))
        if request.lease_until < now:  # its runner died: take it over
            request.token, request.lease_until = token, lease_until
            return ClaimFound(claim=Claim(token=token, lease_until=lease_until))
        return ClaimFound(claim=Claim(lease_until=request.lease_until))

    async def _release(self, user_id: str, session_id: str, key: str, token: str) -> None:
        place = (user_id, session_id, key)
        request = self._requests.get(place)
        if request is not None and request.outcome is None and request.token == token:
            del self._requests[place]

    def _forget_requests(self, user_id: str, session_id: str | None) -> None:
        for key in [k for k in self._requests if k[0] == user_id and session_id in (None, k[1])]:
            del self._requests[key]

    async def _delete(self, user_id: str, session_id: str | None) -> int:
        keys = [k for k in self._sessions if k[0] == user_id and session_id in (None, k[1])]
        for key in [k for k in self._runs if k[0] == user_id and session_id in (None, k[1])]:
            del self._runs[key]
        for key in keys:
            del self._sessions[key]
        self._forget_requests(user_id, session_id)
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
        for request in [k for k, r in self._requests.items() if r.created < before]:
            del self._requests[request]
        return len(old)

    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, limits: PausedLimits, answer: RequestAnswer | None
    ) -> bool:
        key = (user_id, session_id)
        if sum(1 for other in self._runs if other[0] == user_id and other != key) >= limits.per_user:
            return False
        if answer is not None and not self._record(user_id, session_id, answer):
            return True
        total = limits.total
        self._runs.pop(key, None)
        self._runs[key] = (data, limits.now)
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

"""Conversation history per (user, session), bounded and evictable."""

from __future__ import annotations

import collections
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from harness.models import Message

__all__ = ["InMemorySessionStore", "Session", "SessionStore"]


@dataclass(kw_only=True)
class Session:
    """One conversation: its messages and the skills whose SKILL.md it has already loaded."""

    messages: list[Message] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)


class SessionStore(ABC):
    """Where conversations live. Keys are (user_id, session_id): users never share one."""

    @abstractmethod
    async def get(self, user_id: str, session_id: str) -> Session:
        """The session, or a new empty one."""

    @abstractmethod
    async def save(self, user_id: str, session_id: str, session: Session) -> None:
        """Store the session after a turn (the store may trim or evict)."""


class InMemorySessionStore(SessionStore):
    """Keeps at most ``max_sessions`` sessions (least recently used evicted) of at most
    ``max_messages`` messages each (oldest dropped, never splitting a tool call from its result)."""

    def __init__(self, *, max_sessions: int = 1000, max_messages: int = 200) -> None:
        if max_sessions < 1 or max_messages < 2:
            raise ValueError("max_sessions must be >= 1 and max_messages >= 2")
        self.max_sessions = max_sessions
        self.max_messages = max_messages
        self._sessions: collections.OrderedDict[tuple[str, str], Session] = collections.OrderedDict()

    async def get(self, user_id: str, session_id: str) -> Session:
        key = (user_id, session_id)
        session = self._sessions.get(key)
        if session is None:
            return Session()
        self._sessions.move_to_end(key)
        return Session(messages=list(session.messages), loaded=set(session.loaded))

    async def save(self, user_id: str, session_id: str, session: Session) -> None:
        messages = session.messages[-self.max_messages :]
        # Never start with tool results whose call was trimmed away.
        while messages and messages[0].role == "tool":
            messages = messages[1:]
        self._sessions[(user_id, session_id)] = Session(messages=messages, loaded=set(session.loaded))
        self._sessions.move_to_end((user_id, session_id))
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

"""Conversations per (user, session): where they live and how long.

:class:`SessionStore` is the contract; :class:`InMemorySessionStore` the embedded default,
:class:`~harness.agent.sessions.sqlite.SQLiteSessionStore` one file that survives restarts and
:class:`~harness.agent.sessions.mysql.MySQLSessionStore` tables every replica shares (both
loaded on first use). :func:`open_session_store` picks one by URL (the registry, too, loads on
first use).
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness.agent.sessions.base import (
    DEFAULT_MAX_MESSAGES,
    DEFAULT_MAX_REQUESTS,
    IdempotencyKeyReused,
    Session,
    SessionError,
    SessionInfo,
    SessionStore,
    SessionStoreUnavailable,
)
from harness.agent.sessions.memory import InMemorySessionStore

if TYPE_CHECKING:
    from harness.agent.sessions.mysql import MySQLSessionStore
    from harness.agent.sessions.registry import open_session_store, register_session_store
    from harness.agent.sessions.sqlite import SQLiteSessionStore

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_REQUESTS",
    "IdempotencyKeyReused",
    "InMemorySessionStore",
    "MySQLSessionStore",
    "SQLiteSessionStore",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionStore",
    "SessionStoreUnavailable",
    "open_session_store",
    "register_session_store",
]

__getattr__, __dir__ = lazy_exports(__name__)

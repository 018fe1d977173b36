"""Conversation stores by URL, for ``harness.yaml`` and the CLI: ``memory:``, ``sqlite:///path``,
``mysql://user:password@host:port/db?table=name``; third parties add schemes with
:func:`register_session_store` or the ``harness.sessions`` entry-point group."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from filesystems import Registry, redact_url
from harness.agent.sessions.base import SessionStore
from harness.agent.sessions.memory import InMemorySessionStore

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = ["SESSION_ENTRY_POINT_GROUP", "SessionStoreFactory", "open_session_store", "register_session_store"]

SESSION_ENTRY_POINT_GROUP = "harness.sessions"


class SessionStoreFactory(Protocol):
    """Builds a store from its URL and the bounds (``max_messages``, ``max_age``, ``max_requests``)."""

    def __call__(self, url: str, **options: Any) -> SessionStore: ...


def _memory(url: str, **options: Any) -> SessionStore:
    return InMemorySessionStore(**options)


def _sqlite(url: str, **options: Any) -> SessionStore:
    from harness.agent.sessions.sqlite import SQLiteSessionStore  # stdlib sqlite3, loaded on use

    # As for the key-value stores: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db`` absolute.
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url.removeprefix("sqlite://")
    if not path or path == url:
        raise ValueError(f"session store {url!r}: no database file; expected sqlite:///path/to/sessions.db")
    return SQLiteSessionStore(Path(path), **options)


_STORES: Registry[SessionStoreFactory] = Registry(
    "session store scheme",
    SESSION_ENTRY_POINT_GROUP,
    {"memory": _memory, "sqlite": _sqlite, "mysql": "harness.agent.sessions.mysql:MySQLSessionStore"},
)


def register_session_store(scheme: str, factory: SessionStoreFactory, *, replace: bool = False) -> None:
    """Make :func:`open_session_store` build ``scheme:`` URLs with ``factory(url, **bounds)``."""
    _STORES.register(scheme, factory, replace=replace)


def open_session_store(
    url: str,
    *,
    max_messages: int | None = None,
    max_age: timedelta | float | None = None,
    max_requests: int | None = None,
) -> SessionStore:
    """The conversation store ``url`` names, not yet opened (``ValueError`` naming the URL,
    password masked, for one nobody understands); unset bounds keep the store's defaults."""
    url = url.strip()
    scheme, colon, _ = url.partition(":")
    if not colon and url != "memory":
        raise ValueError(
            f"session store {redact_url(url)!r}: expected memory:, sqlite:///path or mysql://user:pass@host:port/db"
        )
    options: dict[str, Any] = {"max_age": max_age}
    if max_messages is not None:
        options["max_messages"] = max_messages
    if max_requests is not None:
        options["max_requests"] = max_requests
    store = _STORES.factory(scheme)(url, **options)
    if not isinstance(store, SessionStore):
        raise ValueError(f"the factory for {redact_url(url)!r} did not return a SessionStore")
    return store

"""Conversation stores for tests: a URL per engine (a SQLite file, throw-away MySQL tables)."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.support.mysql import drop_tables, unique_table

__all__ = ["SESSION_TABLES", "session_url"]

SESSION_TABLES = ("", "_messages", "_paused")
"""The table suffixes a ``MySQLSessionStore`` creates."""


@asynccontextmanager
async def session_url(engine: str, tmp_path: Path, mysql_dsn: str | None = None) -> AsyncIterator[str]:
    """The URL of an empty store on ``engine`` (``sqlite`` or ``mysql``), dropped afterwards."""
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path / 'sessions.db'}"
        return
    assert mysql_dsn is not None
    table = unique_table("sessions")
    parts = urllib.parse.urlsplit(mysql_dsn)
    try:
        yield urllib.parse.urlunsplit(parts._replace(query=f"table={table}"))
    finally:
        await drop_tables(mysql_dsn, table, SESSION_TABLES)

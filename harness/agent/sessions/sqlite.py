"""Conversations in one SQLite file: survive restarts, shared by the processes of one host."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import anyio

from filesystems.stores.sqlite import open_database
from harness.agent.sessions.base import (
    DEFAULT_MAX_MESSAGES,
    PausedChange,
    SessionInfo,
    SessionStore,
    SessionStoreUnavailable,
    decode_loaded,
)

#: A time before every record, for a query that takes no bound.
_LONG_AGO = -1.0e300

__all__ = ["SQLiteSessionStore"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, loaded TEXT NOT NULL,
    next_seq INTEGER NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated);
CREATE TABLE IF NOT EXISTS messages (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS paused (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, data TEXT NOT NULL, kept REAL NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS paused_kept ON paused (kept);
"""


class SQLiteSessionStore(SessionStore):
    """Conversations in the SQLite database file ``path`` (created with its folder if missing).

    Schema::

        sessions(user_id, session_id, loaded JSON, next_seq, updated)   -- one row a session
        messages(user_id, session_id, seq, body JSON)                   -- one row a message
        paused(user_id, session_id, data, kept)                         -- runs paused for approval

    The database runs in WAL mode and every write is one ``BEGIN IMMEDIATE`` transaction, so
    appends of one session are serialised across the processes sharing the file. Queries run in
    worker threads over one connection per store. See :class:`SessionStore` for the bounds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(max_messages=max_messages, max_age=max_age, now=now)
        self.path = pathlib.Path(path).absolute()
        self._connection: sqlite3.Connection | None = None
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.closed:
                raise SessionStoreUnavailable(f"{self!r} is closed")
            self._connection = open_database(self.path, _SCHEMA)
        return self._connection

    async def _call(self, work: Callable[[sqlite3.Connection], _T], *, write: bool = False) -> _T:
        """``work`` in a worker thread, in one transaction: ``BEGIN IMMEDIATE`` for a write
        (serialised against every other writer of the file), a snapshot for a read."""

        def run() -> _T:
            with self._mutex:
                try:
                    connection = self._connect()
                    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                    try:
                        result = work(connection)
                    except BaseException:
                        connection.execute("ROLLBACK")
                        raise
                    connection.execute("COMMIT")
                    return result
                except sqlite3.Error as error:
                    raise SessionStoreUnavailable(f"session store {self.path}: {error}") from error

        return await anyio.to_thread.run_sync(run)

    async def _aclose(self) -> None:
        def close() -> None:
            with self._mutex:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None

        await anyio.to_thread.run_sync(close)

    async def _read(
        self, user_id: str, session_id: str, limit: int, since: float | None
    ) -> tuple[list[str], list[str]]:
        def read(c: sqlite3.Connection) -> tuple[list[str], list[str]]:
            row = c.execute(
                "SELECT loaded, updated FROM sessions WHERE user_id = ? AND session_id = ?", (user_id, session_id)
            ).fetchone()
            if row is None or (since is not None and row[1] < since):
                return [], []
            bodies = c.execute(
                "SELECT body FROM messages WHERE user_id = ? AND session_id = ? ORDER BY seq DESC LIMIT ?",
                (user_id, session_id, limit),
            ).fetchall()
            return [body for (body,) in reversed(bodies)], decode_loaded(row[0])

        return await self._call(read)

    async def _append(
        self, user_id: str, session_id: str, rows: list[str], loaded: list[str], now: float, keep: int
    ) -> None:
        def append(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT INTO sessions (user_id, session_id, loaded, next_seq, updated) VALUES (?, ?, '[]', 0, ?) "
                "ON CONFLICT (user_id, session_id) DO NOTHING",
                (user_id, session_id, now),
            )
            first, stored = c.execute(
                "SELECT next_seq, loaded FROM sessions WHERE user_id = ? AND session_id = ?", (user_id, session_id)
            ).fetchone()
            c.executemany(
                "INSERT INTO messages (user_id, session_id, seq, body) VALUES (?, ?, ?, ?)",
                [(user_id, session_id, first + index, row) for index, row in enumerate(rows)],
            )
            end = first + len(rows)
            merged = json.dumps(sorted({*decode_loaded(stored), *loaded}))
            c.execute(
                "UPDATE sessions SET next_seq = ?, loaded = ?, updated = ? WHERE user_id = ? AND session_id = ?",
                (end, merged, now, user_id, session_id),
            )
            c.execute(
                "DELETE FROM messages WHERE user_id = ? AND session_id = ? AND seq < ?",
                (user_id, session_id, end - keep),
            )

        await self._call(append, write=True)

    async def _delete(self, user_id: str, session_id: str | None) -> int:
        where = "user_id = ?" + ("" if session_id is None else " AND session_id = ?")
        values = (user_id,) if session_id is None else (user_id, session_id)

        def delete(c: sqlite3.Connection) -> int:
            c.execute(f"DELETE FROM messages WHERE {where}", values)
            c.execute(f"DELETE FROM paused WHERE {where}", values)
            return int(c.execute(f"DELETE FROM sessions WHERE {where}", values).rowcount)

        return await self._call(delete, write=True)

    async def _list(self, user_id: str, since: float | None) -> list[SessionInfo]:
        def select(c: sqlite3.Connection) -> list[SessionInfo]:
            rows = c.execute(
                "SELECT s.session_id, (SELECT count(*) FROM messages m WHERE m.user_id = s.user_id "
                "AND m.session_id = s.session_id), s.updated FROM sessions s "
                "WHERE s.user_id = ? AND s.updated >= ? ORDER BY s.updated DESC",
                (user_id, since if since is not None else _LONG_AGO),
            )
            return [SessionInfo(session_id=s, messages=int(n), updated=float(u)) for s, n, u in rows]

        return await self._call(select)

    async def _prune(self, before: float) -> int:
        def prune(c: sqlite3.Connection) -> int:
            c.execute(
                "DELETE FROM messages WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = messages.user_id "
                "AND s.session_id = messages.session_id AND s.updated < ?)",
                (before,),
            )
            c.execute("DELETE FROM paused WHERE kept < ?", (before,))
            return int(c.execute("DELETE FROM sessions WHERE updated < ?", (before,)).rowcount)

        return await self._call(prune, write=True)

    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, now: float, per_user: int, total: int
    ) -> bool:
        def keep(c: sqlite3.Connection) -> bool:
            (held,) = c.execute(
                "SELECT count(*) FROM paused WHERE user_id = ? AND session_id != ?", (user_id, session_id)
            ).fetchone()
            if held >= per_user:
                return False
            c.execute(
                "INSERT OR REPLACE INTO paused (user_id, session_id, data, kept) VALUES (?, ?, ?, ?)",
                (user_id, session_id, data, now),
            )
            while c.execute("SELECT count(*) FROM paused").fetchone()[0] > total:
                (largest,) = c.execute(
                    "SELECT user_id FROM paused GROUP BY user_id ORDER BY count(*) DESC, min(kept) LIMIT 1"
                ).fetchone()
                (oldest,) = c.execute(
                    "SELECT session_id FROM paused WHERE user_id = ? ORDER BY kept LIMIT 1", (largest,)
                ).fetchone()
                log.warning(
                    "dropping the oldest paused run of user %r (session %r): %d paused runs are kept in all",
                    largest,
                    oldest,
                    total,
                )
                c.execute("DELETE FROM paused WHERE user_id = ? AND session_id = ?", (largest, oldest))
            return True

        return await self._call(keep, write=True)

    async def _paused(self, user_id: str, session_id: str, since: float | None) -> str | None:
        def read(c: sqlite3.Connection) -> str | None:
            row = c.execute(
                "SELECT data FROM paused WHERE user_id = ? AND session_id = ? AND kept >= ?",
                (user_id, session_id, since if since is not None else _LONG_AGO),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._call(read)

    async def _update_paused(
        self, user_id: str, session_id: str, change: PausedChange, remove: bool, since: float | None
    ) -> str | None:
        def update(c: sqlite3.Connection) -> str | None:
            row = c.execute(
                "SELECT data FROM paused WHERE user_id = ? AND session_id = ? AND kept >= ?",
                (user_id, session_id, since if since is not None else _LONG_AGO),
            ).fetchone()
            if row is None:
                return None
            changed = change(str(row[0]))
            if remove:
                c.execute("DELETE FROM paused WHERE user_id = ? AND session_id = ?", (user_id, session_id))
                return str(row[0])
            c.execute("UPDATE paused SET data = ? WHERE user_id = ? AND session_id = ?", (changed, user_id, session_id))
            return changed

        return await self._call(update, write=True)

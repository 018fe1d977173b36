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
    DEFAULT_MAX_REQUESTS,
    Claim,
    ClaimFound,
    PausedChange,
    PausedLimits,
    RequestAnswer,
    SessionInfo,
    SessionStore,
    SessionStoreUnavailable,
    TurnWrite,
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
CREATE TABLE IF NOT EXISTS requests (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, request_key TEXT NOT NULL, digest TEXT NOT NULL,
    token TEXT NOT NULL, lease_until REAL NOT NULL, outcome TEXT, created REAL NOT NULL,
    PRIMARY KEY (user_id, session_id, request_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS requests_created ON requests (user_id, created);
"""


class SQLiteSessionStore(SessionStore):
    """Conversations in the SQLite database file ``path`` (created with its folder if missing).

    Schema::

        sessions(user_id, session_id, loaded JSON, next_seq, updated)   -- one row a session
        messages(user_id, session_id, seq, body JSON)                   -- one row a message
        paused(user_id, session_id, data, kept)                         -- runs paused for approval
        requests(user_id, session_id, request_key, digest, token,       -- idempotency keys
                 lease_until, outcome, created)

    Keys are ``TEXT`` compared with SQLite's default ``BINARY`` collation: byte for byte. The
    database runs in WAL mode and every write is one ``BEGIN IMMEDIATE`` transaction, so
    appends of one session are serialised across the processes sharing the file. The file and
    its ``-wal`` and ``-shm`` companions are created private (mode 0600, whatever the umask; a
    wider mode found on an existing file is narrowed); deleted rows are overwritten with zeros
    (``secure_delete``) and, after a deletion, the journal is checkpointed and truncated, so a
    deleted conversation leaves no words in the files. Queries run in worker threads over one
    connection per store. See :class:`SessionStore` for the bounds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ) -> None:
        super().__init__(max_messages=max_messages, max_age=max_age, now=now, max_requests=max_requests)
        self.path = pathlib.Path(path).absolute()
        self._connection: sqlite3.Connection | None = None
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.closed:
                raise SessionStoreUnavailable(f"{self!r} is closed")
            connection = open_database(self.path, _SCHEMA)
            connection.execute("PRAGMA secure_delete = ON")  # deleted words are zeroed, not left in free space
            self._connection = connection
        return self._connection

    async def _call(self, work: Callable[[sqlite3.Connection], _T], *, write: bool = False, erase: bool = False) -> _T:
        """``work`` in a worker thread, in one transaction: ``BEGIN IMMEDIATE`` for a write
        (serialised against every other writer of the file), a snapshot for a read. ``erase``
        (a deletion) then checkpoints the journal and truncates it, so the pages that held the
        deleted rows do not linger in the ``-wal`` file."""

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
                    if erase:
                        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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

    async def _append(self, user_id: str, session_id: str, write: TurnWrite, answer: RequestAnswer | None) -> bool:
        rows, loaded, now, keep = write.rows, write.loaded, write.now, write.keep

        def append(c: sqlite3.Connection) -> bool:
            if answer is not None and not _record(c, user_id, session_id, answer):
                return False
            if not rows and not loaded:
                return True
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
            return True

        return await self._call(append, write=True)

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

        def claim(c: sqlite3.Connection) -> ClaimFound:
            row = c.execute(
                "SELECT digest, outcome, lease_until, created FROM requests "
                "WHERE user_id = ? AND session_id = ? AND request_key = ?",
                place,
            ).fetchone()
            if row is not None and (since is None or row[3] >= since):
                stored, outcome, until, _ = row
                if stored != digest:
                    return ClaimFound(stored_digest=str(stored))
                if outcome is not None:
                    return ClaimFound(claim=Claim(outcome=str(outcome)))
                if until >= now:
                    return ClaimFound(claim=Claim(lease_until=float(until)))
            c.execute(
                "INSERT OR REPLACE INTO requests (user_id, session_id, request_key, digest, token, lease_until, "
                "outcome, created) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                (*place, digest, token, lease_until, now),
            )
            return ClaimFound(claim=Claim(token=token, lease_until=lease_until))

        return await self._call(claim, write=True)

    async def _release(self, user_id: str, session_id: str, key: str, token: str) -> None:
        def release(c: sqlite3.Connection) -> None:
            c.execute(
                "DELETE FROM requests WHERE user_id = ? AND session_id = ? AND request_key = ? AND token = ? "
                "AND outcome IS NULL",
                (user_id, session_id, key, token),
            )

        await self._call(release, write=True)

    async def _delete(self, user_id: str, session_id: str | None) -> int:
        where = "user_id = ?" + ("" if session_id is None else " AND session_id = ?")
        values = (user_id,) if session_id is None else (user_id, session_id)

        def delete(c: sqlite3.Connection) -> int:
            c.execute(f"DELETE FROM messages WHERE {where}", values)
            c.execute(f"DELETE FROM paused WHERE {where}", values)
            c.execute(f"DELETE FROM requests WHERE {where}", values)
            return int(c.execute(f"DELETE FROM sessions WHERE {where}", values).rowcount)

        return await self._call(delete, write=True, erase=True)

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
            c.execute("DELETE FROM requests WHERE created < ?", (before,))
            return int(c.execute("DELETE FROM sessions WHERE updated < ?", (before,)).rowcount)

        return await self._call(prune, write=True, erase=True)

    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, limits: PausedLimits, answer: RequestAnswer | None
    ) -> bool:
        total = limits.total

        def keep(c: sqlite3.Connection) -> bool:
            (held,) = c.execute(
                "SELECT count(*) FROM paused WHERE user_id = ? AND session_id != ?", (user_id, session_id)
            ).fetchone()
            if held >= limits.per_user:
                return False
            if answer is not None and not _record(c, user_id, session_id, answer):
                return True
            c.execute(
                "INSERT OR REPLACE INTO paused (user_id, session_id, data, kept) VALUES (?, ?, ?, ?)",
                (user_id, session_id, data, limits.now),
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


def _record(c: sqlite3.Connection, user_id: str, session_id: str, answer: RequestAnswer) -> bool:
    """Record ``answer`` in the transaction of ``c`` (see :class:`RequestAnswer`); ``False``
    when its request was answered already."""
    place = (user_id, session_id, answer.key)
    row = c.execute(
        "SELECT outcome FROM requests WHERE user_id = ? AND session_id = ? AND request_key = ?", place
    ).fetchone()
    if row is not None and row[0] is not None:
        return False
    c.execute("DELETE FROM requests WHERE user_id = ? AND outcome IS NULL AND lease_until < ?", (user_id, answer.now))
    (answered,) = c.execute(
        "SELECT count(*) FROM requests WHERE user_id = ? AND outcome IS NOT NULL", (user_id,)
    ).fetchone()
    oldest = c.execute(
        "SELECT session_id, request_key FROM requests WHERE user_id = ? AND outcome IS NOT NULL "
        "ORDER BY created, session_id, request_key LIMIT ?",
        (user_id, max(0, answered - answer.per_user + 1)),
    ).fetchall()
    c.executemany(
        "DELETE FROM requests WHERE user_id = ? AND session_id = ? AND request_key = ?",
        [(user_id, session, key) for session, key in oldest],
    )
    c.execute(
        "INSERT OR REPLACE INTO requests (user_id, session_id, request_key, digest, token, lease_until, outcome, "
        "created) VALUES (?, ?, ?, ?, '', 0, ?, ?)",
        (*place, answer.digest, answer.outcome, answer.now),
    )
    return True

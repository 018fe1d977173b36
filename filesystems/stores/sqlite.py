"""A key-value store in one SQLite file: the embedded default, shared by processes on a host."""

from __future__ import annotations

import logging
import os
import pathlib
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

import anyio

from .._filelock import file_lock, lock_file_name
from ..errors import StoreUnavailable, VersionConflict
from .base import (
    DEFAULT_MODE,
    KeyValueStore,
    StoreEntry,
    StoreRecord,
    encode_key,
    prefix_upper_bound,
)

__all__ = ["SQLiteKeyValueStore", "open_database"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key BLOB PRIMARY KEY,
    data BLOB NOT NULL,
    mode INTEGER NOT NULL,
    mtime REAL NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('generation', 0);
"""
_COLUMNS = "key, length(data), mtime, mode, version"
_BUSY_TIMEOUT_MS = 30_000


def open_database(path: pathlib.Path, schema: str) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` (its folder created) as the stores use it: WAL
    journal, autocommit (transactions are explicit), usable from any worker thread, waiting up
    to 30 s for another process's lock, with ``schema`` (``CREATE … IF NOT EXISTS``) applied.

    The file is private: created with mode 0600 whatever the process's umask (SQLite gives its
    ``-wal`` and ``-shm`` files the database's mode), and a file, or companion, found readable by
    others is narrowed to 0600 (a warning when that is not allowed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _private(path)
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    _use_wal(connection)
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.executescript(schema)
    return connection


def _private(path: pathlib.Path) -> None:
    """Create ``path`` with mode 0600 if missing; narrow it and its journal files to 0600."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    for file in (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
        try:
            if stat.S_IMODE(file.stat().st_mode) & 0o077:
                file.chmod(0o600)
        except FileNotFoundError:
            continue
        except PermissionError as exc:
            log.warning("cannot make %s private (mode 0600): %s", file, exc)


def _use_wal(connection: sqlite3.Connection) -> None:
    """Switch ``connection``'s file to the WAL journal. Processes opening a new file at once
    each try the switch; SQLite answers all but one "database is locked" at once, without
    waiting (waiting could deadlock them), so the switch is tried again until the busy timeout."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _entry(row: tuple[bytes, int, float, int, int]) -> StoreEntry:
    key, size, mtime, mode, version = row
    return StoreEntry(key=key.decode("utf-8"), size=size, mtime=mtime, mode=mode, version=version)


class SQLiteKeyValueStore(KeyValueStore):
    """Values in the SQLite database file ``path`` (created with its folder if missing).

    Table ``entries(key BLOB PRIMARY KEY, data, mode, mtime, version)`` and
    ``meta(name, value)`` holding the ``generation`` row. The database runs in WAL mode;
    every write is one ``BEGIN IMMEDIATE`` transaction that bumps the generation, so several
    processes can share the file. Locks are ``flock``-ed files in ``<path>.locks/``. Queries
    run in worker threads over one connection per store.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self._path = pathlib.Path(path).absolute()
        self._lock_dir = self._path.with_name(self._path.name + ".locks")
        self._connection: sqlite3.Connection | None = None
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteKeyValueStore({str(self._path)!r})"

    @property
    def path(self) -> pathlib.Path:
        """The database file."""
        return self._path

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self._closed:
                raise StoreUnavailable(f"{self!r} is closed")
            self._connection = open_database(self._path, _SCHEMA)
        return self._connection

    async def _call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        def locked() -> _T:
            with self._mutex:
                try:
                    return work(self._connect())
                except sqlite3.Error as error:
                    raise StoreUnavailable(f"SQLite store {self._path}: {error}") from error

        return await anyio.to_thread.run_sync(locked)

    async def _write(self, work: Callable[[sqlite3.Connection, int], _T]) -> _T:
        """Run ``work(connection, new generation)`` in one immediate transaction."""

        def transaction(connection: sqlite3.Connection) -> _T:
            connection.execute("BEGIN IMMEDIATE")
            try:
                (generation,) = connection.execute(
                    "UPDATE meta SET value = value + 1 WHERE name = 'generation' RETURNING value"
                ).fetchone()
                result = work(connection, generation)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return result

        return await self._call(transaction)

    async def _aclose(self) -> None:
        def close() -> None:
            with self._mutex:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None

        await anyio.to_thread.run_sync(close)

    async def get(self, key: str) -> StoreRecord | None:
        found = await self.get_many([key])
        return found.get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, StoreRecord]:
        raw = [encode_key(key) for key in keys]

        def select(connection: sqlite3.Connection) -> dict[str, StoreRecord]:
            found: dict[str, StoreRecord] = {}
            # Stay well below SQLite's bound-parameter limit.
            for start in range(0, len(raw), 500):
                chunk = raw[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(f"SELECT {_COLUMNS}, data FROM entries WHERE key IN ({marks})", chunk)
                for key, size, mtime, mode, version, data in rows:
                    name = key.decode("utf-8")
                    found[name] = StoreRecord(key=name, size=size, mtime=mtime, mode=mode, version=version, data=data)
            return found

        return await self._call(select) if raw else {}

    async def has_prefix(self, prefix: str) -> bool:
        low = prefix.encode("utf-8")

        def probe(connection: sqlite3.Connection) -> bool:
            row = connection.execute(
                "SELECT 1 FROM entries WHERE key >= ? AND key < ? LIMIT 1",
                (low, prefix_upper_bound(low)),
            ).fetchone()
            return row is not None

        return await self._call(probe)

    async def list_prefix(self, prefix: str) -> list[StoreEntry]:
        low = prefix.encode("utf-8")

        def select(connection: sqlite3.Connection) -> list[StoreEntry]:
            rows = connection.execute(
                f"SELECT {_COLUMNS} FROM entries WHERE key >= ? AND key < ? ORDER BY key",
                (low, prefix_upper_bound(low)),
            )
            return [_entry(row) for row in rows]

        return await self._call(select)

    @staticmethod
    def _upsert(
        connection: sqlite3.Connection, key: bytes, data: bytes, mode: int | None, generation: int
    ) -> StoreEntry:
        row = connection.execute(
            "INSERT INTO entries (key, data, mode, mtime, version) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET data = excluded.data, "
            "mode = coalesce(?, entries.mode), mtime = excluded.mtime, "
            f"version = excluded.version RETURNING {_COLUMNS}",
            (key, data, DEFAULT_MODE if mode is None else mode, time.time(), generation, mode),
        ).fetchone()
        return _entry(row)

    async def put(self, key: str, data: bytes, *, mode: int | None = None) -> StoreEntry:
        raw, value = encode_key(key), bytes(data)
        return await self._write(lambda c, g: self._upsert(c, raw, value, mode, g))

    async def put_if_version(
        self, key: str, data: bytes, expected_version: int | None, *, mode: int | None = None
    ) -> StoreEntry:
        raw, value = encode_key(key), bytes(data)

        def check_and_put(connection: sqlite3.Connection, generation: int) -> StoreEntry:
            row = connection.execute("SELECT version FROM entries WHERE key = ?", (raw,)).fetchone()
            found = None if row is None else row[0]
            if found != expected_version:
                raise VersionConflict(f"key {key!r} is at version {found}, not the expected {expected_version}")
            return self._upsert(connection, raw, value, mode, generation)

        return await self._write(check_and_put)

    async def append(self, key: str, data: bytes) -> StoreEntry:
        raw, value = encode_key(key), bytes(data)

        def concatenate(connection: sqlite3.Connection, generation: int) -> StoreEntry:
            row = connection.execute(
                "INSERT INTO entries (key, data, mode, mtime, version) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET "
                "data = CAST(entries.data || excluded.data AS BLOB), "
                f"mtime = excluded.mtime, version = excluded.version RETURNING {_COLUMNS}",
                (raw, value, DEFAULT_MODE, time.time(), generation),
            ).fetchone()
            return _entry(row)

        return await self._write(concatenate)

    async def delete(self, key: str) -> bool:
        raw = encode_key(key)
        return await self._write(lambda c, g: c.execute("DELETE FROM entries WHERE key = ?", (raw,)).rowcount > 0)

    async def delete_prefix(self, prefix: str) -> int:
        low = prefix.encode("utf-8")
        return await self._write(
            lambda c, g: (
                c.execute("DELETE FROM entries WHERE key >= ? AND key < ?", (low, prefix_upper_bound(low))).rowcount
            )
        )

    async def rename(self, moves: Mapping[str, str]) -> None:
        pairs = [(encode_key(old), encode_key(new)) for old, new in moves.items()]

        def move_all(connection: sqlite3.Connection, generation: int) -> None:
            for old, new in pairs:
                row = connection.execute("SELECT data, mode, mtime FROM entries WHERE key = ?", (old,)).fetchone()
                if row is None:
                    continue
                connection.execute("DELETE FROM entries WHERE key = ?", (old,))
                connection.execute(
                    "INSERT OR REPLACE INTO entries (key, data, mode, mtime, version) VALUES (?, ?, ?, ?, ?)",
                    (new, row[0], row[1], row[2], generation),
                )

        if pairs:
            await self._write(move_all)

    def lock(self, name: str, *, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        return file_lock(self._lock_dir / lock_file_name(name), name, timeout)

    async def generation(self) -> int:
        def read(connection: sqlite3.Connection) -> int:
            (value,) = connection.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()
            return int(value)

        return await self._call(read)

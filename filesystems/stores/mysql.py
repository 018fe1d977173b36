"""A key-value store in a MySQL/MariaDB table (aiomysql): the store for several replicas."""

from __future__ import annotations

import hashlib
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from .._redact import redact_secrets, redact_url
from ..errors import LockTimeout, StoreUnavailable, VersionConflict
from .base import (
    DEFAULT_MODE,
    MAX_KEY_BYTES,
    KeyValueStore,
    StoreEntry,
    StoreRecord,
    encode_key,
    prefix_upper_bound,
)

__all__ = ["DEFAULT_TABLE", "MySQLKeyValueStore", "parse_mysql_dsn"]

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,58}")
_COLUMNS = "k, LENGTH(data), mtime, mode, version"
#: GET_LOCK has no "forever"; a year is close enough.
_FOREVER = 365 * 24 * 3600
#: Table used when neither ``table=`` nor the DSN's ``?table=`` names one.
DEFAULT_TABLE = "harness_kv"


def parse_mysql_dsn(dsn: str, *, database_required: bool = True) -> dict[str, Any]:
    """``mysql://user:password@host:port/database`` as aiomysql connection arguments.

    Returns ``host``, ``port`` (3306 by default), ``user`` (``root`` by default), ``password``
    and ``db`` (``None`` when the DSN names no database and ``database_required`` is false).
    Query parameters are not connection arguments and are left to the caller. Raises
    ``ValueError`` for anything else; the message shows the DSN with its password masked
    (:func:`filesystems.redact_url`).
    """
    shown = redact_url(dsn)
    try:
        parts = urllib.parse.urlsplit(dsn)
        port = parts.port or 3306
    except ValueError:
        raise ValueError(f"invalid MySQL DSN {shown}: the port must be a number") from None
    database = parts.path.lstrip("/")
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname or (database_required and not database):
        raise ValueError(f"expected mysql://user:password@host:port/database, got {shown}")
    return {
        "host": parts.hostname,
        "port": port,
        "user": urllib.parse.unquote(parts.username or "root"),
        "password": urllib.parse.unquote(parts.password or ""),
        "db": urllib.parse.unquote(database) or None,
    }


def _hex(value: bytes) -> str:
    # Binary values travel as hex text decoded by UNHEX(): aiomysql's own bytes escaping is
    # broken with PyMySQL >= 1.2, and hex is independent of the connection character set.
    return value.hex()


def _entry(row: tuple[Any, ...]) -> StoreEntry:
    key, size, mtime, mode, version = row[:5]
    return StoreEntry(
        key=bytes(key).decode("utf-8"),
        size=int(size),
        mtime=float(mtime),
        mode=int(mode),
        version=int(version),
    )


class MySQLKeyValueStore(KeyValueStore):
    """Values in the table ``table`` of a MySQL/MariaDB database; needs the asyncio backend.

    ``dsn_or_pool`` is a ``mysql://user:password@host:port/database[?table=name]`` DSN (the
    store then owns
    its aiomysql pool of ``pool_size`` connections, created on first use and closed by
    :meth:`aclose`) or an existing aiomysql pool created with ``autocommit=True`` (left open).
    ``table`` defaults to the DSN's ``table`` parameter, else :data:`DEFAULT_TABLE`.

    Schema (created when missing unless ``create_if_missing=False``)::

        <table>(k VARBINARY(1024) PRIMARY KEY, data LONGBLOB, mode INT, mtime DOUBLE,
                version BIGINT)
        <table>_meta(name VARCHAR(64) PRIMARY KEY, value BIGINT)   -- row 'generation'

    Every write is one InnoDB transaction that first locks the generation row, so writes are
    serialised (no deadlocks, compare-and-set is exact) and :meth:`generation` is one primary
    key lookup. Locks are ``GET_LOCK`` named locks held on a dedicated pooled connection: they
    work across processes and hosts and die with their holder's connection; each held lock
    occupies one pool connection. Server errors raise :class:`StoreUnavailable`.
    """

    def __init__(
        self,
        dsn_or_pool: str | Any,
        *,
        table: str | None = None,
        create_if_missing: bool = True,
        pool_size: int = 10,
    ) -> None:
        super().__init__()
        if table is None:
            query = urllib.parse.urlsplit(dsn_or_pool).query if isinstance(dsn_or_pool, str) else ""
            table = urllib.parse.parse_qs(query).get("table", [DEFAULT_TABLE])[-1]
        if not _TABLE_NAME.fullmatch(table):
            raise ValueError(f"table name {table!r} must match {_TABLE_NAME.pattern}")
        self._table, self._meta = f"`{table}`", f"`{table}_meta`"
        self._lock_prefix = f"kv:{table}:"
        self._create = create_if_missing
        self._pool_size = pool_size
        self._dsn: dict[str, Any] | None = None
        self._pool: Any = None
        self._owns_pool = isinstance(dsn_or_pool, str)
        if isinstance(dsn_or_pool, str):
            self._dsn = parse_mysql_dsn(dsn_or_pool)
        else:
            self._pool = dsn_or_pool
        self._ready = False
        self._setup = anyio.Lock()

    def __repr__(self) -> str:
        where = f"{self._dsn['host']}:{self._dsn['port']}/{self._dsn['db']}" if self._dsn else "pool"
        return f"MySQLKeyValueStore({where}, table={self._table})"

    def _redacted(self, error: BaseException) -> str:
        """A server error's text, with any DSN in it and our password masked."""
        return redact_secrets(str(error), self._dsn["password"] if self._dsn else "")

    async def _get_pool(self) -> Any:
        if self._ready:
            return self._pool
        async with self._setup:
            if self._closed:
                raise StoreUnavailable(f"{self!r} is closed")
            if self._ready:
                return self._pool
            import aiomysql

            if self._pool is None:
                assert self._dsn is not None
                self._pool = await aiomysql.create_pool(
                    minsize=1, maxsize=self._pool_size, autocommit=True, **self._dsn
                )
            if self._create:
                async with self._pool.acquire() as connection, connection.cursor() as cursor:
                    await cursor.execute(
                        f"CREATE TABLE IF NOT EXISTS {self._table} ("
                        f"k VARBINARY({MAX_KEY_BYTES}) NOT NULL PRIMARY KEY, "
                        "data LONGBLOB NOT NULL, mode INT NOT NULL, mtime DOUBLE NOT NULL, "
                        "version BIGINT NOT NULL) ENGINE=InnoDB"
                    )
                    await cursor.execute(
                        f"CREATE TABLE IF NOT EXISTS {self._meta} ("
                        "name VARCHAR(64) NOT NULL PRIMARY KEY, value BIGINT NOT NULL) "
                        "ENGINE=InnoDB"
                    )
                    await cursor.execute(
                        f"INSERT INTO {self._meta} (name, value) VALUES ('generation', 0) "
                        "ON DUPLICATE KEY UPDATE value = value"
                    )
            self._ready = True
            return self._pool

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[Any]:
        import pymysql

        try:
            pool = await self._get_pool()
            async with pool.acquire() as connection, connection.cursor() as cursor:
                yield cursor
        except (pymysql.MySQLError, OSError) as error:
            raise StoreUnavailable(f"{self!r}: {self._redacted(error)}") from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[tuple[Any, int]]:
        """A cursor inside a transaction holding the generation row, and the new generation."""
        import pymysql

        try:
            pool = await self._get_pool()
            async with pool.acquire() as connection:
                await connection.begin()
                try:
                    async with connection.cursor() as cursor:
                        await cursor.execute(f"SELECT value FROM {self._meta} WHERE name = 'generation' FOR UPDATE")
                        (current,) = await cursor.fetchone()
                        generation = int(current) + 1
                        yield cursor, generation
                        await cursor.execute(
                            f"UPDATE {self._meta} SET value = %s WHERE name = 'generation'",
                            (generation,),
                        )
                    await connection.commit()
                except Exception:
                    with anyio.CancelScope(shield=True):
                        await _rollback_or_close(connection)
                    raise
                except BaseException:
                    # Cancelled mid-query: the protocol state is unknown, drop the session.
                    connection.close()
                    raise
        except (pymysql.MySQLError, OSError) as error:
            raise StoreUnavailable(f"{self!r}: {self._redacted(error)}") from error

    async def _aclose(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.close()
            await self._pool.wait_closed()

    async def get(self, key: str) -> StoreRecord | None:
        return (await self.get_many([key])).get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, StoreRecord]:
        raw = [encode_key(key) for key in keys]
        found: dict[str, StoreRecord] = {}
        if not raw:
            return found
        async with self._cursor() as cursor:
            for start in range(0, len(raw), 500):
                chunk = raw[start : start + 500]
                marks = ",".join(["UNHEX(%s)"] * len(chunk))
                await cursor.execute(
                    f"SELECT {_COLUMNS}, data FROM {self._table} WHERE k IN ({marks})",
                    [_hex(key) for key in chunk],
                )
                for row in await cursor.fetchall():
                    entry = _entry(row)
                    found[entry.key] = StoreRecord(
                        key=entry.key,
                        size=entry.size,
                        mtime=entry.mtime,
                        mode=entry.mode,
                        version=entry.version,
                        data=bytes(row[5]),
                    )
        return found

    async def has_prefix(self, prefix: str) -> bool:
        low = prefix.encode("utf-8")
        async with self._cursor() as cursor:
            await cursor.execute(
                f"SELECT 1 FROM {self._table} WHERE k >= UNHEX(%s) AND k < UNHEX(%s) LIMIT 1",
                (_hex(low), _hex(prefix_upper_bound(low))),
            )
            return await cursor.fetchone() is not None

    async def list_prefix(self, prefix: str) -> list[StoreEntry]:
        low = prefix.encode("utf-8")
        async with self._cursor() as cursor:
            await cursor.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE k >= UNHEX(%s) AND k < UNHEX(%s) ORDER BY k",
                (_hex(low), _hex(prefix_upper_bound(low))),
            )
            return [_entry(row) for row in await cursor.fetchall()]

    async def _upsert(self, cursor: Any, key: bytes, data: bytes, mode: int | None, generation: int) -> StoreEntry:
        now = time.time()
        await cursor.execute(
            f"INSERT INTO {self._table} (k, data, mode, mtime, version) "
            "VALUES (UNHEX(%s), UNHEX(%s), %s, %s, %s) "
            "ON DUPLICATE KEY UPDATE data = VALUES(data), mode = COALESCE(%s, mode), "
            "mtime = VALUES(mtime), version = VALUES(version)",
            (_hex(key), _hex(data), DEFAULT_MODE if mode is None else mode, now, generation, mode),
        )
        return await self._entry_of(cursor, key)

    async def _entry_of(self, cursor: Any, key: bytes) -> StoreEntry:
        await cursor.execute(f"SELECT {_COLUMNS} FROM {self._table} WHERE k = UNHEX(%s)", (_hex(key),))
        return _entry(await cursor.fetchone())

    async def put(self, key: str, data: bytes, *, mode: int | None = None) -> StoreEntry:
        raw = encode_key(key)
        async with self._transaction() as (cursor, generation):
            return await self._upsert(cursor, raw, bytes(data), mode, generation)

    async def put_if_version(
        self, key: str, data: bytes, expected_version: int | None, *, mode: int | None = None
    ) -> StoreEntry:
        raw = encode_key(key)
        async with self._transaction() as (cursor, generation):
            await cursor.execute(f"SELECT version FROM {self._table} WHERE k = UNHEX(%s)", (_hex(raw),))
            row = await cursor.fetchone()
            found = None if row is None else int(row[0])
            if found != expected_version:
                raise VersionConflict(f"key {key!r} is at version {found}, not the expected {expected_version}")
            return await self._upsert(cursor, raw, bytes(data), mode, generation)

    async def append(self, key: str, data: bytes) -> StoreEntry:
        raw = encode_key(key)
        async with self._transaction() as (cursor, generation):
            await cursor.execute(
                f"INSERT INTO {self._table} (k, data, mode, mtime, version) "
                "VALUES (UNHEX(%s), UNHEX(%s), %s, %s, %s) ON DUPLICATE KEY UPDATE "
                "data = CONCAT(data, VALUES(data)), mtime = VALUES(mtime), "
                "version = VALUES(version)",
                (_hex(raw), _hex(data), DEFAULT_MODE, time.time(), generation),
            )
            return await self._entry_of(cursor, raw)

    async def delete(self, key: str) -> bool:
        raw = encode_key(key)
        async with self._transaction() as (cursor, _):
            deleted = await cursor.execute(f"DELETE FROM {self._table} WHERE k = UNHEX(%s)", (_hex(raw),))
            return bool(deleted)

    async def delete_prefix(self, prefix: str) -> int:
        low = prefix.encode("utf-8")
        async with self._transaction() as (cursor, _):
            return int(
                await cursor.execute(
                    f"DELETE FROM {self._table} WHERE k >= UNHEX(%s) AND k < UNHEX(%s)",
                    (_hex(low), _hex(prefix_upper_bound(low))),
                )
            )

    async def rename(self, moves: Mapping[str, str]) -> None:
        pairs = [(encode_key(old), encode_key(new)) for old, new in moves.items()]
        if not pairs:
            return
        async with self._transaction() as (cursor, generation):
            for old, new in pairs:
                await cursor.execute(
                    f"SELECT HEX(data), mode, mtime FROM {self._table} WHERE k = UNHEX(%s)",
                    (_hex(old),),
                )
                row = await cursor.fetchone()
                if row is None:
                    continue
                await cursor.execute(f"DELETE FROM {self._table} WHERE k = UNHEX(%s)", (_hex(old),))
                await cursor.execute(
                    f"REPLACE INTO {self._table} (k, data, mode, mtime, version) "
                    "VALUES (UNHEX(%s), UNHEX(%s), %s, %s, %s)",
                    (_hex(new), row[0], row[1], row[2], generation),
                )

    def lock(self, name: str, *, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        return self._hold(name, timeout)

    @asynccontextmanager
    async def _hold(self, name: str, timeout: float | None) -> AsyncIterator[None]:
        import pymysql

        # Lock names are limited to 64 characters; hash the store-qualified name.
        digest = hashlib.sha256((self._lock_prefix + name).encode("utf-8")).hexdigest()[:48]
        lock_name = f"harness:{digest}"
        wait = _FOREVER if timeout is None else timeout
        try:
            pool = await self._get_pool()
            connection = await pool.acquire()
        except (pymysql.MySQLError, OSError) as error:
            raise StoreUnavailable(f"{self!r}: {self._redacted(error)}") from error
        try:
            async with connection.cursor() as cursor:
                await cursor.execute("SELECT GET_LOCK(%s, %s)", (lock_name, wait))
                (acquired,) = await cursor.fetchone()
        except BaseException as error:
            # Closing the session is what frees a named lock whatever state it is in.
            connection.close()
            pool.release(connection)
            if isinstance(error, (pymysql.MySQLError, OSError)):
                raise StoreUnavailable(f"{self!r}: lock {name!r}: {self._redacted(error)}") from error
            raise
        if acquired != 1:
            pool.release(connection)
            raise LockTimeout(f"lock {name!r} is held elsewhere; gave up after {timeout} s")
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    async with connection.cursor() as cursor:
                        await cursor.execute("SELECT RELEASE_LOCK(%s)", (lock_name,))
                except (pymysql.MySQLError, OSError):
                    connection.close()
                pool.release(connection)

    async def generation(self) -> int:
        async with self._cursor() as cursor:
            await cursor.execute(f"SELECT value FROM {self._meta} WHERE name = 'generation'")
            row = await cursor.fetchone()
            return int(row[0])


async def _rollback_or_close(connection: Any) -> None:
    try:
        await connection.rollback()
    except Exception:
        connection.close()

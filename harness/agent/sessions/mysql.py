"""Conversations in MySQL/MariaDB tables (aiomysql): shared by every replica of an agent."""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, TypeVar

import anyio

from filesystems import redact_secrets, redact_url
from filesystems.stores.mysql import parse_mysql_dsn
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
from harness.context import MAX_SESSION_ID_BYTES

#: A time before every record, for a query that takes no bound.
_LONG_AGO = -1.0e300

__all__ = ["DEFAULT_SESSION_TABLE", "MySQLSessionStore"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,54}")
#: Table used when the DSN's ``?table=`` names none.
DEFAULT_SESSION_TABLE = "harness_sessions"
#: Server errors worth one more try: a deadlock, a lock wait timeout.
_RETRY = {1213, 1205}
_ATTEMPTS = 5
_MISSING_TABLE = 1146
_KEY = f"VARBINARY({MAX_SESSION_ID_BYTES}) NOT NULL"
_KEY_COLUMNS = ("user_id", "session_id", "request_key")
#: Column types that compare bytes; a text column compares exactly only with a ``_bin`` collation.
_BINARY_TYPES = {"varbinary", "binary", "tinyblob", "blob", "mediumblob", "longblob"}


def _hex(text: str) -> str:
    # Every value travels as hex of its UTF-8 bytes, decoded by UNHEX(): independent of the
    # connection's character set, and clear of aiomysql's bytes escaping.
    return text.encode("utf-8").hex()


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8")


class MySQLSessionStore(SessionStore):
    """Conversations in MySQL/MariaDB; needs the asyncio backend.

    ``dsn`` is ``mysql://user:password@host:port/database`` with optional query parameters
    ``table`` (default :data:`DEFAULT_SESSION_TABLE`) and ``create_if_missing`` (default
    ``true``: the tables are created on first use when missing). The store owns an aiomysql pool
    of ``pool_size`` connections, closed by :meth:`aclose`.

    Schema (``<t>`` is the table name; every key column compares bytes, so ids are exact)::

        <t>(user_id VARBINARY(255), session_id VARBINARY(255), loaded LONGBLOB,   -- a session
            next_seq BIGINT, updated DOUBLE, PRIMARY KEY (user_id, session_id), KEY (updated))
        <t>_messages(user_id, session_id, seq BIGINT, body LONGBLOB,              -- a message
            PRIMARY KEY (user_id, session_id, seq))
        <t>_paused(user_id, session_id, data LONGBLOB, kept DOUBLE,               -- a paused run
            PRIMARY KEY (user_id, session_id), KEY (kept))
        <t>_requests(user_id, session_id, request_key VARBINARY(255),             -- idempotency keys
            digest VARBINARY(64), token VARBINARY(64), lease_until DOUBLE, outcome LONGBLOB NULL,
            created DOUBLE, PRIMARY KEY (user_id, session_id, request_key), KEY (user_id, created))

    On first use the store checks the key columns of tables that already exist: a text column
    whose collation folds case, accents or trailing spaces (``utf8mb4_general_ci``, say) would
    let two ids name one row, so the store refuses to use it (:class:`SessionStoreUnavailable`
    with the ``ALTER TABLE`` statements that make the columns binary).

    An append is one InnoDB transaction that locks its session's row first, so the appends of
    one session are serialised across replicas and take consecutive ``seq`` numbers. A deadlock
    or lock timeout is retried; other server errors raise :class:`SessionStoreUnavailable`
    (passwords masked).
    """

    def __init__(
        self,
        dsn: str,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_age: timedelta | float | None = None,
        now: Callable[[], float] = time.time,
        pool_size: int = 10,
        max_requests: int = DEFAULT_MAX_REQUESTS,
    ) -> None:
        super().__init__(max_messages=max_messages, max_age=max_age, now=now, max_requests=max_requests)
        options = urllib.parse.parse_qs(urllib.parse.urlsplit(dsn).query)
        table = options.get("table", [DEFAULT_SESSION_TABLE])[-1]
        if not _TABLE_NAME.fullmatch(table):
            raise ValueError(f"session table name {table!r} must match {_TABLE_NAME.pattern}")
        create = options.get("create_if_missing", ["true"])[-1].lower()
        if create not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"create_if_missing={create!r} in {redact_url(dsn)}: expected true or false")
        self._dsn = parse_mysql_dsn(dsn)
        self._names = (table, f"{table}_messages", f"{table}_paused", f"{table}_requests")
        self._table, self._messages, self._paused_table, self._requests = (f"`{name}`" for name in self._names)
        self._create = create in ("true", "1", "yes")
        self._pool_size = pool_size
        self._pool: Any = None
        self._setup = anyio.Lock()

    def __repr__(self) -> str:
        return f"MySQLSessionStore({self._dsn['host']}:{self._dsn['port']}/{self._dsn['db']}, table={self._table})"

    def _failure(self, error: BaseException) -> SessionStoreUnavailable:
        text = redact_secrets(str(error), self._dsn["password"])
        if getattr(error, "args", None) and error.args[0] == _MISSING_TABLE:
            text += " (create the tables, or let the store create them: leave create_if_missing on)"
        return SessionStoreUnavailable(f"{self!r}: {text}")

    async def _get_pool(self) -> Any:
        async with self._setup:
            if self.closed:
                raise SessionStoreUnavailable(f"{self!r} is closed")
            if self._pool is not None:
                return self._pool
            import aiomysql

            pool = await aiomysql.create_pool(minsize=1, maxsize=self._pool_size, autocommit=True, **self._dsn)
            try:
                async with pool.acquire() as connection, connection.cursor() as cursor:
                    if self._create:
                        for statement in self._schema():
                            await cursor.execute(statement)
                    await self._check_keys(cursor)
            except BaseException:
                pool.close()
                await pool.wait_closed()
                raise
            self._pool = pool
            return pool

    def _schema(self) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS {self._table} (user_id {_KEY}, session_id {_KEY}, "
            "loaded LONGBLOB NOT NULL, next_seq BIGINT NOT NULL, updated DOUBLE NOT NULL, "
            "PRIMARY KEY (user_id, session_id), KEY updated (updated)) ENGINE=InnoDB",
            f"CREATE TABLE IF NOT EXISTS {self._messages} (user_id {_KEY}, session_id {_KEY}, "
            "seq BIGINT NOT NULL, body LONGBLOB NOT NULL, PRIMARY KEY (user_id, session_id, seq)) ENGINE=InnoDB",
            f"CREATE TABLE IF NOT EXISTS {self._paused_table} (user_id {_KEY}, session_id {_KEY}, "
            "data LONGBLOB NOT NULL, kept DOUBLE NOT NULL, PRIMARY KEY (user_id, session_id), KEY kept (kept)) "
            "ENGINE=InnoDB",
            f"CREATE TABLE IF NOT EXISTS {self._requests} (user_id {_KEY}, session_id {_KEY}, request_key {_KEY}, "
            "digest VARBINARY(64) NOT NULL, token VARBINARY(64) NOT NULL, lease_until DOUBLE NOT NULL, "
            "outcome LONGBLOB NULL, created DOUBLE NOT NULL, PRIMARY KEY (user_id, session_id, request_key), "
            "KEY created (user_id, created)) ENGINE=InnoDB",
        ]

    async def _check_keys(self, cursor: Any) -> None:
        """Refuse tables whose key columns compare text with a folding collation (see the class
        docstring): two ids would name one row."""
        await cursor.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLLATION_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (%s, %s, %s, %s) "
            "AND COLUMN_NAME IN (%s, %s, %s) ORDER BY TABLE_NAME, ORDINAL_POSITION",
            (*self._names, *_KEY_COLUMNS),
        )
        folding: dict[str, list[str]] = {}
        described: list[str] = []
        for table, column, kind, collation in await cursor.fetchall():
            table, column = _plain(table), _plain(column)
            if _plain(kind).lower() in _BINARY_TYPES or _plain(collation or "").endswith("_bin"):
                continue
            folding.setdefault(table, []).append(column)
            described.append(f"`{table}`.{column} compares text ({_plain(collation or kind)})")
        if not folding:
            return
        fixes = "; ".join(
            f"ALTER TABLE `{table}` " + ", ".join(f"MODIFY {column} {_KEY}" for column in columns)
            for table, columns in folding.items()
        )
        raise SessionStoreUnavailable(
            f"{self!r}: {', '.join(described)}, which folds case, accents or trailing spaces, so two user or "
            f"session ids could name one row; the store needs binary key columns (VARBINARY). Convert them "
            f"(stop the agents first): {fixes}"
        )

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        import pymysql

        try:
            pool = await self._get_pool()
            async with pool.acquire() as connection:
                yield connection
        except (pymysql.MySQLError, OSError) as error:
            raise self._failure(error) from error

    async def _query(self, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """``work(cursor)`` outside a transaction."""
        async with self._connection() as connection, connection.cursor() as cursor:
            return await work(cursor)

    async def _write(self, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """``work(cursor)`` in one transaction, tried again after a deadlock or lock timeout."""
        import pymysql

        for attempt in range(_ATTEMPTS):
            try:
                async with self._connection() as connection:
                    await connection.begin()
                    try:
                        async with connection.cursor() as cursor:
                            result = await work(cursor)
                        await connection.commit()
                        return result
                    except Exception:
                        with anyio.CancelScope(shield=True):
                            await _rollback_or_close(connection)
                        raise
                    except BaseException:
                        connection.close()  # cancelled mid-query: the protocol state is unknown
                        raise
            except SessionStoreUnavailable as error:
                cause = error.__cause__
                if not isinstance(cause, pymysql.MySQLError) or cause.args[0] not in _RETRY:
                    raise
                if attempt == _ATTEMPTS - 1:
                    raise
                await anyio.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    async def _aclose(self) -> None:
        async with self._setup:
            if self._pool is not None:
                self._pool.close()
                await self._pool.wait_closed()
                self._pool = None

    def _key(self, user_id: str, session_id: str | None = None) -> tuple[str, tuple[str, ...]]:
        """The ``WHERE`` clause of one session (or all of a user's) and its values."""
        if session_id is None:
            return "user_id = UNHEX(%s)", (_hex(user_id),)
        return "user_id = UNHEX(%s) AND session_id = UNHEX(%s)", (_hex(user_id), _hex(session_id))

    async def _read(
        self, user_id: str, session_id: str, limit: int, since: float | None
    ) -> tuple[list[str], list[str]]:
        where, key = self._key(user_id, session_id)

        async def read(cursor: Any) -> tuple[list[str], list[str]]:
            await cursor.execute(f"SELECT loaded, updated FROM {self._table} WHERE {where}", key)
            row = await cursor.fetchone()
            if row is None or (since is not None and float(row[1]) < since):
                return [], []
            await cursor.execute(
                f"SELECT body FROM {self._messages} WHERE {where} ORDER BY seq DESC LIMIT %s", (*key, limit)
            )
            bodies = [_text(body) for (body,) in await cursor.fetchall()]
            return bodies[::-1], decode_loaded(_text(row[0]))

        return await self._write(read)  # one snapshot: an append cannot land between the queries

    async def _append(self, user_id: str, session_id: str, write: TurnWrite, answer: RequestAnswer | None) -> bool:
        where, key = self._key(user_id, session_id)
        rows = write.rows

        async def append(cursor: Any) -> bool:
            if answer is not None and not await self._record(cursor, user_id, session_id, answer):
                return False
            if not rows and not write.loaded:
                return True
            await cursor.execute(
                f"INSERT INTO {self._table} (user_id, session_id, loaded, next_seq, updated) "
                "VALUES (UNHEX(%s), UNHEX(%s), '[]', 0, %s) ON DUPLICATE KEY UPDATE next_seq = next_seq",
                (*key, write.now),
            )
            await cursor.execute(f"SELECT next_seq, loaded FROM {self._table} WHERE {where} FOR UPDATE", key)
            first, stored = await cursor.fetchone()
            first = int(first)
            if rows:
                marks = ", ".join(["(UNHEX(%s), UNHEX(%s), %s, UNHEX(%s))"] * len(rows))
                values = [v for index, row in enumerate(rows) for v in (*key, first + index, _hex(row))]
                await cursor.execute(
                    f"INSERT INTO {self._messages} (user_id, session_id, seq, body) VALUES {marks}", values
                )
            end = first + len(rows)
            merged = json.dumps(sorted({*decode_loaded(_text(stored)), *write.loaded}))
            await cursor.execute(
                f"UPDATE {self._table} SET next_seq = %s, loaded = UNHEX(%s), updated = %s WHERE {where}",
                (end, _hex(merged), write.now, *key),
            )
            await cursor.execute(f"DELETE FROM {self._messages} WHERE {where} AND seq < %s", (*key, end - write.keep))
            return True

        return await self._write(append)

    async def _record(self, cursor: Any, user_id: str, session_id: str, answer: RequestAnswer) -> bool:
        """Record ``answer`` in the transaction of ``cursor`` (see :class:`RequestAnswer`);
        ``False`` when its request was answered already."""
        where, key = self._key(user_id, session_id)
        request = _hex(answer.key)
        await cursor.execute(
            f"SELECT outcome FROM {self._requests} WHERE {where} AND request_key = UNHEX(%s) FOR UPDATE",
            (*key, request),
        )
        row = await cursor.fetchone()
        if row is not None and row[0] is not None:
            return False
        user = _hex(user_id)
        await cursor.execute(
            f"DELETE FROM {self._requests} WHERE user_id = UNHEX(%s) AND outcome IS NULL AND lease_until < %s",
            (user, answer.now),
        )
        await cursor.execute(
            f"SELECT COUNT(*) FROM {self._requests} WHERE user_id = UNHEX(%s) AND outcome IS NOT NULL", (user,)
        )
        (answered,) = await cursor.fetchone()
        await cursor.execute(
            f"SELECT session_id, request_key FROM {self._requests} WHERE user_id = UNHEX(%s) AND outcome IS NOT NULL "
            "ORDER BY created, session_id, request_key LIMIT %s",
            (user, max(0, int(answered) - answer.per_user + 1)),
        )
        for session, old in await cursor.fetchall():
            await cursor.execute(
                f"DELETE FROM {self._requests} WHERE user_id = UNHEX(%s) AND session_id = UNHEX(%s) "
                "AND request_key = UNHEX(%s)",
                (user, bytes(session).hex(), bytes(old).hex()),
            )
        await cursor.execute(
            f"INSERT INTO {self._requests} (user_id, session_id, request_key, digest, token, lease_until, outcome, "
            "created) VALUES (UNHEX(%s), UNHEX(%s), UNHEX(%s), UNHEX(%s), '', 0, UNHEX(%s), %s) "
            "ON DUPLICATE KEY UPDATE digest = VALUES(digest), token = '', lease_until = 0, outcome = VALUES(outcome), "
            "created = VALUES(created)",
            (*key, request, _hex(answer.digest), _hex(answer.outcome), answer.now),
        )
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
        where, place = self._key(user_id, session_id)
        request = _hex(key)

        async def claim(cursor: Any) -> ClaimFound:
            await cursor.execute(
                f"SELECT digest, outcome, lease_until, created FROM {self._requests} "
                f"WHERE {where} AND request_key = UNHEX(%s) FOR UPDATE",
                (*place, request),
            )
            row = await cursor.fetchone()
            if row is not None and (since is None or float(row[3]) >= since):
                stored, outcome, until = _text(row[0]), row[1], float(row[2])
                if stored != digest:
                    return ClaimFound(stored_digest=stored)
                if outcome is not None:
                    return ClaimFound(claim=Claim(outcome=_text(outcome)))
                if until >= now:
                    return ClaimFound(claim=Claim(lease_until=until))
            await cursor.execute(
                f"INSERT INTO {self._requests} (user_id, session_id, request_key, digest, token, lease_until, "
                "outcome, created) VALUES (UNHEX(%s), UNHEX(%s), UNHEX(%s), UNHEX(%s), UNHEX(%s), %s, NULL, %s) "
                "ON DUPLICATE KEY UPDATE digest = VALUES(digest), token = VALUES(token), "
                "lease_until = VALUES(lease_until), outcome = NULL, created = VALUES(created)",
                (*place, request, _hex(digest), _hex(token), lease_until, now),
            )
            return ClaimFound(claim=Claim(token=token, lease_until=lease_until))

        return await self._write(claim)

    async def _release(self, user_id: str, session_id: str, key: str, token: str) -> None:
        where, place = self._key(user_id, session_id)

        async def release(cursor: Any) -> None:
            await cursor.execute(
                f"DELETE FROM {self._requests} WHERE {where} AND request_key = UNHEX(%s) AND token = UNHEX(%s) "
                "AND outcome IS NULL",
                (*place, _hex(key), _hex(token)),
            )

        await self._write(release)

    async def _delete(self, user_id: str, session_id: str | None) -> int:
        where, key = self._key(user_id, session_id)

        async def delete(cursor: Any) -> int:
            await cursor.execute(f"DELETE FROM {self._messages} WHERE {where}", key)
            await cursor.execute(f"DELETE FROM {self._paused_table} WHERE {where}", key)
            await cursor.execute(f"DELETE FROM {self._requests} WHERE {where}", key)
            return int(await cursor.execute(f"DELETE FROM {self._table} WHERE {where}", key))

        return await self._write(delete)

    async def _list(self, user_id: str, since: float | None) -> list[SessionInfo]:
        async def select(cursor: Any) -> list[SessionInfo]:
            await cursor.execute(
                f"SELECT s.session_id, (SELECT COUNT(*) FROM {self._messages} m WHERE m.user_id = s.user_id "
                f"AND m.session_id = s.session_id), s.updated FROM {self._table} s "
                "WHERE s.user_id = UNHEX(%s) AND s.updated >= %s ORDER BY s.updated DESC",
                (_hex(user_id), since if since is not None else _LONG_AGO),
            )
            rows = await cursor.fetchall()
            return [SessionInfo(session_id=_text(s), messages=int(n), updated=float(u)) for s, n, u in rows]

        return await self._query(select)

    async def _prune(self, before: float) -> int:
        async def prune(cursor: Any) -> int:
            await cursor.execute(
                f"DELETE m FROM {self._messages} m JOIN {self._table} s "
                "ON s.user_id = m.user_id AND s.session_id = m.session_id WHERE s.updated < %s",
                (before,),
            )
            await cursor.execute(f"DELETE FROM {self._paused_table} WHERE kept < %s", (before,))
            await cursor.execute(f"DELETE FROM {self._requests} WHERE created < %s", (before,))
            return int(await cursor.execute(f"DELETE FROM {self._table} WHERE updated < %s", (before,)))

        return await self._write(prune)

    async def _keep_paused(
        self, user_id: str, session_id: str, data: str, limits: PausedLimits, answer: RequestAnswer | None
    ) -> bool:
        total = limits.total

        async def keep(cursor: Any) -> bool:
            # Locking the user's rows serialises the pauses of one user across replicas.
            await cursor.execute(
                f"SELECT session_id FROM {self._paused_table} WHERE user_id = UNHEX(%s) FOR UPDATE", (_hex(user_id),)
            )
            held = sum(1 for (other,) in await cursor.fetchall() if _text(other) != session_id)
            if held >= limits.per_user:
                return False
            if answer is not None and not await self._record(cursor, user_id, session_id, answer):
                return True
            await cursor.execute(
                f"REPLACE INTO {self._paused_table} (user_id, session_id, data, kept) "
                "VALUES (UNHEX(%s), UNHEX(%s), UNHEX(%s), %s)",
                (_hex(user_id), _hex(session_id), _hex(data), limits.now),
            )
            await cursor.execute(f"SELECT COUNT(*) FROM {self._paused_table}")
            (count,) = await cursor.fetchone()
            for _ in range(int(count) - total):
                await cursor.execute(
                    f"SELECT user_id FROM {self._paused_table} GROUP BY user_id ORDER BY COUNT(*) DESC, MIN(kept) "
                    "LIMIT 1"
                )
                (largest,) = await cursor.fetchone()
                await cursor.execute(
                    f"SELECT session_id FROM {self._paused_table} WHERE user_id = UNHEX(%s) ORDER BY kept LIMIT 1",
                    (bytes(largest).hex(),),
                )
                (oldest,) = await cursor.fetchone()
                log.warning(
                    "dropping the oldest paused run of user %r (session %r): %d paused runs are kept in all",
                    _text(largest),
                    _text(oldest),
                    total,
                )
                await cursor.execute(
                    f"DELETE FROM {self._paused_table} WHERE user_id = UNHEX(%s) AND session_id = UNHEX(%s)",
                    (bytes(largest).hex(), bytes(oldest).hex()),
                )
            return True

        return await self._write(keep)

    async def _paused(self, user_id: str, session_id: str, since: float | None) -> str | None:
        where, key = self._key(user_id, session_id)

        async def read(cursor: Any) -> str | None:
            await cursor.execute(
                f"SELECT data FROM {self._paused_table} WHERE {where} AND kept >= %s",
                (*key, since if since is not None else _LONG_AGO),
            )
            row = await cursor.fetchone()
            return None if row is None else _text(row[0])

        return await self._query(read)

    async def _update_paused(
        self, user_id: str, session_id: str, change: PausedChange, remove: bool, since: float | None
    ) -> str | None:
        where, key = self._key(user_id, session_id)

        async def update(cursor: Any) -> str | None:
            await cursor.execute(
                f"SELECT data FROM {self._paused_table} WHERE {where} AND kept >= %s FOR UPDATE",
                (*key, since if since is not None else _LONG_AGO),
            )
            row = await cursor.fetchone()
            if row is None:
                return None
            data = _text(row[0])
            changed = change(data)
            if remove:
                await cursor.execute(f"DELETE FROM {self._paused_table} WHERE {where}", key)
                return data
            await cursor.execute(
                f"UPDATE {self._paused_table} SET data = UNHEX(%s) WHERE {where}", (_hex(changed), *key)
            )
            return changed

        return await self._write(update)


async def _rollback_or_close(connection: Any) -> None:
    try:
        await connection.rollback()
    except Exception:
        connection.close()


def _plain(value: Any) -> str:
    """A value of ``information_schema`` as text (the server may send bytes)."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)

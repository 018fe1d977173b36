"""Skills stored in MySQL/MariaDB tables (aiomysql, imported lazily).

Schema (``<t>`` is the configured table; created by ``create_if_missing=True``)::

    CREATE TABLE <t> (                        -- one row per skill folder
      folder        VARBINARY(255) PRIMARY KEY,   -- UTF-8 name, compared byte for byte
      skill_md_name VARCHAR(16)  NOT NULL,    -- 'SKILL.md' or 'skill.md'
      skill_md      LONGBLOB     NOT NULL,
      content_hash  CHAR(64)     NOT NULL,    -- SHA-256 over the main file and every file
      updated_at    TIMESTAMP(6) NOT NULL)
    CREATE TABLE <t>_files (                  -- every other file of the folder, as bytes
      folder  VARBINARY(255), path VARBINARY(1024),   -- UTF-8 relative POSIX path
      mode    SMALLINT UNSIGNED NOT NULL,     -- permission bits, e.g. 493 = 0o755
      size    BIGINT UNSIGNED NOT NULL,
      content LONGBLOB NOT NULL,
      PRIMARY KEY (folder, path))
    CREATE TABLE <t>_generation (             -- one row, id = 1
      id TINYINT UNSIGNED PRIMARY KEY,
      epoch CHAR(32) NOT NULL,                -- random, set when the table is created
      generation BIGINT UNSIGNED NOT NULL)    -- bumped inside every write transaction

Folder names are compared exactly: a ``VARCHAR`` column with a ``PAD SPACE`` collation (every
MySQL 5.x and MariaDB ``*_bin`` collation) would make ``'deploy '`` and ``'deploy'`` one key, so
saving one replaced the other. Tables created by earlier versions with ``VARCHAR ... utf8mb4_bin``
folder columns are converted to ``VARBINARY(255)`` on start when ``create_if_missing=True``;
otherwise run ``ALTER TABLE <t> MODIFY folder VARBINARY(255) NOT NULL`` and the same for
``<t>_files``. ``save`` refuses folder names with leading or trailing whitespace or control
characters whatever the schema.

Writers (``save``/``delete``, or any other tool) must bump ``generation`` in the same
transaction as their change; the version token is ``<epoch>:<generation>``.
"""

from __future__ import annotations

import re
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Self

from filesystems import redact_secrets
from filesystems.paths import identifier_problem
from filesystems.stores.mysql import parse_mysql_dsn
from repositories._urls import flag, no_more, number
from repositories.base import BundleFile, SkillBundle, SkillBundleContents, SkillRepository, Snapshot
from repositories.discovery import SKILL_MD_NAMES, check_folder, normalise_file_path
from repositories.errors import (
    BundleNotFound,
    InvalidBundle,
    InvalidRepositoryConfig,
    RepositoryError,
    RepositoryUnavailable,
)
from repositories.memory import bundle_digest
from repositories.sources import make_source

__all__ = ["MySQLRepository", "parse_mysql_dsn"]

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]{1,64}")
_MISSING = {1049, 1146}  # ER_BAD_DB_ERROR (unknown database), ER_NO_SUCH_TABLE
_TABLE = re.compile(r"[A-Za-z0-9_]{1,48}")


def _check_identifier(value: str, what: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        limit = 48 if pattern is _TABLE else 64
        raise InvalidRepositoryConfig(f"invalid MySQL {what} name {value!r}: use 1-{limit} letters, digits or '_'")
    return value


def _connect_args(dsn: str) -> dict[str, Any]:
    try:
        return parse_mysql_dsn(dsn, database_required=False)
    except ValueError as exc:
        raise InvalidRepositoryConfig(str(exc)) from None


def _text(value: str | bytes) -> str:
    """A ``VARBINARY`` folder name as text; raises ``UnicodeDecodeError`` for bad UTF-8."""
    return value if isinstance(value, str) else bytes(value).decode()


def _import_aiomysql() -> tuple[Any, Any]:
    try:
        import aiomysql
        import pymysql
    except ImportError as exc:
        raise RepositoryUnavailable(f"MySQL repositories need aiomysql: {exc}") from exc
    return aiomysql, pymysql


class MySQLRepository(SkillRepository):
    """Skills stored in MySQL/MariaDB tables (schema in the module docstring).

    Give either a ``dsn`` (``mysql://user:pass@host:port/db``; the repository then owns its
    pool) or an aiomysql ``pool`` (shared, not closed by ``aclose()``; pass ``database=`` for
    the slug when the pool's database is not named). ``table`` and ``database`` are validated
    identifiers; every value is a query parameter.

    ``version()`` is one primary-key query of the generation row, so a read when nothing changed
    costs exactly one query; a snapshot reloads (three queries in one consistent transaction)
    only when the generation moved — edits within the same second included. File bytes are read
    on demand. ``writable=True`` enables ``save``/``delete``, each one transaction that also
    bumps the generation. When the server cannot be reached the last good snapshot is served and
    the failure reported. Slug: ``mysql-<db>-<table>``.

    ``create_if_missing`` is off by default, so opening a market never changes a database's
    schema: a missing database or table makes the market unavailable, with an error that says
    how to create them. With ``create_if_missing=True`` the first use creates the database the
    ``dsn`` names when it does not exist (not through a shared ``pool``), the three tables and
    the generation row, and converts older ``VARCHAR`` folder columns; ``harness market
    publish`` asks for it unless its URL says ``create_if_missing=false``.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Any = None,
        table: str = "skills",
        database: str | None = None,
        writable: bool = False,
        create_if_missing: bool = False,
        connect_timeout: float = 5.0,
        source: str | None = None,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise InvalidRepositoryConfig("MySQLRepository needs exactly one of dsn= or pool=")
        self._connect: dict[str, Any] = {}
        if dsn is not None:
            self._connect = _connect_args(dsn)
            database = database or self._connect["db"]
        if database is None and pool is not None:
            database = getattr(pool, "_conn_kwargs", {}).get("db")
        self.database = _check_identifier(database, "database", _IDENTIFIER) if database else None
        self.table = _check_identifier(table, "table", _TABLE)
        super().__init__(source=source or make_source("mysql", self.database or "", table), writable=writable)
        qualified = f"`{self.database}`." if self.database else ""
        self._skills = f"{qualified}`{table}`"
        self._files = f"{qualified}`{table}_files`"
        self._generation = f"{qualified}`{table}_generation`"
        self._pool = pool
        self._owns_pool = pool is None
        self.create_if_missing = create_if_missing
        self.connect_timeout = connect_timeout
        self._ready = False

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a ``mysql://`` URL names; the query holds the options (``table``,
        ``writable``, ``create_if_missing``, ``connect_timeout``, ``source``), the rest is the DSN.
        Raises ``InvalidRepositoryConfig``."""
        parts = urllib.parse.urlsplit(url)
        options = dict(urllib.parse.parse_qsl(parts.query))
        repo = cls(
            urllib.parse.urlunsplit(parts._replace(query="", fragment="")),
            table=options.pop("table", "skills"),
            writable=flag(options, "writable", False),
            create_if_missing=flag(options, "create_if_missing", False),
            connect_timeout=number(options, "connect_timeout", 5.0),
            source=options.pop("source", None),
        )
        no_more(url, options)
        return repo

    @property
    def _where(self) -> str:
        host = self._connect.get("host", "pool")
        return f"mysql://{host}/{self.database or ''}/{self.table}"

    # Connections.

    async def _ensure_pool(self) -> Any:
        if self._pool is None:
            aiomysql, _ = _import_aiomysql()
            args = {k: v for k, v in self._connect.items() if k != "db"}
            if self.create_if_missing and self.database:
                conn = await aiomysql.connect(**args, connect_timeout=self.connect_timeout, autocommit=True)
                try:
                    async with conn.cursor() as cur:
                        # Ask first: CREATE ... IF NOT EXISTS on an existing database makes the
                        # server send a note that aiomysql prints as a warning on every start.
                        await cur.execute(
                            "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (self.database,)
                        )
                        if not await cur.fetchone():
                            await cur.execute(f"CREATE DATABASE IF NOT EXISTS `{self.database}`")
                finally:
                    conn.close()
            self._pool = await aiomysql.create_pool(
                minsize=0,
                maxsize=4,
                autocommit=True,
                connect_timeout=self.connect_timeout,
                db=self.database,
                **args,
            )
        return self._pool

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[Any]:
        """A cursor on a pooled connection; MySQL errors become ``RepositoryUnavailable``."""
        _, pymysql = _import_aiomysql()
        try:
            pool = await self._ensure_pool()
            async with pool.acquire() as conn:
                async with conn.cursor() as cur:
                    if not self._ready:
                        await self._prepare(cur)
                    yield cur
        except RepositoryError:
            raise
        except (pymysql.err.MySQLError, OSError, TimeoutError) as exc:
            detail = redact_secrets(str(exc), self._connect.get("password", ""))
            if not self.create_if_missing and exc.args and exc.args[0] in _MISSING:
                detail += (
                    "; this market does not create its database or tables unless told to: open it with "
                    "create_if_missing=True (URL: ?create_if_missing=true) or create them as the "
                    "repositories.mysql module docstring shows"
                )
            raise RepositoryUnavailable(f"{self._where}: {detail}") from exc

    async def _prepare(self, cur: Any) -> None:
        if self.create_if_missing:
            # Create only the tables that are missing, and seed the generation row without
            # IGNORE: an existing table or row would otherwise make the server send a note
            # that aiomysql prints as a raw warning on every start.
            schema = self._schema()
            await cur.execute(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
                f" AND TABLE_NAME IN ({', '.join(['%s'] * len(schema))})",
                tuple(schema),
            )
            existing = {row[0].decode() if isinstance(row[0], bytes) else row[0] for row in await cur.fetchall()}
            for table, statement in schema.items():
                if table not in existing:
                    await cur.execute(statement)
            await self._migrate_folder_columns(cur)
            await cur.execute(
                f"INSERT INTO {self._generation} (id, epoch, generation) VALUES (1, %s, 0)"
                " ON DUPLICATE KEY UPDATE id = id",
                (uuid.uuid4().hex,),
            )
        self._ready = True

    async def _migrate_folder_columns(self, cur: Any) -> None:
        """Make ``folder`` columns of older tables (``VARCHAR``, ``PAD SPACE``) exact bytes."""
        for table in (self.table, f"{self.table}_files"):
            await cur.execute(
                "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"
                " AND TABLE_NAME = %s AND COLUMN_NAME = 'folder'",
                (table,),
            )
            row = await cur.fetchone()
            if row is not None and str(row[0]).lower() != "varbinary":
                qualified = f"`{self.database}`.`{table}`" if self.database else f"`{table}`"
                await cur.execute(f"ALTER TABLE {qualified} MODIFY folder VARBINARY(255) NOT NULL")

    def _schema(self) -> dict[str, str]:
        """Each table's name and the statement creating it."""
        return {
            self.table: f"CREATE TABLE IF NOT EXISTS {self._skills} ("
            " folder VARBINARY(255) NOT NULL,"
            " skill_md_name VARCHAR(16) NOT NULL,"
            " skill_md LONGBLOB NOT NULL,"
            " content_hash CHAR(64) NOT NULL,"
            " updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"
            "   ON UPDATE CURRENT_TIMESTAMP(6),"
            " PRIMARY KEY (folder)"
            ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            f"{self.table}_files": f"CREATE TABLE IF NOT EXISTS {self._files} ("
            " folder VARBINARY(255) NOT NULL,"
            " path VARBINARY(1024) NOT NULL,"
            " mode SMALLINT UNSIGNED NOT NULL,"
            " size BIGINT UNSIGNED NOT NULL,"
            " content LONGBLOB NOT NULL,"
            " PRIMARY KEY (folder, path)"
            ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            f"{self.table}_generation": f"CREATE TABLE IF NOT EXISTS {self._generation} ("
            " id TINYINT UNSIGNED NOT NULL,"
            " epoch CHAR(32) NOT NULL,"
            " generation BIGINT UNSIGNED NOT NULL,"
            " PRIMARY KEY (id)"
            ") ENGINE=InnoDB",
        }

    # Reading.

    async def _version(self) -> str:
        async with self._cursor() as cur:
            await cur.execute(f"SELECT epoch, generation FROM {self._generation} WHERE id = 1")
            row = await cur.fetchone()
        return self._token(row)

    def _token(self, row: Any) -> str:
        if row is None:
            raise RepositoryUnavailable(
                f"{self._where}: the generation row is missing (create the tables with create_if_missing=True)"
            )
        return f"{row[0]}:{row[1]}"

    async def _load(self, version: str) -> Snapshot:
        async with self._cursor() as cur:
            await cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            try:
                await cur.execute(f"SELECT epoch, generation FROM {self._generation} WHERE id = 1")
                token = self._token(await cur.fetchone())
                await cur.execute(
                    f"SELECT folder, skill_md_name, skill_md, content_hash FROM {self._skills} ORDER BY folder"
                )
                skills = await cur.fetchall()
                await cur.execute(f"SELECT folder, path, mode, size FROM {self._files} ORDER BY folder, path")
                files = await cur.fetchall()
            finally:
                await cur.execute("COMMIT")
        return self._assemble(token, skills, files)

    def _assemble(self, token: str, skills: Any, files: Any) -> Snapshot:
        problems: list[str] = []
        listing: dict[str, list[BundleFile]] = {}
        for raw_folder, raw_path, mode, size in files:
            try:
                folder = _text(raw_folder)
                path = normalise_file_path(bytes(raw_path).decode())
            except (RepositoryError, UnicodeDecodeError) as exc:
                problems.append(f"{raw_folder!r}: file {bytes(raw_path)!r} skipped: {exc}")
                continue
            listing.setdefault(folder, []).append(BundleFile(path=path, size=int(size), mode=int(mode) & 0o7777))
        bundles: list[SkillBundle] = []
        for raw_folder, name, skill_md, content_hash in skills:
            try:
                folder = check_folder(_text(raw_folder))
            except (RepositoryError, UnicodeDecodeError) as exc:
                problems.append(f"skill row {raw_folder!r} skipped: {exc}")
                continue
            bundles.append(
                SkillBundle(
                    folder=folder,
                    skill_md=bytes(skill_md),
                    skill_md_name=name if name in SKILL_MD_NAMES else "SKILL.md",
                    files=tuple(sorted(listing.get(folder, ()), key=lambda f: f.path)),
                    location=f"{self._where}#{folder}",
                    digest=content_hash,
                )
            )
        return Snapshot(version=token, bundles=tuple(bundles), problems=tuple(problems))

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        async with self._cursor() as cur:
            await cur.execute(f"SELECT skill_md_name, skill_md FROM {self._skills} WHERE folder = %s", (folder,))
            row = await cur.fetchone()
            if row is None:
                raise BundleNotFound(f"{self._where}: no skill folder {folder!r}")
            data = {row[0]: bytes(row[1])}
            wanted = [p for p in paths if p not in data]
            if wanted:
                marks = ", ".join(["%s"] * len(wanted))
                await cur.execute(
                    f"SELECT path, content FROM {self._files} WHERE folder = %s AND path IN ({marks})",
                    (folder, *wanted),
                )
                for path, content in await cur.fetchall():
                    data[bytes(path).decode()] = bytes(content)
        missing = [p for p in paths if p not in data]
        if missing:
            raise BundleNotFound(f"{self._where}#{folder}: {missing[0]} does not exist")
        return {p: data[p] for p in paths}

    # Writing.

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Any]:
        """A write transaction that bumps the generation first (serialising writers)."""
        async with self._cursor() as cur:
            await cur.execute("START TRANSACTION")
            try:
                await cur.execute(f"UPDATE {self._generation} SET generation = generation + 1 WHERE id = 1")
                if cur.rowcount != 1:
                    raise RepositoryUnavailable(f"{self._where}: the generation row is missing")
                yield cur
            except BaseException:
                await cur.execute("ROLLBACK")
                raise
            await cur.execute("COMMIT")

    async def _save(self, bundle: SkillBundleContents) -> None:
        problem = identifier_problem(bundle.folder)
        if problem:
            raise InvalidBundle(f"{self._where}: skill folder name {bundle.folder!r} {problem}")
        # Bytes travel as hex strings through UNHEX(): aiomysql's own bytes escaping is broken
        # with PyMySQL >= 1.2, and a hex string is still a plain query parameter.
        async with self._transaction() as cur:
            await cur.execute(
                f"REPLACE INTO {self._skills} (folder, skill_md_name, skill_md, content_hash)"
                " VALUES (%s, %s, UNHEX(%s), %s)",
                (bundle.folder, bundle.skill_md_name, bundle.skill_md.hex(), bundle_digest(bundle)),
            )
            await cur.execute(f"DELETE FROM {self._files} WHERE folder = %s", (bundle.folder,))
            if bundle.files:
                await cur.executemany(
                    f"INSERT INTO {self._files} (folder, path, mode, size, content) VALUES (%s, %s, %s, %s, UNHEX(%s))",
                    [(bundle.folder, f.path, f.mode, len(f.data), f.data.hex()) for f in bundle.files],
                )

    async def _delete(self, folder: str) -> None:
        async with self._transaction() as cur:
            await cur.execute(f"DELETE FROM {self._skills} WHERE folder = %s", (folder,))
            if cur.rowcount == 0:
                raise BundleNotFound(f"{self._where}: no skill folder {folder!r} to delete")
            await cur.execute(f"DELETE FROM {self._files} WHERE folder = %s", (folder,))

    async def _aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._owns_pool:
            pool.close()
            await pool.wait_closed()

"""One factory for the workspace filesystem in every mode the tests run against."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    CompositeFilesystem,
    KeyValueStore,
    LocalFilesystem,
    MemoryKeyValueStore,
    MySQLKeyValueStore,
    RemoteFilesystem,
    SandboxFilesystem,
    SQLiteKeyValueStore,
)
from tests.support.mysql import STORE_TABLES, drop_tables, unique_table

__all__ = ["HOST_MODES", "MODES", "Built", "build_filesystem", "open_filesystem", "shared_dir"]

MODES = ("local", "local-shell", "remote", "sandbox")
"""The modes the pipeline suites run over ("remote" is a SQLite store in the workspace folder)."""

HOST_MODES = ("local", "local-shell", "sandbox", "composite")
"""The modes whose files are a folder on the host."""


def open_filesystem(
    mode: str,
    root: Path,
    *,
    bwrap: str | None = None,
    mysql_dsn: str | None = None,
    table: str | None = None,
    output_limit: int | None = None,
    store: KeyValueStore | None = None,
) -> AbstractFilesystem:
    """The workspace at ``root`` as ``mode``: ``local``, ``local-shell``, ``sandbox`` (needs
    ``bwrap``), ``memory``, ``sqlite`` or ``remote`` (a SQLite file in ``root``), ``mysql``
    (needs ``mysql_dsn`` and ``table``), or ``composite`` (local with an in-memory remote
    mounted at ``mnt/remote``). ``memory`` and ``composite`` use ``store`` when given (to look
    into it afterwards). Not entered yet: use it as ``async with``."""
    limit = {} if output_limit is None else {"output_limit": output_limit}
    if mode in ("local", "local-shell"):
        return LocalFilesystem(root, shell=mode == "local-shell", **limit)
    if mode == "sandbox":
        assert bwrap is not None, "the sandbox mode needs the bwrap fixture"
        return SandboxFilesystem(root, bwrap=bwrap, **limit)
    if mode == "memory":
        return RemoteFilesystem(store or MemoryKeyValueStore(), agent_id="agent")
    if mode in ("sqlite", "remote"):
        root.mkdir(parents=True, exist_ok=True)
        return RemoteFilesystem(SQLiteKeyValueStore(root / "store.db"), agent_id="agent")
    if mode == "mysql":
        assert mysql_dsn is not None and table is not None, "the mysql mode needs a DSN and a table"
        return RemoteFilesystem(MySQLKeyValueStore(mysql_dsn, table=table, pool_size=4), agent_id="agent")
    if mode == "composite":
        routed = RemoteFilesystem(store or MemoryKeyValueStore(), agent_id="agent")
        return CompositeFilesystem(LocalFilesystem(root), {"mnt/remote": routed})
    raise ValueError(f"unknown filesystem mode {mode!r}")


@contextmanager
def shared_dir(prefix: str = "sandbox-") -> Iterator[Path]:
    """A folder the sandbox's unprivileged user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True, kw_only=True)
class Built:
    """A filesystem :func:`build_filesystem` made (not entered yet) and where its data lives."""

    fs: AbstractFilesystem
    host: Path | None = None
    """The host folder behind it (modes in :data:`HOST_MODES`)."""
    sqlite: Path | None = None
    mysql_dsn: str | None = None
    table: str = ""


@asynccontextmanager
async def build_filesystem(
    request: pytest.FixtureRequest,
    mode: str,
    tmp_path: Path,
    *,
    output_limit: int | None = None,
    store: KeyValueStore | None = None,
) -> AsyncIterator[Built]:
    """:func:`open_filesystem` for a fixture: takes what ``mode`` needs from the fixtures
    (``bwrap`` and ``sandbox_dir`` for the sandbox, ``mysql_dsn`` and a fresh table for MySQL)
    and drops the table afterwards."""
    table = unique_table("fs_test") if mode == "mysql" else ""
    dsn: str | None = request.getfixturevalue("mysql_dsn") if table else None
    bwrap: str | None = request.getfixturevalue("bwrap") if mode == "sandbox" else None
    host: Path = request.getfixturevalue("sandbox_dir") if mode == "sandbox" else tmp_path / "ws"
    root = tmp_path if mode == "sqlite" else host
    fs = open_filesystem(mode, root, bwrap=bwrap, mysql_dsn=dsn, table=table, output_limit=output_limit, store=store)
    try:
        yield Built(
            fs=fs,
            host=host if mode in HOST_MODES else None,
            sqlite=root / "store.db" if mode == "sqlite" else None,
            mysql_dsn=dsn,
            table=table,
        )
    finally:
        if dsn is not None:
            await drop_tables(dsn, table, STORE_TABLES)

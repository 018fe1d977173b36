"""One factory for the workspace filesystem in every mode the tests run against."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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

__all__ = ["MODES", "open_filesystem", "shared_dir"]

MODES = ("local", "local-shell", "remote", "sandbox")
"""The modes the pipeline suites run over ("remote" is a SQLite store in the workspace folder)."""


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

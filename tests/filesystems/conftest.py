"""Every filesystem mode and store, built fresh per test, for the conformance suite."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    CompositeFilesystem,
    LocalFilesystem,
    MemoryKeyValueStore,
    MySQLKeyValueStore,
    RemoteFilesystem,
    SandboxFilesystem,
    SQLiteKeyValueStore,
)
from tests.support.fs_cases import Case, drop_mysql_tables, mysql_table


@pytest.fixture
def sandbox_dir() -> Iterator[Path]:
    """A folder the unprivileged sandbox uid can traverse (pytest's tmp root is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="fs-sandbox-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


MODES = [
    "local",
    "local-shell",
    "local-scoped",
    "memory",
    "sqlite",
    "sqlite-scoped",
    "mysql",
    "sandbox",
    "sandbox-scoped",
    "composite",
]
SHARED = {"local", "local-scoped", "sqlite", "sqlite-scoped", "mysql"}


@pytest.fixture(params=MODES)
async def case(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Case]:
    mode: str = request.param
    table = ""
    if mode.startswith("local"):
        root = LocalFilesystem(tmp_path / "ws", shell=mode == "local-shell", output_limit=4096)
        built = Case(mode, root, {"kind": "local", "root": str(tmp_path / "ws")}, tmp_path / "ws")
        if mode == "local-scoped":
            built.fs = root.scoped("alice")
            built.spec = {**(built.spec or {}), "user": "alice"}
            built.host_root = tmp_path / "ws" / "alice"
    elif mode == "memory":
        built = Case(mode, RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent"))
    elif mode.startswith("sqlite"):
        db = str(tmp_path / "store.db")
        root = RemoteFilesystem(SQLiteKeyValueStore(db), agent_id="agent")
        built = Case(mode, root, {"kind": "sqlite", "path": db, "agent": "agent"})
        if mode == "sqlite-scoped":
            built.fs = root.scoped("alice")
            built.spec = {**(built.spec or {}), "user": "alice"}
            built.extra["owner"] = root
    elif mode == "mysql":
        dsn: str = request.getfixturevalue("mysql_dsn")
        table = mysql_table()
        store = MySQLKeyValueStore(dsn, table=table, pool_size=4)
        built = Case(
            mode,
            RemoteFilesystem(store, agent_id="agent"),
            {"kind": "mysql", "dsn": dsn, "table": table, "agent": "agent"},
        )
    elif mode.startswith("sandbox"):
        request.getfixturevalue("bwrap")
        ws: Path = request.getfixturevalue("sandbox_dir")
        root = SandboxFilesystem(ws, output_limit=4096)
        built = Case(mode, root, host_root=ws)
        if mode == "sandbox-scoped":
            built.fs = root.scoped("alice")
            built.host_root = ws / "alice"
    else:
        routed = RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent")
        built = Case(
            mode,
            CompositeFilesystem(LocalFilesystem(tmp_path / "ws"), {"mnt/remote": routed}),
            host_root=tmp_path / "ws",
        )
    owner = built.extra.get("owner", built.fs)
    assert isinstance(owner, AbstractFilesystem)
    async with owner:
        yield built
    if table:
        await drop_mysql_tables(request.getfixturevalue("mysql_dsn"), table)


@pytest.fixture
def shell_case(case: Case) -> Case:
    if not case.fs.has_shell:
        pytest.skip(f"{case.name} has no shell")
    return case


@pytest.fixture
def shared_case(case: Case) -> Case:
    if case.name not in SHARED:
        pytest.skip(f"{case.name} is not shared across processes")
    return case


def as_root() -> bool:
    return os.geteuid() == 0

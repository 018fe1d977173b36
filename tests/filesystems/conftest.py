"""Every filesystem mode and store, built fresh per test, for the conformance suite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.filesystems import open_filesystem
from tests.support.fs_cases import Case
from tests.support.mysql import STORE_TABLES, drop_tables, unique_table

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
    kind = mode.removesuffix("-scoped")
    table = unique_table("fs_test") if kind == "mysql" else ""
    dsn: str | None = request.getfixturevalue("mysql_dsn") if table else None
    bwrap: str | None = request.getfixturevalue("bwrap") if kind == "sandbox" else None
    host: Path | None = request.getfixturevalue("sandbox_dir") if kind == "sandbox" else tmp_path / "ws"
    root = open_filesystem(
        kind,
        host if kind != "sqlite" else tmp_path,
        bwrap=bwrap,
        mysql_dsn=dsn,
        table=table,
        output_limit=4096 if kind in ("local", "local-shell", "sandbox") else None,
    )
    specs: dict[str, dict[str, str]] = {
        "local": {"kind": "local", "root": str(host)},
        "sqlite": {"kind": "sqlite", "path": str(tmp_path / "store.db"), "agent": "agent"},
        "mysql": {"kind": "mysql", "dsn": dsn or "", "table": table, "agent": "agent"},
    }
    on_host = kind in ("local", "local-shell", "sandbox", "composite")
    built = Case(mode, root, specs.get(kind), host if on_host else None)
    if mode.endswith("-scoped"):
        built.fs = root.scoped("alice")
        built.spec = None if built.spec is None else {**built.spec, "user": "alice"}
        built.host_root = None if built.host_root is None else built.host_root / "alice"
    owner = root if kind == "sqlite" else built.fs  # a scoped remote view shares its owner's store
    async with owner:
        yield built
    if table:
        await drop_tables(request.getfixturevalue("mysql_dsn"), table, STORE_TABLES)


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

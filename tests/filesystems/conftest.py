"""Every filesystem mode and store, built fresh per test, for the conformance suite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.filesystems import build_filesystem
from tests.support.fs_cases import Case

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
    limit = 4096 if kind in ("local", "local-shell", "sandbox") else None
    async with build_filesystem(request, kind, tmp_path, output_limit=limit) as made:
        specs: dict[str, dict[str, str]] = {
            "local": {"kind": "local", "root": str(made.host)},
            "sqlite": {"kind": "sqlite", "path": str(made.sqlite), "agent": "agent"},
            "mysql": {"kind": "mysql", "dsn": made.mysql_dsn or "", "table": made.table, "agent": "agent"},
        }
        built = Case(mode, made.fs, specs.get(kind), made.host)
        if mode.endswith("-scoped"):
            built.fs = made.fs.scoped("alice")
            built.spec = None if built.spec is None else {**built.spec, "user": "alice"}
            built.host_root = None if built.host_root is None else built.host_root / "alice"
        owner = made.fs if kind == "sqlite" else built.fs  # a scoped remote view shares its owner's store
        async with owner:
            yield built


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

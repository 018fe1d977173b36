"""Every filesystem mode and store, built fresh per test, for the conformance suite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems.testing import FilesystemCase, PeerSpec
from tests.support.filesystems import build_filesystem

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
OPEN_PEER = "tests.support.fs_cases:open_peer"
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The conformance tests that open the filesystem again from a second process
    (``shared_case``) take seconds each: ``scripts/test.sh --fast`` leaves them out."""
    for item in items:
        if item.path.is_relative_to(HERE) and "shared_case" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=MODES)
async def filesystem_case(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FilesystemCase]:
    mode: str = request.param
    kind = mode.removesuffix("-scoped")
    limit = 4096 if kind in ("local", "local-shell", "sandbox") else None
    async with build_filesystem(request, kind, tmp_path, output_limit=limit) as made:
        # The modes shared across processes, and how a peer process opens them again.
        shared: dict[str, dict[str, str]] = {
            "local": {"kind": "local", "root": str(made.host)},
            "sqlite": {"kind": "sqlite", "path": str(made.sqlite), "agent": "agent"},
            "mysql": {"kind": "mysql", "dsn": made.mysql_dsn or "", "table": made.table, "agent": "agent"},
        }
        scoped = mode.endswith("-scoped")
        user = "alice" if scoped else ""
        arguments = shared.get(kind)
        built = FilesystemCase(
            fs=made.fs.scoped(user) if scoped else made.fs,
            output_limit=limit,
            shell_sees_root=mode != "sandbox",  # the unscoped sandbox holds only the read-only projected roots
            peer=None if arguments is None else PeerSpec(opener=OPEN_PEER, arguments=arguments, user=user),
        )
        owner = made.fs if kind == "sqlite" else built.fs  # a scoped remote view shares its owner's store
        async with owner:
            yield built


def as_root() -> bool:
    return os.geteuid() == 0

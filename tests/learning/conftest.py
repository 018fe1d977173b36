"""Fixtures for the self-learning loop: a real local workspace and a clock tests can move."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import AuditLog, SidecarUsage
from tests.support.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def workspace(tmp_path: Path) -> AsyncIterator[LocalFilesystem]:
    async with LocalFilesystem(tmp_path / "ws") as fs:
        yield fs


@pytest.fixture
def alice() -> RuntimeContext:
    return RuntimeContext(user_id="alice", session_id="s1", environment="dev")


@pytest.fixture
def audit(workspace: LocalFilesystem, clock: ManualClock) -> AuditLog:
    return AuditLog(workspace, clock=clock)


@pytest.fixture
def usage(workspace: LocalFilesystem) -> SidecarUsage:
    return SidecarUsage(workspace)

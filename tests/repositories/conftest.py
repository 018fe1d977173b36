"""Fixtures for the repository tests: real git remotes in tmp_path, subprocess counting."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_helpers import GitRemote, OpenLog, SubprocessLog

_SUBPROCESSES = SubprocessLog()
sys.addaudithook(_SUBPROCESSES.hook)
_OPENS = OpenLog()
sys.addaudithook(_OPENS.hook)


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[GitRemote]:
    yield GitRemote(tmp_path / "git")


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def subprocesses() -> SubprocessLog:
    return _SUBPROCESSES


@pytest.fixture
def opens() -> OpenLog:
    return _OPENS

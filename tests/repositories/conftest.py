"""Fixtures for the repository tests: real git remotes in tmp_path, subprocess and open recording."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.io import IORecorder, opened_paths, started_subprocesses
from tests.support.repositories import GitRemote


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[GitRemote]:
    yield GitRemote(tmp_path / "git")


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def subprocesses() -> IORecorder:
    return started_subprocesses()


@pytest.fixture
def opens() -> IORecorder:
    return opened_paths()

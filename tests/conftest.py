"""Shared fixtures: the real MariaDB server and bubblewrap the test command set up, and a
folder the sandbox can reach; the ``--large`` option (see ``tests.support.sizing``); Hypothesis
without deadlines.

Outside CI a missing service skips the tests that need it; with ``CI=true`` it is a failure,
so a broken setup can never pass as a green run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.filesystems import shared_dir
from tests.support.sizing import LARGE_ENV

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# A property test proves what it draws, not how fast one example ran: a deadline only fails
# a test on a busy machine (an example over 200 ms, then fast on the replay, is "flaky").
settings.register_profile("harness", deadline=None)
settings.load_profile("harness")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--large",
        action="store_true",
        help=f"run the scale tests at their full size (the same as {LARGE_ENV}=1)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--large"):
        # Through the environment, so that the tests' subprocesses run at the full size too.
        os.environ[LARGE_ENV] = "1"


def pytest_collection_finish(session: pytest.Session) -> None:
    # The tests collected run commands forked from the CLI fork server: start it now, so that
    # it imports the CLI on the other core while the first tests run.
    cli = sys.modules.get("tests.support.cli")
    if cli is not None and session.items and not session.config.option.collectonly:
        cli.start_server()


def _missing(what: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} is required in CI (scripts/test.sh sets it up)", pytrace=False)
    pytest.skip(f"{what} is not available; run scripts/test.sh to set it up")


@pytest.fixture(scope="session")
def mysql_dsn() -> str:
    """DSN of the real MariaDB/MySQL server (``HARNESS_TEST_MYSQL_DSN``)."""
    dsn = os.environ.get("HARNESS_TEST_MYSQL_DSN", "")
    if not dsn:
        _missing("MariaDB (HARNESS_TEST_MYSQL_DSN)")
    return dsn


@pytest.fixture(scope="session")
def bwrap() -> str:
    """Path of a working bubblewrap binary."""
    path = shutil.which("bwrap")
    if path is None:
        _missing("bubblewrap")
        raise AssertionError("unreachable")
    probe = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        _missing(f"a working bubblewrap ({probe.stderr.strip()})")
    return path


@pytest.fixture
def sandbox_dir() -> Iterator[Path]:
    """A folder the unprivileged sandbox uid can traverse (pytest's tmp root is 0700)."""
    with shared_dir() as path:
        yield path

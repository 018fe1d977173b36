"""Running a command as an unprivileged user: root reads every file, so tests about unreadable
files drop to uid/gid 65534 with ``setpriv``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["run_as_nobody"]

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
_CHECKOUT = Path(__file__).resolve().parents[2]


def run_as_nobody(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` run as ``nobody`` from ``/tmp``; skips when the test process cannot drop to it
    or when ``nobody`` cannot reach the interpreter or the checkout (``scripts/test.sh`` makes
    the checkout traversable)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to drop to an unprivileged user (root reads every file)")
    needed = _CHECKOUT / "tests" / "support" / "nobody.py"
    probe = [*NOBODY, sys.executable, "-c", f"open({str(needed)!r}).close()"]
    if subprocess.run(probe, capture_output=True, timeout=60, cwd="/tmp").returncode != 0:
        pytest.skip(f"the unprivileged user cannot run {sys.executable} or read {needed}; make the folders traversable")
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=120, cwd="/tmp", env=env)

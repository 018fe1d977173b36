"""An advisory ``flock`` on a host file, awaited without blocking the event loop."""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from .errors import LockTimeout

__all__ = ["file_lock", "lock_file_name"]

_FIRST_DELAY = 0.002
_MAX_DELAY = 0.05


def lock_file_name(key: str) -> str:
    """A fixed-length, filesystem-safe file name for the lock ``key``."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".lock"


@asynccontextmanager
async def file_lock(path: Path, key: str, timeout: float | None) -> AsyncIterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``async with`` block.

    ``flock`` locks belong to the open file description, so two holders exclude each other
    whether they live in one process or in two; the kernel drops the lock when the holder dies.
    The wait polls with a short backoff instead of parking a worker thread.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = _FIRST_DELAY
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeout(f"lock {key!r} is held elsewhere; gave up after {timeout} s") from None
                remaining = None if deadline is None else deadline - time.monotonic()
                await anyio.sleep(delay if remaining is None else max(0.0, min(delay, remaining)))
                delay = min(delay * 2, _MAX_DELAY)
        yield
    finally:
        os.close(fd)

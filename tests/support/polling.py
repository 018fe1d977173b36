"""``eventually``: wait for something that happens in the background (a watcher, a peer process)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["eventually"]

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]],
    until: Callable[[T], bool] = bool,
    *,
    within: float = 5.0,
    every: float = 0.02,
    what: str = "the condition",
) -> T:
    """Call ``probe`` until ``until(result)`` holds and return that result; fail the test with
    ``<what> did not hold within <within>s`` otherwise. The time limit only bounds a hang: tests
    never assert how long it took."""
    deadline = time.monotonic() + within
    while True:
        result = await probe()
        if until(result):
            return result
        assert time.monotonic() < deadline, f"{what} did not hold within {within}s (last: {result!r})"
        await anyio.sleep(every)

"""``eventually``: wait for something that happens in the background (a watcher, a peer process);
``record_stalls``: how long the event loop kept a task waiting."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["eventually", "record_stalls"]

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


async def record_stalls(stalls: list[float]) -> None:
    """Until cancelled, append to ``stalls`` how long each 1 ms sleep kept this task waiting,
    counting at most the CPU time this process spent meanwhile: a pause the process did not run
    in (the machine busy with other processes, the tests' other workers) is not the event
    loop's."""
    last, last_cpu = time.perf_counter(), time.process_time()
    while True:
        await anyio.sleep(0.001)
        now, cpu = time.perf_counter(), time.process_time()
        stalls.append(min(now - last, cpu - last_cpu))
        last, last_cpu = now, cpu

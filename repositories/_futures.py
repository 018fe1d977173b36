"""Waiting on a check a market runs in its own worker thread, without holding the caller to it."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["wait_for"]


async def wait_for(future: concurrent.futures.Future[Any]) -> None:
    """Until ``future`` is done (cancellable; the future itself runs on). On asyncio the loop is
    woken by the future's callback; elsewhere a worker thread waits for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        await anyio.to_thread.run_sync(concurrent.futures.wait, [future], abandon_on_cancel=True)
        return
    wrapped = asyncio.wrap_future(future)
    wrapped.add_done_callback(_retrieve)  # the caller reads the outcome from ``future``
    await asyncio.wait([wrapped])  # asyncio.wait never cancels what it waits for


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()

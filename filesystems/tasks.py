"""Supervised background tasks: the one way an object runs work beside its caller.

A pipeline's folder watchers, the environment builder, the curator's schedule and an MCP
market's kept connection all run while their owner is open. :class:`BackgroundTasks` is how they
start: each task is referenced until it ends, a crash is logged instead of lost or passed on to
whoever holds the owner open, and closing cancels whatever still runs and waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .resource import AsyncResource

__all__ = ["BackgroundTasks"]

log = logging.getLogger(__name__)


class BackgroundTasks(AsyncResource):
    """The background tasks of one owner, started with :meth:`start_soon` or :meth:`start`.

    - **kept**: every task is referenced here until it ends (the event loop alone would let a
      running task be garbage collected), and :attr:`running` counts them;
    - **supervised**: a task that raises ends alone, its exception logged with its ``name``;
      it never cancels the owner's caller or the other tasks;
    - **closed with the owner**: :meth:`aclose` gives the tasks ``grace`` seconds to end on their
      own (for an owner that asked them to stop first), then cancels the rest and waits for them.
      Starting a task after that raises ``RuntimeError``.

    Tasks are asyncio tasks, so they need not end in the order their owners were opened: owners
    may be entered and closed in any order, and from different tasks.
    """

    def __init__(self, *, grace: float = 0.0) -> None:
        super().__init__()
        self.grace = grace
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        """How many tasks have started and not yet ended."""
        return len(self._tasks)

    def start_soon(self, func: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Run ``func(*args)`` in a new task called ``name``."""
        self._check_open(name)
        self._keep(asyncio.get_running_loop().create_task(self._supervise(func, args, name, None), name=name))

    async def start(self, func: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Run ``func(*args, task_status=...)`` in a new task called ``name`` and return once it
        calls ``task_status.started()`` (anyio's convention). What it raises before that is
        raised here; afterwards it is supervised like any other task."""
        self._check_open(name)
        status = _Status()
        self._keep(asyncio.get_running_loop().create_task(self._supervise(func, args, name, status), name=name))
        await status.ready.wait()
        if status.error is not None:
            raise status.error
        if not status.called:
            raise RuntimeError(f"background task {name!r} ended without reporting that it started")

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise RuntimeError(f"cannot start background task {name!r}: its owner is closed")

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _supervise(
        self, func: Callable[..., Awaitable[Any]], args: tuple[Any, ...], name: str, status: _Status | None
    ) -> None:
        try:
            if status is None:
                await func(*args)
            else:
                await func(*args, task_status=status)
        except Exception as exc:
            if status is not None and not status.called:
                status.error = exc  # start() raises it in its caller
            else:
                log.error("background task %r crashed", name, exc_info=True)
        finally:
            if status is not None:
                status.ready.set()

    async def _aclose(self) -> None:
        tasks = set(self._tasks)
        if not tasks:
            return
        try:
            if self.grace > 0:
                with anyio.move_on_after(self.grace):
                    await asyncio.wait(tasks)
        finally:
            for task in tasks:
                task.cancel()
        await asyncio.wait(tasks)  # their cancellation is theirs: only the closer's own propagates
        self._tasks -= tasks


class _Status:
    """The ``task_status`` :meth:`BackgroundTasks.start` hands its function."""

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.called = False
        self.error: Exception | None = None

    def started(self, value: object = None) -> None:
        self.called = True
        self.ready.set()

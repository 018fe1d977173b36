"""Watch host folders for skill edits, so a warm turn needs no per-file ``stat``.

One watcher per tree (inotify instances are limited), never one per user. Changes under
``.skills-cache`` (the stager's own writes) and ``.harness`` are ignored. External edits reach
the pipeline after the debounce (``DEBOUNCE_MS``) plus watchfiles' step, well under a second.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from filesystems import CACHE_DIR, MACHINE_DIR

__all__ = ["DEBOUNCE_MS", "TreeWatcher"]

DEBOUNCE_MS = 50
_IGNORED_FOLDERS = (CACHE_DIR, MACHINE_DIR, "__pycache__", ".git")
_IGNORED_PART = re.compile(rf"/(?:{'|'.join(map(re.escape, _IGNORED_FOLDERS))})(?:/|$)")
log = logging.getLogger(__name__)


class TreeWatcher:
    """Calls ``on_change(paths)`` with host paths changed below ``root``.

    Run it with ``await task_group.start(watcher.run)``: it reports ready once watching. If
    watching is impossible (no inotify, limits reached) ``on_failure(reason)`` is called and the
    caller falls back to re-reading every turn.
    """

    def __init__(
        self,
        root: Path,
        on_change: Callable[[set[Path]], None],
        on_failure: Callable[[str], None],
    ) -> None:
        self.root = root
        self.on_change = on_change
        self.on_failure = on_failure
        self._stop = anyio.Event()

    def stop(self) -> None:
        """Ask the watcher to finish."""
        self._stop.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch until :meth:`stop` (or cancellation)."""
        from watchfiles import awatch

        root = self.root
        batches = awatch(
            root,
            watch_filter=lambda _change, path: _relevant(root, path),
            debounce=DEBOUNCE_MS,
            step=DEBOUNCE_MS,
            stop_event=self._stop,
            rust_timeout=0,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(self._pump, batches)
            # The watch is registered when the generator first runs; let it get that far.
            for _ in range(3):
                await anyio.sleep(0)
            task_status.started()

    async def _pump(self, batches: AsyncIterator[set[tuple[Any, str]]]) -> None:
        try:
            async for batch in batches:
                self.on_change({Path(path) for _, path in batch})
        except (OSError, RuntimeError) as exc:
            log.warning("cannot watch %s (%s); skills there are re-read every turn", self.root, exc)
            self.on_failure(str(exc))


def _relevant(root: Path, path: str) -> bool:
    """Not below an ignored folder; a plain string scan, as staging makes thousands of events."""
    return _IGNORED_PART.search(path, len(str(root))) is None

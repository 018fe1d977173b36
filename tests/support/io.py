"""Recording this process's file operations and subprocesses through one audit hook.

Audit hooks cannot be removed, so one hook is installed on import and dispatches to the
recorders that are active (``with recorder as seen:``); outside a ``with`` nothing is kept.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["FILE_EVENTS", "IORecorder", "opened_paths", "started_subprocesses"]

FILE_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "os.rename", "os.remove", "os.mkdir", "os.chmod"})
"""File opens, folder listings and writes: what a warm turn must not do."""

_ACTIVE: list[IORecorder] = []


def _first(event: str, args: tuple[Any, ...]) -> object:
    return (event, args[0] if args else None)


class IORecorder:
    """Records ``events`` (audit event names) while active, each as ``record(event, args)``
    (default: ``(event, first argument)``); records for which it returns ``None`` are dropped."""

    def __init__(
        self, events: Iterable[str] = FILE_EVENTS, record: Callable[[str, tuple[Any, ...]], object] = _first
    ) -> None:
        self.events = frozenset(events)
        self.record = record
        self.seen: list[Any] = []

    def __enter__(self) -> list[Any]:
        self.seen = []
        _ACTIVE.append(self)
        return self.seen

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.remove(self)

    def _see(self, event: str, args: tuple[Any, ...]) -> None:
        if event in self.events and (entry := self.record(event, args)) is not None:
            self.seen.append(entry)


def _path(event: str, args: tuple[Any, ...]) -> str | None:
    return os.fsdecode(args[0]) if isinstance(args[0], (str, bytes, os.PathLike)) else None


def _argv(event: str, args: tuple[Any, ...]) -> list[str]:
    argv = args[1]
    return [str(a) for a in argv] if isinstance(argv, (list, tuple)) else [str(argv)]


def opened_paths() -> IORecorder:
    """A recorder of the paths this process opens (for reading or writing)."""
    return IORecorder({"open"}, _path)


def started_subprocesses() -> IORecorder:
    """A recorder of the argv of every subprocess this process starts."""
    return IORecorder({"subprocess.Popen"}, _argv)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    for recorder in _ACTIVE:
        recorder._see(event, args)


sys.addaudithook(_hook)

"""Long work shown on the terminal: one line on stderr, rewritten in place, cleared when done.

Shown only when stderr is a terminal and the command prints no JSON: piped or captured output
stays exactly the command's result.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

from harness.terminal import escape_line

if TYPE_CHECKING:
    from filesystems import Progress, ProgressCallback

__all__ = ["TerminalProgress", "terminal_progress"]

_CLEAR = "\r\x1b[2K"  # back to the line's start, erase it


class TerminalProgress:
    """A :data:`~filesystems.ProgressCallback` writing ``staging <subject>: 1200/6000 files``
    over and over on one line of ``stream``; the final report erases the line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._lock = threading.Lock()  # reports may come from worker threads

    def __call__(self, progress: Progress) -> None:
        if progress.final:
            text = _CLEAR
        else:
            total = "" if progress.total is None else f"/{progress.total}"
            subject = f" {progress.subject}" if progress.subject else ""
            unit = f" {progress.unit}" if progress.unit else ""
            # One line, rewritten in place: what it names (a path, a URL, a skill) must not break it.
            text = _CLEAR + escape_line(f"{progress.task}{subject}: {progress.done}{total}{unit}")
        with self._lock:
            self.stream.write(text)
            self.stream.flush()


def terminal_progress(*, json: bool = False, stream: TextIO | None = None) -> ProgressCallback | None:
    """The progress display for a command: ``None`` (quiet) with ``--json`` or when ``stream``
    (default stderr) is not a terminal."""
    stream = sys.stderr if stream is None else stream
    if json or not stream.isatty():
        return None
    return TerminalProgress(stream)

"""Progress of long work (staging many files, a first clone, an environment build).

The worker counts with a :class:`ProgressReporter`; whoever shows the progress (the CLI's
updating line on a terminal) passes a :data:`ProgressCallback`. The reporter calls it at most
once per ``interval`` with increasing counts, and always with the first and the final count,
so a fast pass costs two calls and a slow one a steady trickle. Work that does not need
reporting creates no reporter at all: warm paths pay nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_PROGRESS_INTERVAL", "Progress", "ProgressCallback", "ProgressReporter"]

#: Seconds between two reports of one piece of work (the first and final ones excepted).
DEFAULT_PROGRESS_INTERVAL = 0.1


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress:
    """``done`` of ``total`` ``unit``-s of ``task`` (e.g. ``"staging"``, ``"files"``) on ``subject``
    (what the work is for: a folder, a market); ``total`` is ``None`` when not known.
    ``final`` marks the last report of the work (``done`` may then be short of ``total`` when
    some of it failed)."""

    task: str
    done: int
    total: int | None
    unit: str = ""
    subject: str = ""
    final: bool = False


#: Receives progress reports. It may be called from a worker thread: keep it quick, and let it
#: not raise (an exception is logged by nobody and ends the work it reports on).
ProgressCallback = Callable[[Progress], None]


class ProgressReporter:
    """Counts one piece of work and reports it to ``callback``, at most every ``interval`` seconds
    (default :data:`DEFAULT_PROGRESS_INTERVAL`).

    Reports ``0`` when made. Safe to :meth:`advance` from several threads. :meth:`finish`
    reports the final count once, whatever the interval; later calls do nothing.
    """

    def __init__(
        self,
        callback: ProgressCallback,
        *,
        task: str,
        total: int | None,
        unit: str = "",
        subject: str = "",
        interval: float | None = None,
    ) -> None:
        self._callback = callback
        self._task = task
        self._total = total
        self._unit = unit
        self._subject = subject
        self._interval = DEFAULT_PROGRESS_INTERVAL if interval is None else interval
        self._done = 0
        self._last = time.monotonic()
        self._finished = False
        self._lock = threading.Lock()
        callback(self._report())

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more units done; report when the interval has passed since the last report."""
        with self._lock:
            self._done += count
            self._report_when_due()

    def update(self, done: int, *, total: int | None = None) -> None:
        """Set the count to ``done`` (and the total to ``total`` when given), for work whose
        worker learns absolute counts (a subprocess printing ``450/1000``); reports under the
        same interval rule as :meth:`advance`."""
        with self._lock:
            self._done = done
            if total is not None:
                self._total = total
            self._report_when_due()

    def finish(self) -> None:
        """Report the final count (``final=True``), once."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._callback(self._report(final=True))

    def _report_when_due(self) -> None:
        """Report the count when the interval has passed; caller holds ``_lock``."""
        now = time.monotonic()
        if self._finished or now - self._last < self._interval:
            return
        self._last = now
        self._callback(self._report())

    def _report(self, *, final: bool = False) -> Progress:
        return Progress(
            task=self._task, done=self._done, total=self._total, unit=self._unit, subject=self._subject, final=final
        )

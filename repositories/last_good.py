"""Serving the last good result of a source that can fail: one mechanism for every market.

A market that cannot be read keeps serving what it last read, marked with why it is stale: the
repository serves its last good :class:`~repositories.base.Snapshot` with ``error`` set, and the
pipeline's layer serves its last good skills with a diagnostic. Both keep that state in a
:class:`LastGood`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["LastGood"]

T = TypeVar("T")


class LastGood(Generic[T]):
    """The last good value of a source that can fail, and whether the source is failing now.

    - :meth:`keep` records a good value (the source answered, or a fallback was read);
    - :meth:`serve` records a failed attempt and returns the last good value marked with why it
      is stale (``mark``: e.g. a snapshot with its ``error`` set, a result with a diagnostic),
      or ``None`` when there never was a good one;
    - :meth:`answered` records that the source answered again.

    :attr:`failing` is ``True`` from a failed attempt until the next :meth:`answered`, so the
    owner reports a failing streak once (its first :meth:`serve`) and its end once, not on every
    retry. Not thread-safe: owners call it from their event loop.
    """

    def __init__(self) -> None:
        self._value: T | None = None
        self._failing = False

    @property
    def value(self) -> T | None:
        """The last good value, or ``None`` before the first."""
        return self._value

    @property
    def failing(self) -> bool:
        """Whether the latest attempt failed (and none answered since)."""
        return self._failing

    def keep(self, value: T) -> T:
        """Remember ``value`` as the last good one and return it (the failing state is left as
        it is: a fallback read while the source is down does not end the streak)."""
        self._value = value
        return value

    def serve(self, mark: Callable[[T], T]) -> T | None:
        """A failed attempt: the last good value marked by ``mark``, or ``None`` when there is
        none yet. Read :attr:`failing` first to tell the first failure of a streak."""
        self._failing = True
        return None if self._value is None else mark(self._value)

    def answered(self) -> bool:
        """The source answered: end a failing streak; ``True`` when one was running."""
        ended, self._failing = self._failing, False
        return ended

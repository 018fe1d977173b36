"""A clock the self-learning tests move by hand (the loop takes an injectable clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class ManualClock:
    """A clock that stands still until a test advances it."""

    def __init__(self, start: datetime = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

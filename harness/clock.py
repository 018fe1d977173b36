"""Clock and timestamp helpers: one injectable clock, UTC everywhere, ISO 8601 on disk."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

__all__ = ["Clock", "from_iso", "system_clock", "to_iso", "utc_day", "utc_stamp"]

Clock = Callable[[], datetime]
"""Returns the current time as an aware ``datetime``; tests inject a controllable one."""


def system_clock() -> datetime:
    """The real current time in UTC."""
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """``moment`` in UTC as ISO 8601 (``2025-01-31T12:00:00.000001+00:00``)."""
    return _utc(moment).isoformat()


def from_iso(text: str) -> datetime:
    """Parse what :func:`to_iso` wrote."""
    return _utc(datetime.fromisoformat(text))


def utc_stamp(moment: datetime) -> str:
    """A compact, sortable, path-safe stamp: ``20250131T120000123456Z``."""
    return _utc(moment).strftime("%Y%m%dT%H%M%S%fZ")


def utc_day(moment: datetime) -> date:
    """The UTC calendar day of ``moment``."""
    return _utc(moment).date()


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"time {moment!r} must be timezone-aware")
    return moment.astimezone(UTC)

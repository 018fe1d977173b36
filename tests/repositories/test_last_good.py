"""``LastGood``: the one mechanism by which a failing source keeps serving its last good value."""

from __future__ import annotations

from repositories import LastGood


def _marked(value: str) -> str:
    return f"{value} (stale)"


def test_nothing_is_served_before_the_first_good_value() -> None:
    last: LastGood[str] = LastGood()
    assert last.serve(_marked) is None
    assert last.failing


def test_a_failure_serves_the_last_good_value_marked() -> None:
    last: LastGood[str] = LastGood()
    assert last.keep("v1") == "v1"
    assert last.serve(_marked) == "v1 (stale)"
    assert last.value == "v1"  # the mark is for the answer, never stored


def test_a_streak_is_reported_once_at_each_end() -> None:
    last: LastGood[str] = LastGood()
    last.keep("v1")
    assert not last.answered()  # not failing: nothing ended
    last.serve(_marked)
    last.serve(_marked)
    assert last.failing
    assert last.answered()
    assert not last.failing and not last.answered()


def test_keeping_a_fallback_does_not_end_a_streak() -> None:
    last: LastGood[str] = LastGood()
    last.serve(_marked)
    last.keep("fallback")
    assert last.failing and last.serve(_marked) == "fallback (stale)"

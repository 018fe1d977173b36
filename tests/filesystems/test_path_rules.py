"""The path and name rules of filesystems.paths that every package words its errors around."""

from __future__ import annotations

import pytest

from filesystems import (
    PathEscapeError,
    has_dot_segment,
    identifier_problem,
    loose_path_parts,
    loose_path_problem,
    normalize_path,
    relative_path_problem,
    segment_problem,
)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\x00b", " a", "e\u0301"])
def test_unsafe_segments_are_refused_with_a_reason(name: str) -> None:
    assert segment_problem(name)


@pytest.mark.parametrize("name", ["demo", ".hidden", "ünïcode", "a b"])
def test_plain_segments_pass(name: str) -> None:
    assert segment_problem(name) is None


@pytest.mark.parametrize("path", ["", "/abs", "a\\b", "a/../b", "a//b", "./a", "a/.git/config", "a\nb"])
def test_paths_that_are_not_clean_and_relative_are_refused(path: str) -> None:
    assert relative_path_problem(path)


def test_a_clean_relative_path_passes() -> None:
    assert relative_path_problem("scripts/run.py") is None


@pytest.mark.parametrize("path", ["", ".", "..", "/abs", "a/", "a//b", "./a", "a/./b", "a/../b", "a/.."])
def test_paths_with_an_empty_or_dot_segment_are_found(path: str) -> None:
    assert has_dot_segment(path)


@pytest.mark.parametrize("path", ["a", ".hidden", "a/b", "...", "a..b/c", "a\\..\\b"])
def test_plain_relative_paths_have_no_dot_segment(path: str) -> None:
    assert not has_dot_segment(path)  # a backslash is no separator here: callers refuse it themselves


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("a\x00", "nul"),
        ("/etc", "absolute"),
        ("\\x", "absolute"),
        ("~/x", "absolute"),
        ("C:x", "absolute"),
        ("a\\..\\b", "parent"),
    ],
)
def test_loosely_written_paths_that_leave_their_folder_are_named(path: str, problem: str) -> None:
    assert loose_path_problem(path) == problem


def test_loosely_written_paths_split_on_both_separators() -> None:
    assert loose_path_problem("a\\./b//c") is None
    assert loose_path_parts("a\\./b//c") == ["a", "b", "c"]


def test_identifiers_must_be_nfc_without_controls() -> None:
    assert identifier_problem("caf\u00e9") is None
    assert identifier_problem("cafe\u0301") == "must be in Unicode NFC form"


def test_normalize_path_refuses_climbing_above_the_root() -> None:
    assert normalize_path("a/./b/../c/") == "a/c"
    with pytest.raises(PathEscapeError):
        normalize_path("a/../../b")

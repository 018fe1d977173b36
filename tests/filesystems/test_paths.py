"""Path normalisation and user-id validation: the rules every mode shares."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from filesystems import InvalidUserId, PathEscapeError, normalize_path, validate_user_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", ""), (".", ""), ("./x", "x"), ("x/", "x"), ("a//b", "a/b"), ("a/./b", "a/b"),
     ("a/b/../c", "a/c"), ("a/..", "")],
)  # fmt: skip
def test_paths_are_normalised(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


@pytest.mark.parametrize("raw", ["/abs", "..", "../x", "a/../../x", "x\x00y"])
def test_escaping_paths_are_refused_as_permission_errors(raw: str) -> None:
    with pytest.raises(PermissionError) as raised:
        normalize_path(raw)
    assert isinstance(raised.value, PathEscapeError)
    assert repr(raw) in str(raised.value)


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "c d", "ü"]), max_size=8))
def test_a_normalised_path_never_climbs_out(segments: list[str]) -> None:
    try:
        normalised = normalize_path("/".join(segments))
    except PathEscapeError:
        return
    assert not normalised.startswith("/")
    assert ".." not in normalised.split("/") and "." not in normalised.split("/")
    assert normalize_path(normalised) == normalised


@pytest.mark.parametrize("user_id", ["alice", "bob-2", "user@example.com", "Zoë"])
def test_safe_user_ids_pass(user_id: str) -> None:
    assert validate_user_id(user_id) == user_id


@pytest.mark.parametrize(
    "user_id",
    ["", "a/b", "a\\b", "..", ".", ".hidden", "_drafts", "skills", "Skills", "subagents",
     "knowledge", "AGENTS.md", "tab\there", "nul\x00", "x" * 256],
)  # fmt: skip
def test_unsafe_or_reserved_user_ids_are_refused(user_id: str) -> None:
    with pytest.raises(InvalidUserId):
        validate_user_id(user_id)
    assert issubclass(InvalidUserId, ValueError)

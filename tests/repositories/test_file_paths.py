"""Every path a market names inside a skill folder is checked on every read: the check is
memoised for the plain strings most skills repeat, never for a refusal; anything else is refused
as a path (not an error of the memo)."""

from __future__ import annotations

import pytest

from repositories import UnsafePath
from repositories.discovery import normalise_file_path

ESCAPES = ("../secret", "/etc/passwd", "a/../../b", "scripts\\run.py", "a\x00b", ".git/config", "", "./")


@pytest.mark.parametrize("path", ESCAPES)
def test_an_escape_is_refused_on_every_call(path: str) -> None:
    for _ in range(3):
        with pytest.raises(UnsafePath):
            normalise_file_path(path)


def test_a_safe_path_is_normalised_the_same_each_time() -> None:
    assert [normalise_file_path("./scripts//run.py") for _ in range(3)] == ["scripts/run.py"] * 3


@pytest.mark.parametrize("path", [["scripts", "run.py"], None, b"scripts/run.py"])
def test_a_path_that_is_not_a_string_is_refused_as_a_path(path: object) -> None:
    with pytest.raises(UnsafePath):
        normalise_file_path(path)  # type: ignore[arg-type]

"""The secret redactor masks values, not the text around them: a hint's placeholder and a
bracket closing the surrounding message stay as written."""

from __future__ import annotations

import pytest

from filesystems import redact_secrets


@pytest.mark.parametrize(
    "hint",
    [
        "no API key for openai:gpt-4o: set OPENAI_API_KEY or pass api_key=...",
        "pass api_key=\u2026 or password=....",
    ],
)
def test_a_placeholder_in_a_hint_is_not_masked(hint: str) -> None:
    assert redact_secrets(hint) == hint


def test_a_value_ending_like_a_placeholder_is_still_masked() -> None:
    assert redact_secrets("password=hunter2...") == "password=***"


def test_the_closing_parenthesis_after_a_masked_value_stays() -> None:
    error = "(1045, \"Access denied for user 'root'@'localhost' (using password: YES)\")"
    assert redact_secrets(error) == "(1045, \"Access denied for user 'root'@'localhost' (using password: ***)\")"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[token=abc123]", "[token=***]"),
        ("{password=s3cret}", "{password=***}"),
        ("password=a(b)c)", "password=***)"),
        ("password=a(b)", "password=***"),
    ],
)
def test_only_brackets_the_value_did_not_open_are_kept(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown

"""The frontmatter fast path must give exactly what the YAML path gives, or step aside.

The YAML path (PyYAML within limits, spec text fields read as text) is the reference; the fast
path reads common ``key: value`` frontmatter without it. Hypothesis generates frontmatter with
the shapes that have broken hand-written readers before: odd whitespace, empty values, trailing
spaces, quotes, colons, ``#`` comments, unicode, tabs, CRLF, duplicate keys, block scalars and
keys without values.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.skills.frontmatter import _NOT_FAST, FrontmatterError, _simple_mapping, split_frontmatter, yaml_mapping
from tests.support.sizing import sized

_VALUE_CHARS = st.sampled_from(
    list("abcXYZ019 -_.:#&*!|>'\"%@`,[]{}?/\\~=+") + ["é", "\t", "\u00a0", "\x85", "\u2028", "\ufeff", "\x7f", "😀"]
)
_SAFE = st.sampled_from(list("abc XYZ019.,/;()é&#:'-"))
_risky_values = st.one_of(
    st.text(_VALUE_CHARS, min_size=0, max_size=20),
    st.sampled_from(
        [
            "",
            " ",
            "true",
            "False",
            "yes",
            "no",
            "off",
            "null",
            "~",
            "1",
            "1.0",
            "0x1f",
            "2024-01-01",
            ".inf",
            "'q'",
            '"d"',
            "''",
            '""',
            "a: b",
            "a #c",
            "x:",
            "|",
            ">-",
            "'it''s'",
            '"a\\tb"',
            "[a, b]",
            "{k: v}",
            "&x a",
            "*x",
            "!!str 1",
            "- a",
        ]
    ),
)
_safe_values = st.one_of(
    st.text(_SAFE, min_size=1, max_size=30).filter(lambda s: s.strip() == s),
    st.text(_SAFE, min_size=1, max_size=30).map(lambda s: f'"{s}"'),
    st.text(_SAFE, min_size=1, max_size=30).map(lambda s: f"'{s}'"),
)
# Mostly values the fast path may accept, so its answers are compared often.
_values = st.integers(0, 9).flatmap(lambda i: _safe_values if i < 7 else _risky_values)
_keys = st.integers(0, 9).flatmap(
    lambda i: (
        st.sampled_from(["name", "description", "license", "compatibility", "metadata", "version", "x"])
        if i < 5
        else st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,8}", fullmatch=True)
        if i < 9
        else st.sampled_from(["true", "null", "1", "a b", "-x", "no", "", "é"])
    )
)
_spaces = st.sampled_from(["", " ", "  ", "\t"])
_extra_lines = st.sampled_from(
    ["# comment", "", "  ", "\t", "...", "- item", "\tx: y", "  # indented comment", "|", "  more text", "---"]
)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        key = draw(_keys)
        if draw(st.integers(0, 3)):
            lines.append(f"{key}:{draw(st.sampled_from([' ', ' ', '  ', '']))}{draw(_values)}{draw(_spaces)}")
        else:
            lines.append(f"{key}:{draw(_spaces)}")
            indent = " " * draw(st.integers(0, 3))
            for _ in range(draw(st.integers(0, 3))):
                lines.append(f"{indent}{draw(_keys)}: {draw(_values)}{draw(_spaces)}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_extra_lines))
    return "\n".join(lines) + "\n"


def _reference(text: str) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    try:
        return yaml_mapping(text)
    except FrontmatterError:
        return None


def _types(fields: dict[str, Any]) -> list[Any]:
    return [(type(v), _types(v) if isinstance(v, dict) else None) for v in fields.values()]


def assert_agrees_or_defers(text: str) -> None:
    """The fast path reads ``text`` exactly as the YAML path does (values, key order, types and
    duplicate keys), or leaves it to the YAML path."""
    fast = _simple_mapping(text)
    if fast is None:
        return
    expected = _reference(text)
    assert expected is not None, "the fast path accepted frontmatter the YAML path refuses"
    assert fast == expected
    assert list(fast[0]) == list(expected[0])
    assert _types(fast[0]) == _types(expected[0])


# 250 generated documents a run (a fresh draw each local run, and Hypothesis replays the failures
# it saved; under CI=true it draws the same ones each time); 3,000 with --large, as after a
# change to the fast path. Drawing the documents is most of the cost (about 10 ms each).
@pytest.mark.slow
@settings(max_examples=sized(250, full=3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents())
def test_fast_path_agrees_with_the_yaml_path_or_defers(text: str) -> None:
    assert_agrees_or_defers(text)


@settings(max_examples=sized(100, full=1000), deadline=None)
@given(_documents())
def test_crlf_and_lf_frontmatter_parse_the_same(text: str) -> None:
    def parse(data: bytes) -> object:
        try:
            parsed = split_frontmatter(data)
        except FrontmatterError as exc:
            return exc.code
        return parsed.fields, parsed.duplicate_keys

    lf = f"---\n{text}---\nbody\n"
    assert parse(lf.replace("\n", "\r\n").encode()) == parse(lf.encode())


def test_typical_frontmatter_takes_the_fast_path() -> None:
    text = 'name: pdf\ndescription: Use when reading PDFs, e.g. forms & scans.\nlicense: MIT\nmetadata:\n  author: docs-team\n  version: "2.1"\n'
    assert _simple_mapping(text) == yaml_mapping(text)
    assert _simple_mapping(text) is not None


def test_an_empty_value_with_a_trailing_space_never_raises() -> None:
    text = "name: demo\ndescription: \n"
    assert _simple_mapping(text) is None
    assert yaml_mapping(text) == ({"name": "demo", "description": ""}, ())


def test_text_fields_that_look_like_numbers_or_booleans_stay_text_on_the_fast_path() -> None:
    text = "name: no\ndescription: 2048\nmetadata:\n  version: 1.0\n  beta: yes\n"
    fast = _simple_mapping(text)
    assert fast == ({"name": "no", "description": "2048", "metadata": {"version": "1.0", "beta": "yes"}}, ())
    assert fast == yaml_mapping(text)


def test_a_duplicate_key_keeps_the_last_value_on_both_paths() -> None:
    text = "name: a\ndescription: first\ndescription: second\n"
    assert _simple_mapping(text) == yaml_mapping(text) == ({"name": "a", "description": "second"}, ("description",))


def test_characters_yaml_reads_as_line_breaks_go_to_the_yaml_path() -> None:
    assert _simple_mapping("name: a\x85b\n") is None
    assert _simple_mapping("name: a\u2028b\n") is None


# The characters the fast path reads, as the ranges YAML takes as-is: tab, line feed, printable
# ASCII, then everything from NBSP up but NEL's C1 block, LS, PS, surrogates, BOM and U+FFFE/FFFF.
_READABLE = re.compile("[\t\n -~\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def test_the_fast_path_refuses_exactly_the_characters_yaml_does_not_take_as_is() -> None:
    # Every code point, one at a time: both checks look at single characters, so agreeing on each
    # is agreeing on every text.
    differ = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if (_NOT_FAST.search(chr(code)) is None) != (_READABLE.fullmatch(chr(code)) is not None)
    ]
    assert differ == []
    assert _simple_mapping("name: a\ufeffb\n") is None and _simple_mapping("name: a\ufefdb\n") is not None

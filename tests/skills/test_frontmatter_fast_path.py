"""The frontmatter fast path must give exactly what YAML gives, or step aside."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.frontmatter import _simple_mapping

_VALUE_CHARS = st.sampled_from(list("abcXYZ019 -_.:#&*!|>'\"%@`,[]{}?/\\~=+") + ["é", "\t"])
_SAFE = st.sampled_from(list("abc XYZ019.,/;()é&#:'-"))
_risky_values = st.one_of(
    st.text(_VALUE_CHARS, min_size=1, max_size=20),
    st.sampled_from(["true", "False", "yes", "off", "null", "~", "1", "1.0", "0x1f", "2024-01-01", ".inf", "'q'", '"d"', "''", "a: b"]),
)
_safe_values = st.one_of(
    st.text(_SAFE, min_size=1, max_size=30).filter(lambda s: s.strip() == s),
    st.text(_SAFE, min_size=1, max_size=30).map(lambda s: f'"{s}"'),
)
# Mostly values the fast path may accept, so its answers are compared often.
_values = st.integers(0, 9).flatmap(lambda i: _safe_values if i < 8 else _risky_values)
_keys = st.integers(0, 9).flatmap(
    lambda i: st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,8}", fullmatch=True)
    if i < 9
    else st.sampled_from(["true", "null", "1", "a b", "-x"])
)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        key = draw(_keys)
        if draw(st.booleans()):
            lines.append(f"{key}: {draw(_values)}")
        else:
            lines.append(f"{key}:")
            indent = " " * draw(st.integers(0, 3))
            for _ in range(draw(st.integers(0, 3))):
                lines.append(f"{indent}{draw(_keys)}: {draw(_values)}")
        if draw(st.integers(0, 29)) == 0:
            lines.append(draw(st.sampled_from(["# comment", "", "  ", "...", "- item", "\tx: y"])))
    return "\n".join(lines) + "\n"


@settings(max_examples=1000, deadline=None)
@given(_documents())
def test_fast_path_agrees_with_yaml(text: str) -> None:
    fast = _simple_mapping(text)
    if fast is None:
        return
    expected = yaml.load(text, Loader=yaml.SafeLoader)
    assert fast == expected
    assert [type(v) for v in fast.values()] == [type(v) for v in expected.values()]


def test_typical_frontmatter_takes_the_fast_path() -> None:
    text = "name: pdf\ndescription: Use when reading PDFs, e.g. forms & scans.\nlicense: MIT\nmetadata:\n  author: docs-team\n  version: \"2.1\"\n"
    assert _simple_mapping(text) == yaml.safe_load(text)

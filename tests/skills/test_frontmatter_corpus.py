"""The frontmatter fast path over a fixed corpus of tricky YAML: it gives exactly what the YAML
path gives (values, types, key order, duplicate keys) or steps aside, and the closing ``---``
line is found where a line-by-line walk finds it.

The generated documents of ``test_frontmatter_fast_path.py`` cover random shapes; this corpus
names the ones real SKILL.md files use: quotes, colons, URLs, multi-line and block scalars,
anchors and aliases, booleans, dates, numbers, lists, comments, tags, duplicate keys.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.skills.frontmatter import (
    FrontmatterError,
    _closing_line,
    _simple_mapping,
    split_frontmatter,
)
from tests.skills.test_frontmatter_fast_path import assert_agrees_or_defers

CORPUS = [
    "name: pdf\ndescription: Reads PDFs.\n",
    "name: pdf   \ndescription: trailing blanks   \n",
    "description: see https://example.com/a?b=c#d for more\n",
    "description: a: b\n",
    "description: ends with a colon:\n",
    'description: "quoted: yes"\n',
    "description: 'single quoted'\n",
    "description: 'it''s'\n",
    'description: "escaped \\" quote"\n',
    'description: "tab\\there"\n',
    "description: >\n  folded\n  text\n",
    "description: |\n  literal\n  text\n",
    "description: >-\n  folded, stripped\n",
    "description: first line\n  continued line\n",
    "a: &x value\nb: *x\n",
    "metadata: &m\n  k: v\nother: *m\n",
    "disable-model-invocation: true\n",
    "disable-model-invocation: True\nx: yes\ny: No\nz: off\n",
    "name: no\ndescription: yes\n",
    "x: 2024-01-01\n",
    "x: 2024-01-01 10:00:00\n",
    "license: 2024-01-01\n",
    "version: 1.0\n",
    "x: 1\ny: 1.5\nz: 0x1f\nw: .inf\n",
    "compatibility: 3.11\n",
    'metadata:\n  version: 1.0\n  count: 3\n  flag: true\n  quoted: "2.0"\n',
    "allowed-tools: [Read, Write]\n",
    "allowed-tools:\n  - Read\n  - Write\n",
    "tags:\n- a\n- b\n",
    "x: ~\ny: null\nz: Null\n",
    "x:\nname: after a key without value\n",
    "# a comment\nname: a # trailing comment\n",
    "name: a#b\n",
    "name: a\nname: b\n",
    "metadata:\n  k: 1\n  k: 2\n",
    "metadata:\n  a: b\nmetadata:\n  c: d\n",
    "description: café ☕ 😀\n",
    "description: a\u2028b\n",
    "description: a\x85b\n",
    "description:\tvalue after a tab\n",
    "name: a\tb\n",
    "metadata:\nname: x\n",
    "metadata:\n   a: b\n   c: d\n",
    "metadata:\n  a: b\n    c: d\n",
    "metadata:\n  a: b\n c: d\n",
    '"quoted key": v\n',
    "true: x\n",
    "1: x\n",
    "metadata: {a: b}\n",
    "x: !!str 1\n",
    "x: !!python/object/apply:os.system ['true']\n",
    "x: '\n",
    'x: "unclosed\n',
    "- a list\n- at the top\n",
    "just text\n",
    "name: a\n...\n",
    "when_to_use: When the user asks: anything\n",
    "when-to-use: plain words\nmetadata:\n  when_to_use: nested\n",
    "name: a\n\n\ndescription: blank lines between\n",
    "name: '  padded  '\n",
    "name: %percent\n",
    "name: @at\n",
    "name: `tick\n",
    "name: -dash\n",
    "name: ?question\n",
    "name: a,b,[c]\n",
]

# Frontmatter the fast path must read itself (the shapes most SKILL.md files have).
FAST = [
    "name: pdf\ndescription: Reads PDFs.\n",
    "description: see https://example.com/a?b=c#d for more\n",
    'metadata:\n  version: 1.0\n  count: 3\n  flag: true\n  quoted: "2.0"\n',
    "disable-model-invocation: true\n",
    "name: no\ndescription: yes\n",
    "# a comment\nname: a\n\n  # an indented comment\ndescription: b\n",
    "name: a\nname: b\n",
]


@pytest.mark.parametrize("text", CORPUS)
def test_the_fast_path_agrees_with_yaml_or_defers(text: str) -> None:
    assert_agrees_or_defers(text)


@pytest.mark.parametrize("text", FAST)
def test_common_frontmatter_takes_the_fast_path(text: str) -> None:
    assert _simple_mapping(text) is not None


@pytest.mark.parametrize("text", CORPUS)
def test_a_whole_skill_md_parses_alike_with_lf_crlf_and_a_bom(text: str) -> None:
    def parse(data: bytes) -> object:
        try:
            parsed = split_frontmatter(data)
        except FrontmatterError as exc:
            return exc.code
        return parsed.fields, parsed.duplicate_keys, parsed.body

    document = f"---\n{text}---\n\n# Body\n"
    expected = parse(document.encode())
    assert parse(document.replace("\n", "\r\n").encode()) == expected
    assert parse(b"\xef\xbb\xbf" + document.encode()) == expected


def _closing_line_by_lines(text: str, start: int) -> tuple[int, int]:
    """The closing line found by walking every line from ``start`` (the reference)."""
    pos = start
    while True:
        if text.startswith("---", pos):
            line_end = text.find("\n", pos)
            line_end = len(text) if line_end < 0 else line_end
            if text[pos:line_end].strip() == "---":
                return pos, min(line_end + 1, len(text))
        newline = text.find("\n", pos)
        if newline < 0:
            return -1, -1
        pos = newline + 1


_LINES = st.sampled_from(["---", "--- ", "---\t", "----", " ---", "--", "---x", "a: b", "", "x ---", "-- -"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=8), st.booleans())
def test_the_closing_line_is_where_a_line_walk_finds_it(lines: list[str], final_newline: bool) -> None:
    text = "---\n" + "\n".join(lines) + ("\n" if final_newline else "")
    assert _closing_line(text, 4) == _closing_line_by_lines(text, 4)


@pytest.mark.parametrize(
    ("document", "body"),
    [
        ("---\nname: a\ndescription: b\n---\nbody", "body"),
        ("---\nname: a\ndescription: b\n--- \nbody", "body"),
        ("---\nname: a\ndescription: b\n---", ""),
        ("---\nname: a\ndescription: 'x ---'\n---\n\n\nbody\n", "body\n"),
    ],
)
def test_the_body_starts_after_the_closing_line(document: str, body: str) -> None:
    assert split_frontmatter(document.encode()).body == body


def test_a_line_of_four_dashes_does_not_close_the_frontmatter() -> None:
    with pytest.raises(FrontmatterError) as caught:
        split_frontmatter(b"---\nname: a\n----\n")
    assert caught.value.code == "unclosed-frontmatter"

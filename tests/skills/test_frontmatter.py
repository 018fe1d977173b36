"""SKILL.md parsing: encodings, delimiters and the safety limits on YAML."""

from __future__ import annotations

import pytest

from harness.frontmatter import MAX_ALIASES, MAX_FRONTMATTER_BYTES, FrontmatterError, split_frontmatter


def test_fields_keep_file_order_and_yaml_types() -> None:
    parsed = split_frontmatter(b"---\nname: a\ndescription: b\nversion: 2\nflag: true\n---\n# Body\n")
    assert list(parsed.fields) == ["name", "description", "version", "flag"]
    assert parsed.fields["version"] == 2 and parsed.fields["flag"] is True
    assert parsed.body == "# Body\n"


def test_crlf_and_bom_are_accepted() -> None:
    parsed = split_frontmatter("\ufeff---\r\nname: a\r\ndescription: b\r\n---\r\nline1\r\nline2\r\n".encode())
    assert parsed.fields == {"name": "a", "description": "b"}
    assert parsed.body == "line1\nline2\n"


def test_empty_body_after_closing_line_without_newline() -> None:
    assert split_frontmatter(b"---\nname: a\ndescription: b\n---").body == ""


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"name: a\n", "no-frontmatter"),
        (b"----\nname: a\n---\n", "no-frontmatter"),
        (b"---\nname: a\ndescription: b\n", "unclosed-frontmatter"),
        (b"---\nname: [unclosed\n---\n", "invalid-yaml"),
        (b"---\n- a\n- b\n---\n", "frontmatter-not-mapping"),
        (b"---\n---\n", "frontmatter-not-mapping"),
        (b"---\njust a string\n---\n", "frontmatter-not-mapping"),
        (b"---\nname: \xff\xfe\n---\n", "invalid-utf8"),
        (b"\x00\x01\x02\x89PNG", "invalid-utf8"),
    ],
)
def test_broken_files_name_the_problem(data: bytes, code: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(data)
    assert info.value.code == code


def test_python_tags_are_refused_and_never_executed(tmp_path: object) -> None:
    data = b"---\nname: a\ndescription: !!python/object/apply:os.system ['touch /tmp/harness-pwned']\n---\n"
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(data)
    assert info.value.code == "invalid-yaml"
    assert "python/object" in str(info.value)
    import os

    assert not os.path.exists("/tmp/harness-pwned")


def test_alias_bomb_is_refused_before_expansion() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 12):
        prev = chr(ord("a") + level - 1)
        cur = chr(ord("a") + level)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    data = ("---\nname: a\ndescription: b\n" + "\n".join(lines) + "\n---\n").encode()
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(data)
    assert info.value.code == "yaml-too-many-aliases"
    assert str(MAX_ALIASES) in str(info.value)


def test_a_few_aliases_are_fine() -> None:
    parsed = split_frontmatter(b"---\nname: a\ndescription: &d hello\nmetadata: {summary: *d}\n---\n")
    assert parsed.fields["metadata"] == {"summary": "hello"}


@pytest.mark.parametrize(
    "text",
    ["x: " + "[" * 5000 + "]" * 5000, "x:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "end: 1"],
)
def test_deep_nesting_is_refused(text: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(f"---\nname: a\ndescription: b\n{text}\n---\n".encode())
    assert info.value.code == "yaml-too-deep"


def test_huge_frontmatter_is_refused() -> None:
    filler = "x" * (MAX_FRONTMATTER_BYTES + 1)
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(f"---\nname: a\ndescription: {filler}\n---\n".encode())
    assert info.value.code == "frontmatter-too-large"

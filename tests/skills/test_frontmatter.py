"""SKILL.md parsing: encodings, delimiters and the safety limits on YAML."""

from __future__ import annotations

import pytest

from harness.skills.frontmatter import MAX_ALIASES, MAX_FRONTMATTER_BYTES, FrontmatterError, split_frontmatter


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
    [
        "x: " + "[" * 5000 + "]" * 5000,
        "x:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "end: 1",
    ],
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


@pytest.mark.parametrize("value", ["", " ", "   "])
def test_an_empty_value_after_the_colon_is_an_empty_string_not_an_exception(value: str) -> None:
    parsed = split_frontmatter(f"---\nname: demo\ndescription:{value}\n---\n".encode())
    assert parsed.fields == {"name": "demo", "description": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: no", "no"),
        ("name: 2048", "2048"),
        ("name: ~", "~"),
        ("description: 2024-01-01", "2024-01-01"),
        ("license: yes", "yes"),
        ("compatibility: 3.12", "3.12"),
    ],
)
def test_spec_text_fields_are_read_as_written_not_typed_by_yaml_1_1(text: str, expected: str) -> None:
    key = text.split(":")[0]
    assert split_frontmatter(f"---\n{text}\n---\n".encode()).fields[key] == expected


@pytest.mark.parametrize("metadata", ["metadata:\n  version: 1.0\n  beta: no", "metadata: {version: 1.0, beta: no}"])
def test_metadata_keys_and_values_are_read_as_text(metadata: str) -> None:
    fields = split_frontmatter(f"---\nname: a\n{metadata}\n---\n".encode()).fields
    assert fields["metadata"] == {"version": "1.0", "beta": "no"}


def test_other_fields_keep_their_yaml_types() -> None:
    fields = split_frontmatter(b"---\nname: a\ndisable-model-invocation: true\ncount: 3\n---\n").fields
    assert fields["disable-model-invocation"] is True and fields["count"] == 3


@pytest.mark.parametrize(
    ("text", "duplicates", "description"),
    [
        ("description: a\ndescription: b", ("description",), "b"),
        ('description: a\n"description": "b c"', ("description",), "b c"),
        ("description: a\nmetadata:\n  v: 1\n  v: 2", ("metadata.v",), "a"),
    ],
)
def test_duplicate_keys_are_listed_and_the_last_value_wins(
    text: str, duplicates: tuple[str, ...], description: str
) -> None:
    parsed = split_frontmatter(f"---\nname: a\n{text}\n---\n".encode())
    assert parsed.duplicate_keys == duplicates
    assert parsed.fields["description"] == description


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"---\nname: a\ndescription: [unclosed\n---\n", 4),
        (b"\xef\xbb\xbf---\r\nname: a\r\n\r\ndescription: b\r\n  bad: x\r\n---\r\n", 5),
        (b"---\nname: a\n\tdescription: tab\n---\n", 3),
    ],
)
def test_yaml_errors_give_the_line_number_in_the_file(data: bytes, line: int) -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(data)
    assert info.value.code == "invalid-yaml"
    assert f"line {line}," in str(info.value)

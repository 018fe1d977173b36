"""Lenient runtime loading: what is skipped, what loads with a warning, what is always refused."""

from __future__ import annotations

import pytest

from harness import Layer, load_skill
from harness.skills.frontmatter import split_frontmatter
from harness.skills.skill import Skill


def _load(text: str, folder: str = "demo") -> tuple[object, list[str]]:
    skill, diagnostics = load_skill(
        text.encode(), folder=folder, location=f"/ws/skills/{folder}", source="workspace", layer=Layer.WORKSPACE
    )
    return skill, [f"{d.severity}:{d.code}" for d in diagnostics]


def test_good_skill_loads_with_all_fields() -> None:
    skill, diags = load_skill(
        b"---\nname: demo\ndescription: Does demo things.\nlicense: MIT\ndisable-model-invocation: true\n---\nBody\n",
        folder="demo",
        location="/ws/skills/demo",
        source="workspace-namespaced",
        layer=Layer.USER,
        files=("scripts/run.sh",),
    )
    assert skill is not None
    assert skill.skill_id == "demo_workspace-namespaced"
    assert skill.hidden and skill.disable_model_invocation
    assert list(skill.metadata) == ["name", "description", "license", "disable-model-invocation"]
    assert skill.location == "/ws/skills/demo" and skill.files == ("scripts/run.sh",)
    assert skill.body == "Body\n" and skill.raw.startswith(b"---")
    assert diags == []


@pytest.mark.parametrize(
    "data",
    [
        b"---\nname: demo\ndescription: d\n---\n\n\nStep one.\n---\nStep two.\n",
        b"\xef\xbb\xbf---\r\nname: demo\r\ndescription: d\r\n---\r\nStep one.\r\n",
        b"---\nname: demo\ndescription: d\n---",
    ],
)
def test_the_body_is_read_off_the_bytes_as_the_parser_splits_them(data: bytes) -> None:
    skill, _ = load_skill(data, folder="demo", location="/ws/skills/demo", source="workspace", layer=Layer.WORKSPACE)
    assert skill is not None and skill.raw is data
    assert skill.body == split_frontmatter(data).body
    assert "body" not in Skill.__slots__  # a loaded skill keeps its bytes, not a second copy as text


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("---\nname: demo\n---\nbody", "missing-description"),
        ("---\nname: demo\ndescription: '  '\n---\n", "missing-description"),
        ("---\nname: demo\ndescription: [a, b]\n---\n", "description-not-string"),
        ("---\nname: demo\ndescription: \n---\n", "missing-description"),
        ("---\nname: demo\ndescription: x: y: z\n---\n", "invalid-yaml"),
        ("no frontmatter", "no-frontmatter"),
    ],
)
def test_skipped_with_error_diagnostic(text: str, code: str) -> None:
    skill, diags = _load(text)
    assert skill is None
    assert f"error:{code}" in diags


@pytest.mark.parametrize("name", ["../etc", "a/b", "a\\b", "..", "a\x00b", "tab\there"])
def test_unsafe_names_are_always_rejected(name: str) -> None:
    skill, diags = load_skill(
        f'---\nname: "{name.encode("unicode_escape").decode()}"\ndescription: d\n---\n'.encode(),
        folder="x",
        location="/x",
        source="s",
        layer=Layer.MARKET,
    )
    assert skill is None
    assert diags[0].code == "unsafe-name"


@pytest.mark.parametrize(
    ("text", "folder", "code"),
    [
        ("---\nname: Demo\ndescription: d\n---\n", "Demo", "name-not-lowercase"),
        ("---\nname: other\ndescription: d\n---\n", "demo", "name-folder-mismatch"),
        ("---\nname: demo\ndescription: d\nauthor: me\n---\n", "demo", "unexpected-fields"),
        ("---\nname: " + "a" * 65 + "\ndescription: d\n---\n", "a" * 65, "name-too-long"),
        ("---\ndescription: d\n---\n", "demo", "missing-name"),
    ],
)
def test_spec_problems_load_with_a_warning(text: str, folder: str, code: str) -> None:
    skill, diags = _load(text, folder)
    assert skill is not None
    assert f"warning:{code}" in diags


def test_missing_name_falls_back_to_the_folder() -> None:
    skill, _ = _load("---\ndescription: d\n---\n", folder="from-folder")
    assert skill is not None and skill.name == "from-folder"


def test_a_name_of_the_wrong_type_says_must_be_a_string_and_falls_back_to_the_folder() -> None:
    skill, diags = _load("---\nname:\n  - a\ndescription: d\n---\n", folder="demo")
    assert skill is not None and skill.name == "demo"
    assert diags == ["warning:name-not-string"]


@pytest.mark.parametrize("name", ["no", "123", "2048", "null"])
def test_names_that_yaml_1_1_would_type_load_as_written(name: str) -> None:
    skill, diags = _load(f"---\nname: {name}\ndescription: d\n---\n", folder=name)
    assert skill is not None and skill.name == name
    assert diags == []


@pytest.mark.parametrize(
    ("folder", "reason"), [("sp ace", "whitespace"), ("deploy ", "whitespace"), ("a\x85b", "control")]
)
def test_a_name_taken_from_the_folder_is_held_to_the_same_rules(folder: str, reason: str) -> None:
    skill, diags = _load("---\ndescription: d\n---\n", folder=folder)
    assert skill is None
    assert diags[-1] == "error:unsafe-name"


def test_a_folder_name_that_breaks_a_spec_rule_warns_like_a_written_name() -> None:
    skill, diags = _load("---\ndescription: d\n---\n", folder="Demo")
    assert skill is not None
    assert diags == ["warning:missing-name", "warning:name-not-lowercase"]


def test_a_duplicate_key_loads_with_a_warning_and_the_last_value() -> None:
    skill, diags = _load("---\nname: demo\ndescription: first\ndescription: second\n---\n")
    assert skill is not None and skill.description == "second"
    assert diags == ["warning:duplicate-key"]

"""Strict validation agrees with the specification's reference validator (``skills-ref``).

Both validators run over the same skill folders; the verdict (valid or invalid) must be the
same, and the error messages too wherever our wording follows theirs. The few places where we
differ on purpose are listed with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import validate_skill_dir

skills_ref_validator = pytest.importorskip("skills_ref.validator")


def _md(name: str = "demo", description: str = "Does demo things.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nBody\n"


# (case id, folder, SKILL.md text)
CORPUS: list[tuple[str, str, str]] = [
    ("valid", "demo", _md()),
    ("trailing-space-after-colon", "demo", "---\nname: demo\ndescription: \n---\n"),
    ("empty-description", "demo", "---\nname: demo\ndescription:\n---\n"),
    ("empty-name", "demo", "---\nname:\ndescription: d\n---\n"),
    ("missing-name", "demo", "---\ndescription: d\n---\n"),
    ("missing-description", "demo", "---\nname: demo\n---\n"),
    ("name-no", "no", _md("no")),
    ("name-2048", "2048", _md("2048")),
    ("name-yes-folder-mismatch", "demo", _md("yes")),
    ("uppercase", "Demo", _md("Demo")),
    ("leading-hyphen", "-demo", _md("-demo")),
    ("trailing-hyphen", "demo-", _md("demo-")),
    ("consecutive-hyphens", "de--mo", _md("de--mo")),
    ("underscore", "de_mo", _md("de_mo")),
    ("space-in-name", "de mo", _md("de mo")),
    ("name-64", "a" * 64, _md("a" * 64)),
    ("name-65", "a" * 65, _md("a" * 65)),
    ("nfkc-name", "ｄｅｍｏ", _md("ｄｅｍｏ")),
    ("non-ascii-letters", "déjà-vu", _md("déjà-vu")),
    ("cjk-letters", "技能", _md("技能")),
    ("uppercase-non-ascii", "ÉCOLE", _md("ÉCOLE")),
    ("name-folder-mismatch", "other", _md("demo")),
    ("quoted-name-with-spaces-around", "demo", _md('" demo "')),
    ("name-list", "demo", "---\nname:\n  - demo\ndescription: d\n---\n"),
    ("description-list", "demo", "---\nname: demo\ndescription:\n  - d\n---\n"),
    ("description-1024", "demo", _md(description="d" * 1024)),
    ("description-1025", "demo", _md(description="d" * 1025)),
    ("description-number", "demo", _md(description="42")),
    ("compatibility-500", "demo", _md(extra=f"compatibility: {'c' * 500}\n")),
    ("compatibility-501", "demo", _md(extra=f"compatibility: {'c' * 501}\n")),
    ("compatibility-number", "demo", _md(extra="compatibility: 3.12\n")),
    ("license", "demo", _md(extra="license: Apache-2.0\n")),
    ("allowed-tools", "demo", _md(extra="allowed-tools: Bash(git:*) Read\n")),
    ("metadata-strings", "demo", _md(extra='metadata:\n  author: me\n  version: "1.0"\n')),
    ("metadata-number", "demo", _md(extra="metadata:\n  version: 1.0\n")),
    ("metadata-bool", "demo", _md(extra="metadata:\n  beta: yes\n")),
    ("metadata-nested", "demo", _md(extra="metadata:\n  author:\n    name: me\n")),
    ("metadata-list", "demo", _md(extra="metadata:\n  - a\n")),
    ("metadata-scalar", "demo", _md(extra="metadata: plain\n")),
    ("unknown-field", "demo", _md(extra="author: me\n")),
    ("unknown-fields", "demo", _md(extra="version: 1\nauthor: me\n")),
    ("duplicate-description", "demo", "---\nname: demo\ndescription: a\ndescription: b\n---\n"),
    ("duplicate-metadata-key", "demo", _md(extra="metadata:\n  a: x\n  a: y\n")),
    ("comment", "demo", "---\n# a comment\nname: demo # trailing\ndescription: d\n---\n"),
    ("block-scalar-description", "demo", "---\nname: demo\ndescription: |\n  line one\n  line two\n---\n"),
    ("folded-description", "demo", "---\nname: demo\ndescription: >-\n  folded\n  text\n---\n"),
    ("colon-in-quoted-description", "demo", '---\nname: demo\ndescription: "a: b"\n---\n'),
    ("broken-yaml", "demo", "---\nname: demo\ndescription: [unclosed\n---\n"),
    ("not-a-mapping", "demo", "---\n- a\n- b\n---\n"),
    ("no-frontmatter", "demo", "# just markdown\n"),
    ("unclosed", "demo", "---\nname: demo\ndescription: d\n"),
]

# Same verdict, different words: a YAML error comes from a different parser, and a wrongly
# typed field says "must be a string" here.
OWN_WORDING = {"duplicate-description", "duplicate-metadata-key", "broken-yaml", "name-list", "description-list"}

# Different verdict on purpose.
DIFFERENT_VERDICT: dict[str, tuple[str, str, str]] = {
    "disable-model-invocation": (
        "demo",
        _md(extra="disable-model-invocation: true\n"),
        "our own documented field: a warning here, an unknown field to the reference",
    ),
    "flow-metadata": (
        "demo",
        _md(extra="metadata: {version: 1.0}\n"),
        "StrictYAML refuses flow style; YAML allows it and we read 1.0 as the text '1.0'",
    ),
}


def _folder(tmp_path: Path, folder: str, text: str) -> Path:
    path = tmp_path / folder
    path.mkdir()
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("case", "folder", "text"), CORPUS, ids=[case for case, _, _ in CORPUS])
def test_strict_validation_gives_the_reference_verdict(tmp_path: Path, case: str, folder: str, text: str) -> None:
    path = _folder(tmp_path, folder, text)
    reference = skills_ref_validator.validate(path)
    ours = validate_skill_dir(path)
    assert ours.ok == (not reference), (ours.errors, reference)
    if case not in OWN_WORDING:
        assert sorted(ours.errors) == sorted(reference)


@pytest.mark.parametrize("case", sorted(DIFFERENT_VERDICT))
def test_documented_differences_from_the_reference_are_still_different(tmp_path: Path, case: str) -> None:
    folder, text, _reason = DIFFERENT_VERDICT[case]
    path = _folder(tmp_path, folder, text)
    assert skills_ref_validator.validate(path)
    assert validate_skill_dir(path).ok


def test_a_duplicate_key_is_an_error_for_both(tmp_path: Path) -> None:
    path = _folder(tmp_path, "demo", "---\nname: demo\ndescription: a\ndescription: b\n---\n")
    assert any("Duplicate key" in error or "uplicate" in error for error in skills_ref_validator.validate(path))
    assert validate_skill_dir(path).errors == ("Duplicate key in frontmatter: description (the last value is used)",)

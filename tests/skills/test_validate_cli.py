"""Strict validation and ``harness skills validate`` run as a command in a process of its own (``run_harness``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import validate_skill_dir
from tests.support.cli import run_harness


def _skill(root: Path, folder: str, text: str, name: str = "SKILL.md") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text)
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args, timeout=60)


@pytest.mark.parametrize(
    ("folder", "text", "message"),
    [
        ("Bad", "---\nname: Bad\ndescription: d\n---\n", "must be lowercase"),
        ("a" * 65, f"---\nname: {'a' * 65}\ndescription: d\n---\n", "exceeds 64 character limit"),
        ("a--b", "---\nname: a--b\ndescription: d\n---\n", "consecutive hyphens"),
        ("-ab", "---\nname: -ab\ndescription: d\n---\n", "cannot start or end with a hyphen"),
        ("a_b", "---\nname: a_b\ndescription: d\n---\n", "contains invalid characters"),
        ("folder", "---\nname: other\ndescription: d\n---\n", "must match skill name"),
        ("x", "---\nname: x\ndescription: d\nversion: 1\n---\n", "Unexpected fields in frontmatter: version"),
        ("x", f"---\nname: x\ndescription: {'d' * 1025}\n---\n", "Description exceeds 1024 character limit"),
        ("x", f"---\nname: x\ndescription: d\ncompatibility: {'c' * 501}\n---\n", "Compatibility exceeds 500"),
        ("x", "---\nname: x\ndescription: d\ndescription: e\n---\n", "Duplicate key in frontmatter: description"),
        ("x", "---\nname: [x]\ndescription: d\n---\n", "Field 'name' must be a string"),
        ("x", "---\nname: x\ndescription: \n---\n", "Field 'description' must be a non-empty string"),
        ("x", "---\nname: x\n---\n", "Missing required field in frontmatter: description"),
        ("x", "---\ndescription: d\n---\n", "Missing required field in frontmatter: name"),
        ("x", "name: x\n", "must start with YAML frontmatter"),
    ],
)
def test_strict_rules_use_the_reference_wording(tmp_path: Path, folder: str, text: str, message: str) -> None:
    report = validate_skill_dir(_skill(tmp_path, folder, text))
    assert not report.ok
    assert any(message in error for error in report.errors), report.errors


def test_unicode_lowercase_names_and_nfkc_are_valid(tmp_path: Path) -> None:
    assert validate_skill_dir(_skill(tmp_path, "café-outil", "---\nname: café-outil\ndescription: d\n---\n")).ok
    # "ｆｕｌｌ" (full-width) normalises to "full" under NFKC.
    assert validate_skill_dir(_skill(tmp_path, "full", "---\nname: ｆｕｌｌ\ndescription: d\n---\n")).ok


def test_disable_model_invocation_is_only_a_warning(tmp_path: Path) -> None:
    report = validate_skill_dir(
        _skill(tmp_path, "x", "---\nname: x\ndescription: d\ndisable-model-invocation: true\n---\n")
    )
    assert report.ok and len(report.warnings) == 1


def test_lowercase_skill_md_is_accepted(tmp_path: Path) -> None:
    assert validate_skill_dir(_skill(tmp_path, "x", "---\nname: x\ndescription: d\n---\n", name="skill.md")).ok


def test_lenient_mode_turns_spec_errors_into_warnings(tmp_path: Path) -> None:
    path = _skill(tmp_path, "Bad", "---\nname: Bad\ndescription: d\nauthor: me\n---\n")
    assert not validate_skill_dir(path).ok
    lenient = validate_skill_dir(path, strict=False)
    assert lenient.ok and len(lenient.warnings) == 2


def test_cli_valid_folder_of_skills_exits_zero(tmp_path: Path) -> None:
    _skill(tmp_path, "one", "---\nname: one\ndescription: d\n---\n")
    _skill(tmp_path / "nested", "two", "---\nname: two\ndescription: d\n---\n")
    result = _cli("skills", "validate", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "one: ok" in result.stdout and "two: ok" in result.stdout


def test_cli_json_lists_errors_and_exits_one(tmp_path: Path) -> None:
    good = _skill(tmp_path, "good", "---\nname: good\ndescription: d\n---\n")
    bad = _skill(tmp_path, "bad", "---\nname: Bad\ndescription: d\n---\n")
    result = _cli("skills", "validate", "--json", str(good), str(bad))
    assert result.returncode == 1
    reports = json.loads(result.stdout)
    assert [r["name"] for r in reports] == ["good", "Bad"]
    assert reports[0]["errors"] == [] and reports[1]["warnings"] == []
    assert any("must be lowercase" in e for e in reports[1]["errors"])


def test_cli_lenient_accepts_what_runtime_loads(tmp_path: Path) -> None:
    bad = _skill(tmp_path, "Bad", "---\nname: Bad\ndescription: d\n---\n")
    assert _cli("skills", "validate", "--lenient", str(bad)).returncode == 0


def test_cli_missing_skill_md_and_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    missing = _cli("skills", "validate", str(tmp_path / "empty"))
    assert missing.returncode == 1 and "Missing required file: SKILL.md" in missing.stdout
    assert _cli("skills", "validate").returncode == 2
    assert _cli("skills", "validate", "--strict", "--lenient", str(tmp_path)).returncode == 2


def test_python_dash_m_harness_works_the_same(tmp_path: Path) -> None:
    _skill(tmp_path, "one", "---\nname: one\ndescription: d\n---\n")
    result = subprocess.run(
        [sys.executable, "-m", "harness", "skills", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=60,
    )
    assert result.returncode == 0 and "one: ok" in result.stdout


def test_shipped_examples_are_valid() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "skills"
    result = _cli("skills", "validate", str(examples))
    assert result.returncode == 0, result.stdout


def test_metadata_that_is_not_a_string_map_is_a_warning_as_the_reference_accepts_it(tmp_path: Path) -> None:
    report = validate_skill_dir(_skill(tmp_path, "x", "---\nname: x\ndescription: d\nmetadata: [1]\n---\n"))
    assert report.ok
    assert report.warnings == ("Field 'metadata' should be a mapping of strings to strings",)


@pytest.mark.parametrize("name", ["no", "2048", "on", "1e3"])
def test_names_yaml_1_1_would_type_are_read_as_the_text_written(tmp_path: Path, name: str) -> None:
    report = validate_skill_dir(
        _skill(tmp_path, name, f"---\nname: {name}\ndescription: d\nmetadata:\n  version: 1.0\n---\n")
    )
    assert report.ok and report.name == name


def test_yaml_errors_name_the_line_in_the_file(tmp_path: Path) -> None:
    report = validate_skill_dir(_skill(tmp_path, "x", "---\nname: x\ndescription: d\nbad: [unclosed\n---\n"))
    assert len(report.errors) == 1
    assert report.errors[0].startswith("Invalid YAML in frontmatter: line 5, column 1:")


@pytest.mark.parametrize(
    "text",
    [
        "---\nname: x\ndescription: \n---\n",
        "---\nname: x\ndescription: [unclosed\n---\n",
        "---\nname: x\ndescription: !!python/object/apply:os.system [id]\n---\n",
    ],
)
def test_cli_reports_broken_frontmatter_without_a_traceback(tmp_path: Path, text: str) -> None:
    folder = _skill(tmp_path, "x", text)
    for mode in ("--strict", "--lenient"):
        result = _cli("skills", "validate", mode, str(folder))
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
        assert f"{folder}: invalid" in result.stdout
        assert "  error: " in result.stdout


def test_market_publish_reports_an_empty_description_without_a_traceback(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "deploy", "---\nname: deploy\ndescription: \n---\n")
    # Validation comes first, so the (unreachable) market is never contacted.
    result = _cli("market", "publish", str(folder), "--repo", "mysql://nobody@127.0.0.1:1/none")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{folder}: invalid, not published",
        "  error: Field 'description' must be a non-empty string",
    ]

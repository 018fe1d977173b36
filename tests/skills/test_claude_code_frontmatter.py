"""Claude Code's frontmatter fields load without warnings, stay extension warnings (never errors)
under strict validation, and unknown fields never stop a skill from loading."""

from __future__ import annotations

from pathlib import Path

from harness import Layer, load_skill, validate_skill_dir
from harness.pipeline.catalog import build_catalog, entries_for
from harness.skills.arguments import allowed_tools, argument_names, split_arguments, substitute

CLAUDE_CODE = (
    "when_to_use: when the user ships\n"
    'argument-hint: "[env]"\n'
    "arguments: [env]\n"
    "user-invocable: false\n"
    "model: demo\n"
    "context: fork\n"
    "agent: deployer\n"
    "allowed-tools: Bash(git:*) Read\n"
)


def _text(extra: str) -> str:
    return f"---\nname: demo\ndescription: Does demo things.\n{extra}---\nBody\n"


def test_claude_code_fields_load_without_warnings() -> None:
    skill, diagnostics = load_skill(
        _text(CLAUDE_CODE).encode(), folder="demo", location="/ws/demo", source="workspace", layer=Layer.WORKSPACE
    )
    assert skill is not None and diagnostics == []


def test_unknown_fields_load_with_a_warning_only() -> None:
    skill, diagnostics = load_skill(
        _text("effort: high\nhooks: {x: 1}\n").encode(),
        folder="demo",
        location="/ws/demo",
        source="workspace",
        layer=Layer.WORKSPACE,
    )
    assert skill is not None and [d.severity for d in diagnostics] == ["warning"]


def test_strict_validation_reports_claude_code_fields_as_an_extension_warning(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "SKILL.md").write_text(_text(CLAUDE_CODE))
    report = validate_skill_dir(folder)
    assert report.ok and len(report.warnings) == 1 and "Claude Code extension" in report.warnings[0]


def test_allowed_tools_accepts_spaces_commas_and_lists() -> None:
    assert allowed_tools({"allowed-tools": "Bash(git add:*), Read Write"}) == ("Bash", "Read", "Write")
    assert allowed_tools({"allowed-tools": ["Read", "Grep"]}) == ("Read", "Grep")
    assert allowed_tools({}) is None


def test_arguments_list_takes_names_strings_and_mappings() -> None:
    assert argument_names({"arguments": ["a", {"name": "b"}, 3]}) == ("a", "b")
    assert argument_names({"arguments": "x y"}) == ("x", "y")


def test_split_arguments_is_shell_style() -> None:
    assert split_arguments("'a b' c") == ["a b", "c"]


def test_an_unknown_dollar_name_stays_literal() -> None:
    assert substitute("cost $PRICE for $0", "x") == "cost $PRICE for x"


def test_when_to_use_counts_against_the_catalog_budget() -> None:
    skills = [
        load_skill(
            _text(f"when_to_use: {'the user asks for it ' * 20}\n").replace("name: demo", f"name: s{i}").encode(),
            folder=f"s{i}",
            location=f"/ws/s{i}",
            source="workspace",
            layer=Layer.WORKSPACE,
        )[0]
        for i in range(20)
    ]
    entries = entries_for([s for s in skills if s is not None], {})
    catalog = build_catalog(entries, load_tool="load", shell_tool=None, budget=3_000)
    assert len(catalog.text) <= 3_000 and not catalog.complete

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


# Claude Code's argumentSubstitution, case by case: $N is $ARGUMENTS[N] (0-based), arguments are
# split shell-style with the quotes removed (at whitespace when the quoting does not balance),
# $ARGUMENTS is the raw text.


def test_dollar_n_is_shorthand_for_the_indexed_argument() -> None:
    body = "$0|$ARGUMENTS[0] $1|$ARGUMENTS[1] $2|$ARGUMENTS[2] $3|$ARGUMENTS[3]"
    assert substitute(body, "one 'two words' \"three\"") == "one|one two words|two words three|three |"


def test_arguments_is_the_raw_text_with_its_quotes() -> None:
    assert substitute("<$ARGUMENTS>", "a 'b c'  d") == "<a 'b c'  d>"


def test_unbalanced_quoting_splits_at_whitespace_keeping_the_quote() -> None:
    assert split_arguments("it's fine") == ["it's", "fine"]
    assert substitute("$0/$1", 'say "hi') == 'say/"hi'


def test_multi_digit_positions_and_a_digit_followed_by_a_word_character() -> None:
    arguments = " ".join(f"a{i}" for i in range(12))
    assert substitute("$10 $1x $1.", arguments) == "a10 $1x a1."


def test_arguments_followed_by_other_characters_is_still_the_raw_text() -> None:
    assert substitute("$ARGUMENTSx $ARGUMENTS[x]", "a b") == "a bx a b[x]"


def test_named_argument_is_not_matched_inside_a_longer_name_or_before_a_bracket() -> None:
    assert substitute("$env $envs $env[0]", "prod", names=("env",)) == "prod $envs $env[0]"


def test_argument_names_of_digits_only_are_dropped_and_the_rest_move_up() -> None:
    names = argument_names({"arguments": ["1", "env", "22", "region"]})
    assert names == ("env", "region")
    assert substitute("$env/$region/$1", "prod eu", names=names) == "prod/eu/eu"


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


def test_shell_operators_comments_and_globs_are_ordinary_characters() -> None:
    assert substitute("[$0][$1][$2][$3]", "a|b ; #12 *.py") == "[a|b][;][#12][*.py]"

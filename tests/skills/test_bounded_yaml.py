"""One bounded YAML loader for SKILL.md frontmatter and workflow files."""

from __future__ import annotations

import pytest
import yaml

from harness.engine import check_workflow
from harness.skills import YAMLLimitExceeded, load_bounded_yaml
from harness.skills.bounded_yaml import MAX_DEPTH

ALIAS_BOMB = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n"


def test_a_document_within_the_limits_loads() -> None:
    assert load_bounded_yaml("a: [1, {b: c}]\n") == {"a": [1, {"b": "c"}]}


def test_an_empty_document_is_none() -> None:
    assert load_bounded_yaml("") is None


def test_aliases_past_the_limit_are_refused() -> None:
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded_yaml(ALIAS_BOMB, max_aliases=3)
    assert caught.value.code == "yaml-too-many-aliases"


def test_deep_flow_nesting_is_refused_before_parsing() -> None:
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert caught.value.code == "yaml-too-deep"


def test_deep_block_nesting_is_refused() -> None:
    text = "".join(f"{'  ' * depth}k{depth}:\n" for depth in range(MAX_DEPTH + 1)) + "  " * (MAX_DEPTH + 1) + "v\n"
    with pytest.raises(YAMLLimitExceeded, match="nests deeper"):
        load_bounded_yaml(text)


def test_python_tags_are_a_yaml_error() -> None:
    with pytest.raises(yaml.YAMLError):
        load_bounded_yaml("x: !!python/object/apply:os.system ['true']\n")


def test_a_workflow_file_is_held_to_the_same_depth_limit() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    _, problems = check_workflow({"workflow.yaml": f"goal: {deep}\n".encode()}, name="deep")
    assert any("nests deeper" in p.message and p.code == "workflow-yaml" for p in problems)


def _eight_by_eight() -> str:
    """An alias bomb within the alias limit: 56 aliases that expand to 8**7 values."""
    lines = ["a: &a [x, x, x, x, x, x, x, x]"]
    for level in "bcdefgh":
        lines.append(f"{level}: &{level} [{', '.join([f'*{chr(ord(level) - 1)}'] * 8)}]")
    return "\n".join(lines) + "\n"


def test_a_bomb_within_the_alias_limit_is_refused_by_what_it_expands_to() -> None:
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded_yaml(_eight_by_eight())
    assert caught.value.code == "yaml-too-large" and "expands to more than" in str(caught.value)


def test_aliases_that_nest_past_the_depth_limit_are_refused() -> None:
    levels = ["a: &a [x]"] + [f"a{i}: &a{i} [[[[*{'a' if i == 0 else f'a{i - 1}'}]]]]" for i in range(MAX_DEPTH // 4)]
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded_yaml("\n".join(levels) + "\n")
    assert caught.value.code == "yaml-too-deep"


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(YAMLLimitExceeded) as caught:
        load_bounded_yaml("a: &a [x, *a]\n")
    assert caught.value.code == "yaml-recursive"


def test_shared_aliases_within_the_limits_load() -> None:
    assert load_bounded_yaml("base: &b {k: v}\none: {<<: *b, n: 1}\ntwo: [*b, *b]\n") == {
        "base": {"k": "v"},
        "one": {"k": "v", "n": 1},
        "two": [{"k": "v"}, {"k": "v"}],
    }

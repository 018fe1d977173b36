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

"""Frontmatter the fast path in :mod:`harness.skills.frontmatter` leaves aside, read by PyYAML.

The reference reading: PyYAML within limits, the specification's text fields and ``metadata``
read as the text the author wrote, duplicate keys listed, YAML errors placed on the SKILL.md
line. Imported on first use, so a process whose frontmatter is all plain ``key: value`` lines
never imports PyYAML.
"""

from __future__ import annotations

from typing import Any

import yaml

from harness.skills.bounded_yaml import YAMLLimitExceeded, load_bounded_yaml
from harness.skills.frontmatter import _STR_TAG, _YAML_TAGS, TEXT_FIELDS, FrontmatterError

__all__ = ["yaml_mapping"]


def yaml_mapping(yaml_text: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The reference path: PyYAML within limits, spec text fields read as text."""
    duplicates: list[str] = []

    def prepare(node: yaml.Node) -> None:
        if isinstance(node, yaml.MappingNode):
            duplicates.extend(_mark_text_fields(node))

    try:
        value = load_bounded_yaml(yaml_text, prepare=prepare)
    except YAMLLimitExceeded as exc:
        raise FrontmatterError(exc.code, f"frontmatter {exc}") from None
    except yaml.YAMLError as exc:
        raise FrontmatterError("invalid-yaml", f"Invalid YAML in frontmatter: {_describe(exc)}") from None
    if not isinstance(value, dict):
        raise FrontmatterError("frontmatter-not-mapping", "SKILL.md frontmatter must be a YAML mapping")
    return {str(key): val for key, val in value.items()}, tuple(duplicates)


def _mark_text_fields(root: yaml.MappingNode) -> list[str]:
    """Tag the spec's text fields and ``metadata`` scalars as strings; list duplicate keys.

    Duplicates are looked for in the top-level mapping and the mappings directly under it, and
    listed in file order.
    """
    duplicates: list[str] = []
    seen: set[str] = set()
    for key, value in root.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if isinstance(value, yaml.MappingNode):
            _duplicates(value, f"{key.value}.", duplicates)
        _add_duplicate(key.value, "", seen, duplicates)
        if key.value in TEXT_FIELDS:
            _as_text(value)
        elif key.value == "metadata" and isinstance(value, yaml.MappingNode):
            for meta_key, meta_value in value.value:
                _as_text(meta_key)
                _as_text(meta_value)
    return duplicates


def _duplicates(mapping: yaml.MappingNode, prefix: str, found: list[str]) -> None:
    seen: set[str] = set()
    for key, _ in mapping.value:
        if isinstance(key, yaml.ScalarNode):
            _add_duplicate(key.value, prefix, seen, found)


def _add_duplicate(key: str, prefix: str, seen: set[str], found: list[str]) -> None:
    if key in seen and prefix + key not in found:
        found.append(prefix + key)
    seen.add(key)


def _as_text(node: yaml.Node) -> None:
    """A scalar with a standard YAML type (bool, int, null, ...) becomes its source text."""
    if isinstance(node, yaml.ScalarNode) and node.tag.startswith(_YAML_TAGS):
        node.tag = _STR_TAG


def _describe(exc: yaml.YAMLError) -> str:
    """The problem and where it is, as a line number in the SKILL.md file."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return " ".join(str(exc).split())
    mark = exc.problem_mark
    # +1 for 1-based lines, +1 for the opening "---" line the YAML text starts after.
    where = f"line {mark.line + _FIRST_LINE}, column {mark.column + 1}"
    parts = [str(part) for part in (exc.context, exc.problem) if part]
    return f"{where}: " + " ".join(" ".join(parts).split())


_FIRST_LINE = 2

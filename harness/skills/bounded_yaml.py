"""YAML from untrusted sources, parsed once and within limits.

SKILL.md frontmatter and workflow definitions come from markets and users. Both are parsed
here with PyYAML's ``CSafeLoader`` (falling back to the pure-Python ``SafeLoader``), never a
loader that builds Python objects from tags. Deep ``[[[[...`` flow nesting is refused before the
parser recurses into it; the composed node tree is then checked for aliases (a node reached
twice) and nesting depth before any value is constructed, so an alias bomb never expands.
PyYAML itself is imported on the first document parsed: most SKILL.md frontmatter never needs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "YAMLLimitExceeded", "load_bounded_yaml"]

MAX_ALIASES = 64
MAX_DEPTH = 32


@functools.cache
def _loader() -> type[yaml.CSafeLoader] | type[yaml.SafeLoader]:
    import yaml

    try:
        return yaml.CSafeLoader
    except AttributeError:  # PyYAML built without libyaml
        return yaml.SafeLoader


class YAMLLimitExceeded(HarnessError, ValueError):
    """The document is nested too deeply or uses too many aliases; ``code`` is
    ``yaml-too-deep`` or ``yaml-too-many-aliases``. The message completes "the document ..."."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def load_bounded_yaml(
    text: str,
    *,
    max_aliases: int = MAX_ALIASES,
    max_depth: int = MAX_DEPTH,
    prepare: Callable[[yaml.Node], None] | None = None,
) -> Any:
    """The value of the single YAML document in ``text`` (``None`` when it is empty).

    ``prepare`` may inspect or retag the checked node tree before values are constructed.
    Raises :class:`YAMLLimitExceeded` past ``max_aliases`` aliases or ``max_depth`` levels (the
    top level is 1), and ``yaml.YAMLError`` for text that is not YAML.
    """
    _check_flow_depth(text, max_depth)
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_node(node, max_aliases, max_depth)
        if prepare is not None:
            prepare(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _too_deep(max_depth: int) -> YAMLLimitExceeded:
    return YAMLLimitExceeded("yaml-too-deep", f"nests deeper than {max_depth} levels")


def _check_flow_depth(text: str, max_depth: int) -> None:
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    if deepest > max_depth:
        raise _too_deep(max_depth)


def _check_node(root: yaml.Node, max_aliases: int, max_depth: int) -> None:
    """Count aliases and nesting depth without expanding anything."""
    import yaml

    seen: set[int] = set()
    aliases = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliases += 1
            if aliases > max_aliases:
                allowed = (
                    f"more than {max_aliases} YAML aliases" if max_aliases else "YAML aliases, which are not allowed"
                )
                raise YAMLLimitExceeded("yaml-too-many-aliases", f"uses {allowed}")
            continue
        seen.add(id(node))
        if depth > max_depth:
            raise _too_deep(max_depth)
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, val in node.value:
                stack.append((key, depth + 1))
                stack.append((val, depth + 1))

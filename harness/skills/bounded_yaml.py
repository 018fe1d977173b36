"""YAML from untrusted sources, parsed once and within limits.

SKILL.md frontmatter and workflow definitions come from markets and users. Both are parsed
here with PyYAML's ``CSafeLoader`` (falling back to the pure-Python ``SafeLoader``), never a
loader that builds Python objects from tags. Deep ``[[[[...`` flow nesting is refused before the
parser recurses into it; the composed node tree is then checked for aliases (a node reached
twice) and nesting depth before any value is constructed, and, when it has aliases, for what
they expand to: the values and the depth of the document as a reader walking it would meet
them (each alias as a copy of its anchor), and an alias inside its own anchor. So an alias bomb
never expands, whether in the harness or in whatever later walks the value (JSON, a schema).
PyYAML itself is imported on the first document parsed: most SKILL.md frontmatter never needs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_VALUES", "YAMLLimitExceeded", "load_bounded_yaml"]

MAX_ALIASES = 64
MAX_DEPTH = 32
#: The most values (scalars, lists and mappings, keys included) a document may expand to.
MAX_VALUES = 100_000


@functools.cache
def _loader() -> type[yaml.CSafeLoader] | type[yaml.SafeLoader]:
    import yaml

    try:
        return yaml.CSafeLoader
    except AttributeError:  # PyYAML built without libyaml
        return yaml.SafeLoader


class YAMLLimitExceeded(HarnessError, ValueError):
    """The document is nested too deeply, uses too many aliases, expands to too many values or
    holds an alias inside its own anchor; ``code`` is ``yaml-too-deep``, ``yaml-too-many-aliases``,
    ``yaml-too-large`` or ``yaml-recursive``. The message completes "the document ..."."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def load_bounded_yaml(
    text: str,
    *,
    max_aliases: int = MAX_ALIASES,
    max_depth: int = MAX_DEPTH,
    max_values: int = MAX_VALUES,
    prepare: Callable[[yaml.Node], None] | None = None,
) -> Any:
    """The value of the single YAML document in ``text`` (``None`` when it is empty).

    ``prepare`` may inspect or retag the checked node tree before values are constructed.
    Raises :class:`YAMLLimitExceeded` past ``max_aliases`` aliases, ``max_depth`` levels (the
    top level is 1) or ``max_values`` values once aliases are expanded, or for an alias inside
    its own anchor; ``yaml.YAMLError`` for text that is not YAML.
    """
    _check_flow_depth(text, max_depth)
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _check_node(node, max_aliases, max_depth):
            _check_expansion(node, max_values, max_depth)
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


def _check_node(root: yaml.Node, max_aliases: int, max_depth: int) -> int:
    """Count aliases and nesting depth without expanding anything; returns the alias count."""
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
    return aliases


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _check_expansion(root: yaml.Node, max_values: int, max_depth: int) -> None:
    """The values and depth of the document with every alias expanded, counted once per node
    (each node's figures are kept, so a bomb costs its size in nodes, not in what it expands to);
    an alias met while its own anchor is being counted is a document that refers to itself."""
    counted: dict[int, tuple[int, int]] = {}  # node -> (values, depth) of its expansion
    open_: set[int] = set()  # the nodes on the path being counted
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_counted = stack.pop()
        key = id(node)
        if children_counted:
            figures = [counted[id(child)] for child in _children(node)]
            values = 1 + sum(v for v, _ in figures)
            depth = 1 + max((d for _, d in figures), default=0)
            if values > max_values:
                raise YAMLLimitExceeded(
                    "yaml-too-large", f"expands to more than {max_values} values through its aliases"
                )
            if depth > max_depth:
                raise _too_deep(max_depth)
            counted[key] = (values, depth)
            open_.discard(key)
        elif key in open_:
            raise YAMLLimitExceeded("yaml-recursive", "refers to itself through an alias")
        elif key not in counted:
            open_.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))

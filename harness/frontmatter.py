"""Split a SKILL.md into YAML frontmatter and Markdown body, safely.

The YAML comes from markets and users, so it is parsed with PyYAML's ``CSafeLoader`` (falling
back to the pure-Python ``SafeLoader``), never a loader that builds Python objects from tags,
and within limits: frontmatter size, alias count and nesting depth. An alias bomb or a
pathologically nested document is refused before anything is constructed from it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_FRONTMATTER_BYTES",
    "Frontmatter",
    "FrontmatterError",
    "split_frontmatter",
]

try:
    _Loader: type[yaml.CSafeLoader] | type[yaml.SafeLoader] = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_ALIASES = 64
MAX_DEPTH = 32
_BOM = "\ufeff"


class FrontmatterError(ValueError):
    """The SKILL.md cannot be parsed; ``code`` is the diagnostic code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, kw_only=True, slots=True)
class Frontmatter:
    """A parsed SKILL.md: the frontmatter mapping (in file order) and the body text."""

    fields: dict[str, Any]
    body: str


def split_frontmatter(data: bytes) -> Frontmatter:
    """Parse SKILL.md bytes; raises :class:`FrontmatterError` naming the problem.

    Accepts a UTF-8 BOM and CRLF line endings. The frontmatter is the YAML between a first line
    ``---`` and the next line ``---``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(
            "invalid-utf8", f"SKILL.md is not valid UTF-8 (byte {exc.start}: {exc.reason})"
        ) from None
    if text.startswith(_BOM):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---") or text[3:4] not in ("\n", " ", "\t", ""):
        raise FrontmatterError("no-frontmatter", "SKILL.md must start with YAML frontmatter (---)")
    first_break = text.find("\n")
    if first_break < 0 or text[:first_break].strip() != "---":
        raise FrontmatterError("no-frontmatter", "SKILL.md must start with YAML frontmatter (---)")
    start = first_break + 1
    end, after = _closing_line(text, start)
    if end < 0:
        raise FrontmatterError(
            "unclosed-frontmatter", "SKILL.md frontmatter not properly closed with ---"
        )
    yaml_text = text[start:end]
    if len(yaml_text) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError(
            "frontmatter-too-large",
            f"frontmatter is {len(yaml_text)} characters, over the limit of {MAX_FRONTMATTER_BYTES}",
        )
    return Frontmatter(fields=_load_mapping(yaml_text), body=text[after:].lstrip("\n"))


def _closing_line(text: str, start: int) -> tuple[int, int]:
    """Offset of the closing ``---`` line and of the text after it, or (-1, -1)."""
    pos = start
    while True:
        if text.startswith("---", pos):
            line_end = text.find("\n", pos)
            line_end = len(text) if line_end < 0 else line_end
            if text[pos:line_end].strip() == "---":
                return pos, min(line_end + 1, len(text))
        nl = text.find("\n", pos)
        if nl < 0:
            return -1, -1
        pos = nl + 1


def _load_mapping(yaml_text: str) -> dict[str, Any]:
    if not yaml_text.strip():
        raise FrontmatterError("frontmatter-not-mapping", "SKILL.md frontmatter must be a YAML mapping")
    simple = _simple_mapping(yaml_text)
    if simple is not None:
        return simple
    _check_flow_depth(yaml_text)
    loader = _Loader(yaml_text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_node(node)
        value = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise FrontmatterError("invalid-yaml", f"Invalid YAML in frontmatter: {_one_line(exc)}") from None
    finally:
        loader.dispose()
    if not isinstance(value, dict):
        raise FrontmatterError("frontmatter-not-mapping", "SKILL.md frontmatter must be a YAML mapping")
    return {str(key): val for key, val in value.items()}


def _check_flow_depth(yaml_text: str) -> None:
    """Refuse deep ``[[[[...`` nesting before the parser recurses into it."""
    if yaml_text.count("[") + yaml_text.count("{") <= MAX_DEPTH:
        return
    depth = deepest = 0
    for char in yaml_text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    if deepest > MAX_DEPTH:
        raise FrontmatterError(
            "yaml-too-deep", f"frontmatter nests deeper than {MAX_DEPTH} levels"
        )


def _check_node(root: yaml.Node) -> None:
    """Count aliases (a node reached twice) and nesting depth without expanding anything."""
    seen: set[int] = set()
    aliases = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise FrontmatterError(
                    "yaml-too-many-aliases", f"frontmatter uses more than {MAX_ALIASES} YAML aliases"
                )
            continue
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise FrontmatterError("yaml-too-deep", f"frontmatter nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, val in node.value:
                stack.append((key, depth + 1))
                stack.append((val, depth + 1))


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())


# -- fast path -----------------------------------------------------------------------------
#
# Most frontmatter is a handful of ``key: plain text`` lines plus a one-level ``metadata`` map.
# Such text is read here directly, giving exactly what YAML would give; anything else (quotes
# with escapes, flow collections, block scalars, anchors, numbers, multi-line values, ...)
# returns None and goes to the YAML parser.

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_LINE = re.compile(r"(?P<indent> *)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*):(?:[ ]+(?P<value>.*?))?[ ]*")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_STR_TAG = "tag:yaml.org,2002:str"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_resolvers = yaml.resolver.Resolver.yaml_implicit_resolvers
_MISSING = object()


def _simple_mapping(text: str) -> dict[str, Any] | None:
    result: dict[str, Any] = {}
    nested: dict[str, Any] | None = None
    nested_indent = 0
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            return None
        indent, key, raw = len(match["indent"]), match["key"], match["value"]
        if not _plain_key(key):
            return None
        if indent:
            if nested is None or (nested_indent and indent != nested_indent) or raw is None:
                return None
            nested_indent = indent
            target = nested
        else:
            if nested == {}:
                return None  # "key:" with nothing under it is null in YAML, not an empty map
            nested = None
            target = result
            if raw is None:
                nested = result[key] = {}
                nested_indent = 0
                continue
        value = _scalar(raw)
        if value is _MISSING:
            return None
        target[key] = value
    return None if nested == {} else result


@functools.lru_cache(maxsize=256)
def _plain_key(key: str) -> bool:
    """Keys repeat across skills (name, description, ...): resolve each once."""
    return _implicit_tag(key) == _STR_TAG


def _scalar(raw: str) -> Any:
    if raw[0] in "\"'":
        quote = raw[0]
        inner = raw[1:-1]
        if len(raw) < 2 or raw[-1] != quote or quote in inner or "\\" in inner:
            return _MISSING
        return inner
    if raw[0] in _INDICATORS or ": " in raw or " #" in raw or raw.endswith(":") or "\t" in raw:
        return _MISSING
    tag = _implicit_tag(raw)
    if tag == _STR_TAG:
        return raw
    if tag == _BOOL_TAG:
        return yaml.constructor.SafeConstructor.bool_values[raw.lower()]
    if tag == _NULL_TAG:
        return None
    return _MISSING


def _implicit_tag(value: str) -> str:
    for tag, pattern in _resolvers.get(value[0], []):
        if pattern.match(value):
            return str(tag)
    return _STR_TAG

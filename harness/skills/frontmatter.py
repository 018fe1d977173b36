"""Split a SKILL.md into YAML frontmatter and Markdown body, safely.

The YAML comes from markets and users, so it is parsed with PyYAML's ``CSafeLoader`` (falling
back to the pure-Python ``SafeLoader``), never a loader that builds Python objects from tags,
and within limits: frontmatter size, alias count and nesting depth. An alias bomb or a
pathologically nested document is refused before anything is constructed from it.

The specification's text fields (``name``, ``description``, ``license``, ``compatibility``) and
the keys and values of ``metadata`` are read as the text the author wrote, as the reference
validator does: no YAML 1.1 typing, so ``name: no`` is ``"no"`` and ``version: 1.0`` is
``"1.0"``. A key given twice in one mapping keeps its **last** value (as YAML loaders do) and is
listed in :attr:`Frontmatter.duplicate_keys`; strict validation reports it as an error, runtime
loading as a warning. YAML errors name the line in the SKILL.md file, counting the opening
``---`` as line 1.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.errors import SkillError
from harness.skills.bounded_yaml import MAX_ALIASES, MAX_DEPTH, YAMLLimitExceeded, load_bounded_yaml

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_FRONTMATTER_BYTES",
    "TEXT_FIELDS",
    "Frontmatter",
    "FrontmatterError",
    "frontmatter_body",
    "frontmatter_fields",
    "split_frontmatter",
]

MAX_FRONTMATTER_BYTES = 64 * 1024
_BOM = "\ufeff"
#: Frontmatter fields whose scalar values are always read as the text the author wrote.
TEXT_FIELDS = frozenset({"name", "description", "license", "compatibility"})


class FrontmatterError(SkillError, ValueError):
    """The SKILL.md cannot be parsed; ``code`` is the diagnostic code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, kw_only=True, slots=True)
class Frontmatter:
    """A parsed SKILL.md: the frontmatter mapping (in file order) and the body text."""

    fields: dict[str, Any]
    body: str
    duplicate_keys: tuple[str, ...] = ()
    """Keys given more than once, as ``key`` or ``metadata.key``, in file order."""


def split_frontmatter(data: bytes) -> Frontmatter:
    """Parse SKILL.md bytes; raises :class:`FrontmatterError` naming the problem.

    Accepts a UTF-8 BOM and CRLF line endings. The frontmatter is the YAML between a first line
    ``---`` and the next line ``---``.
    """
    text, start, end, after = _sections(data)
    fields, duplicates = _fields(text, start, end)
    return Frontmatter(fields=fields, body=_body(text, after), duplicate_keys=duplicates)


def frontmatter_fields(data: bytes) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The fields and duplicate keys of SKILL.md bytes, as :func:`split_frontmatter` gives them,
    without cutting out the body (what loading a skill needs); raises the same errors."""
    text, start, end, _ = _sections(data)
    return _fields(text, start, end)


def _fields(text: str, start: int, end: int) -> tuple[dict[str, Any], tuple[str, ...]]:
    yaml_text = text[start:end]
    if len(yaml_text) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError(
            "frontmatter-too-large",
            f"frontmatter is {len(yaml_text)} characters, over the limit of {MAX_FRONTMATTER_BYTES}",
        )
    return _load_mapping(yaml_text)


def frontmatter_body(data: bytes) -> str:
    """The body of SKILL.md bytes, as :func:`split_frontmatter` gives it, without parsing the
    YAML; raises :class:`FrontmatterError` when the bytes are not UTF-8 or the frontmatter is
    not delimited."""
    text, _, _, after = _sections(data)
    return _body(text, after)


def _body(text: str, after: int) -> str:
    return text[after:].lstrip("\n")


def _sections(data: bytes) -> tuple[str, int, int, int]:
    """The decoded text (BOM dropped, line endings made ``\\n``), and the offsets where the
    frontmatter starts and ends and where the body starts."""
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
        raise FrontmatterError("unclosed-frontmatter", "SKILL.md frontmatter not properly closed with ---")
    return text, start, end, after


def _closing_line(text: str, start: int) -> tuple[int, int]:
    """Offset of the closing ``---`` line and of the text after it, or (-1, -1)."""
    # ``start`` follows the opening line's newline: each line starting with ``---`` is looked at.
    newline = start - 1
    while True:
        newline = text.find("\n---", newline)
        if newline < 0:
            return -1, -1
        pos = newline + 1
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end
        if text[pos:line_end].strip() == "---":
            return pos, min(line_end + 1, len(text))
        newline = pos


def _load_mapping(yaml_text: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    if not yaml_text.strip():
        raise FrontmatterError("frontmatter-not-mapping", "SKILL.md frontmatter must be a YAML mapping")
    simple = _simple_mapping(yaml_text)
    if simple is not None:
        return simple
    return yaml_mapping(yaml_text)


# -- the YAML path ---------------------------------------------------------------------------
#
# The reference reading, for frontmatter the fast path leaves aside: PyYAML within limits, the
# specification's text fields and ``metadata`` read as the text the author wrote, duplicate keys
# listed, YAML errors placed on the SKILL.md line. PyYAML is imported on first use, so a process
# whose frontmatter is all plain ``key: value`` lines never imports it. Nodes are told apart by
# their ``id`` (``"scalar"``, ``"mapping"``, ``"sequence"``) for the same reason.


def yaml_mapping(yaml_text: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The reference path: PyYAML within limits, spec text fields read as text."""
    import yaml  # PyYAML only for what the fast path leaves aside

    duplicates: list[str] = []

    def prepare(node: yaml.Node) -> None:
        if _is(node, "mapping"):
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


def _mark_text_fields(root: yaml.Node) -> list[str]:
    """Tag the spec's text fields and ``metadata`` scalars as strings; list duplicate keys.

    Duplicates are looked for in the top-level mapping and the mappings directly under it, and
    listed in file order.
    """
    duplicates: list[str] = []
    seen: set[str] = set()
    for key, value in root.value:
        if not _is(key, "scalar"):
            continue
        if _is(value, "mapping"):
            _duplicates(value, f"{key.value}.", duplicates)
        _add_duplicate(key.value, "", seen, duplicates)
        if key.value in TEXT_FIELDS:
            _as_text(value)
        elif key.value == "metadata" and _is(value, "mapping"):
            for meta_key, meta_value in value.value:
                _as_text(meta_key)
                _as_text(meta_value)
    return duplicates


def _duplicates(mapping: yaml.Node, prefix: str, found: list[str]) -> None:
    seen: set[str] = set()
    for key, _ in mapping.value:
        if _is(key, "scalar"):
            _add_duplicate(key.value, prefix, seen, found)


def _is(node: yaml.Node, kind: str) -> bool:
    """Whether ``node`` is a ``"scalar"``, ``"mapping"`` or ``"sequence"`` node (PyYAML's ``id``)."""
    return getattr(node, "id", None) == kind


def _add_duplicate(key: str, prefix: str, seen: set[str], found: list[str]) -> None:
    if key in seen and prefix + key not in found:
        found.append(prefix + key)
    seen.add(key)


def _as_text(node: yaml.Node) -> None:
    """A scalar with a standard YAML type (bool, int, null, ...) becomes its source text."""
    if _is(node, "scalar") and node.tag.startswith(_YAML_TAGS):
        node.tag = _STR_TAG


def _describe(exc: yaml.YAMLError) -> str:
    """The problem and where it is, as a line number in the SKILL.md file."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return " ".join(str(exc).split())
    # +1 for 1-based lines, +1 for the opening "---" line the YAML text starts after.
    where = f"line {mark.line + _FIRST_LINE}, column {mark.column + 1}"
    parts = [str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None)) if part]
    return f"{where}: " + " ".join(" ".join(parts).split())


_FIRST_LINE = 2


# -- fast path -----------------------------------------------------------------------------
#
# Most frontmatter is a handful of ``key: plain text`` lines plus a one-level ``metadata`` map.
# Such text is read here directly, giving exactly what the YAML path (:func:`yaml_mapping`)
# gives (values, types, order and duplicate keys); anything else (quotes with escapes, flow
# collections, block scalars, anchors, numbers outside text fields, multi-line values, characters
# YAML treats as line breaks or refuses, ...) returns None and goes to the YAML path. The differential
# property test in tests/skills/test_frontmatter_fast_path.py holds the two together.

# Indent, key and value (trailing blanks included: one greedy match costs less than a lazy one).
_LINE = re.compile(r"( *)([A-Za-z_][A-Za-z0-9_.-]*):(?: +(.*))?")
# What the fast path does not read: any character but the printable ones YAML takes as-is
# (control characters, NEL, LS, PS, surrogates, BOM and the two non-characters). Written as the
# few excluded ranges, as that compiles in a fraction of the time the allowed ranges take.
_NOT_FAST = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_MISSING = object()


def _simple_mapping(text: str) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """``(fields, duplicate keys)`` exactly as :func:`yaml_mapping` gives them, or ``None``."""
    if _NOT_FAST.search(text):
        return None
    result: dict[str, Any] = {}
    duplicates: list[str] = []
    nested: dict[str, Any] | None = None
    nested_key = ""
    nested_indent = 0
    for line in text.split("\n"):
        match = _LINE.fullmatch(line)
        if match is None:
            if not line.strip(" ") or line.lstrip(" ").startswith("#"):
                continue  # a blank line or a comment
            return None
        spaces, key, written = match.groups()
        indent, raw = len(spaces), (written.rstrip(" ") or None) if written else None
        if not (indent and nested_key == "metadata") and not _plain_key(key):
            return None
        if indent:
            if nested is None or (nested_indent and indent != nested_indent) or raw is None:
                return None
            nested_indent = indent
            target, as_text, prefix = nested, nested_key == "metadata", nested_key + "."
        else:
            if nested is not None and not nested:
                return None  # "key:" with nothing under it is null in YAML, not an empty map
            nested = None
            target, as_text, prefix = result, key in TEXT_FIELDS, ""
            if raw is None:
                if key in result:
                    return None  # a repeated mapping key: leave merging to YAML
                nested, nested_key, nested_indent = {}, key, 0
                result[key] = nested
                continue
        value = _scalar(raw, as_text=as_text)
        if value is _MISSING:
            return None
        if key in target and prefix + key not in duplicates:
            duplicates.append(prefix + key)
        target[key] = value
    return None if nested is not None and not nested else (result, tuple(duplicates))


@functools.lru_cache(maxsize=256)
def _plain_key(key: str) -> bool:
    """Keys repeat across skills (name, description, ...): resolve each once."""
    return _implicit_tag(key) == _STR_TAG


def _scalar(raw: str, *, as_text: bool) -> Any:
    if raw[0] in "\"'":
        quote = raw[0]
        inner = raw[1:-1]
        if len(raw) < 2 or raw[-1] != quote or quote in inner or "\\" in inner:
            return _MISSING
        return inner
    if raw[0] in _INDICATORS or ": " in raw or " #" in raw or raw.endswith(":") or "\t" in raw:
        return _MISSING
    tag = _STR_TAG if as_text else _implicit_tag(raw)
    if tag == _STR_TAG:
        return raw
    if tag == _BOOL_TAG:
        return _BOOLEANS[raw]
    if tag == _NULL_TAG:
        return None
    return _MISSING


# -- YAML 1.1 plain scalar types -----------------------------------------------------------
#
# The fast path needs to know whether a plain (unquoted) value is text, a boolean, null or
# something else (a number, a date, ``<<``, ...) that it leaves to PyYAML. Importing PyYAML costs
# more than a first turn over many skills, so the resolution PyYAML's ``SafeLoader`` applies is
# written out here; tests/skills/test_yaml_types.py compares the two over many scalars.

_YAML_TAGS = "tag:yaml.org,2002:"
_STR_TAG = _YAML_TAGS + "str"
_BOOL_TAG = _YAML_TAGS + "bool"
_NULL_TAG = _YAML_TAGS + "null"
_INT_TAG = _YAML_TAGS + "int"
_FLOAT_TAG = _YAML_TAGS + "float"
_TIMESTAMP_TAG = _YAML_TAGS + "timestamp"

# The YAML 1.1 booleans: each word in lower case, capitalised or upper case.
_BOOLEANS: dict[str, bool] = {
    spelling: truth
    for truth, words in ((True, ("yes", "true", "on")), (False, ("no", "false", "off")))
    for word in words
    for spelling in (word, word.capitalize(), word.upper())
}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# Single-word scalars with a tag of their own: the merge key, the value key and the three
# indicators PyYAML lists for documentation (a plain scalar cannot be one of those).
_OTHERS = {
    "<<": _YAML_TAGS + "merge",
    "=": _YAML_TAGS + "value",
    "!": _YAML_TAGS + "yaml",
    "&": _YAML_TAGS + "yaml",
    "*": _YAML_TAGS + "yaml",
}
# Numbers and dates start with one of these; their patterns compile when one is first seen.
_NUMERIC_START = frozenset("-+.0123456789")


def _implicit_tag(value: str) -> str:
    """The tag YAML 1.1 gives the one-line plain scalar ``value`` (``Yes`` is a bool, ``yess``
    text), as PyYAML's resolver gives it."""
    if value in _BOOLEANS:
        return _BOOL_TAG
    if value in _NULLS:
        return _NULL_TAG
    if value[:1] in _NUMERIC_START:
        for tag, pattern in _numeric_patterns():
            if pattern.fullmatch(value):
                return tag
    return _OTHERS.get(value, _STR_TAG)


@functools.cache
def _numeric_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    # The three languages are disjoint: every float holds a ".", no int does, and a date has a
    # "-" after its first digit, which no number has.
    sexagesimal = r"[0-9][0-9_]*(?::[0-5]?[0-9])+"
    exponent = r"(?:[eE][-+][0-9]+)?"
    floats = (
        rf"[-+]?(?:[0-9][0-9_]*\.[0-9_]*{exponent}|{sexagesimal}\.[0-9_]*|\.(?:inf|Inf|INF))"
        rf"|\.[0-9][0-9_]*{exponent}|\.(?:nan|NaN|NAN)"
    )
    ints = r"[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|0|[1-9][0-9_]*(?::[0-5]?[0-9])*)"
    date = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    timestamps = (
        rf"{date}|[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}(?:[Tt]|[ \t]+)[0-9]{{1,2}}:[0-9]{{2}}:[0-9]{{2}}"
        r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"
    )
    return tuple(
        (tag, re.compile(pattern))
        for tag, pattern in ((_FLOAT_TAG, floats), (_INT_TAG, ints), (_TIMESTAMP_TAG, timestamps))
    )

"""Path and name safety rules: the one place that says what a safe segment, relative path or
identifier is. Every package (filesystems, markets, skills, tools) calls these primitives and
words its own error around the reason they return.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from .errors import PathEscapeError

__all__ = [
    "CACHE_DIR",
    "MACHINE_DIR",
    "VCS_FOLDERS",
    "has_control",
    "has_dot_segment",
    "has_parent_segment",
    "identifier_problem",
    "loose_path_parts",
    "loose_path_problem",
    "normalize_path",
    "relative_path_problem",
    "segment_problem",
]

VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
"""Version-control metadata: never entered, never delivered."""

MACHINE_DIR = ".harness"
"""The machine-owned folder of a workspace and of each user's area (workflow runs, locks, scan
verdicts, the embedded store): out of reach of the model's file tools, read-only in a sandbox."""

CACHE_DIR = ".skills-cache"
"""The workspace folder market and global skills are staged into (and their environments built
in), shared by every user: machine-owned, read-only in a sandbox."""

# Cc: C0 and C1 controls; Cf: invisible format characters (zero-width, bidi); Cs: lone
# surrogates; Zl/Zp: line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def has_control(text: str) -> bool:
    """Whether ``text`` contains an ASCII control character (NUL, newline, DEL, ...)."""
    return _ASCII_CONTROL.search(text) is not None


def identifier_problem(text: str) -> str | None:
    """Why ``text`` cannot be an exact identifier (user id, skill or folder name), else ``None``.

    Refuses C0 and C1 control characters, invisible format characters, lone surrogates, line
    separators, leading or trailing whitespace (stores with ``PAD SPACE`` collations and many
    tools fold ``"a "`` into ``"a"``) and text not in Unicode NFC (filesystems that normalise
    would fold the two spellings into one name). Plain ASCII, the common case, is checked with
    one scan.
    """
    if text.isascii() and text.isprintable():
        return "must not start or end with whitespace" if text != text.strip() else None
    if any(unicodedata.category(char) in _UNSAFE_CATEGORIES for char in text):
        return "must not contain control, format or line-separator characters"
    if text != text.strip():
        return "must not start or end with whitespace"
    if not unicodedata.is_normalized("NFC", text):
        return "must be in Unicode NFC form"
    return None


def segment_problem(name: str) -> str | None:
    """Why ``name`` cannot be one path segment (``None`` when it can).

    Refused: the empty string, ``.`` and ``..``, path separators (``/`` and ``\\``), and what
    :func:`identifier_problem` refuses.
    """
    if not name:
        return "is empty"
    if name in {".", ".."}:
        return "is a relative path component"
    if "/" in name or "\\" in name:
        return "contains a path separator"
    return identifier_problem(name)


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a clean relative POSIX path inside a folder (``None`` when it is):
    empty, NUL or control characters, absolute, a backslash, ``..``/empty/``.`` segments, or
    version-control metadata (:data:`VCS_FOLDERS`)."""
    if not path or has_control(path):
        return "is empty or contains NUL or control characters"
    if path.startswith("/") or "\\" in path:
        return "is absolute or contains a backslash"
    if has_dot_segment(path):
        return "escapes its folder or is not normalised"
    if not VCS_FOLDERS.isdisjoint(path.split("/")):
        return "is version-control metadata"
    return None


_NOT_NORMALISED = frozenset({"..", "", "."})


def has_dot_segment(path: str) -> bool:
    """Whether ``path``, split on ``/``, has an empty, ``.`` or ``..`` segment, so it is not a
    plain relative path: it is empty or absolute, doubles or ends in a slash, or names a folder
    itself or its parent. For one name: whether it is ``""``, ``.`` or ``..``."""
    return not _NOT_NORMALISED.isdisjoint(path.split("/"))


_DRIVE = re.compile(r"^[A-Za-z]:")
_SEPARATORS = re.compile(r"[\\/]")


def has_parent_segment(path: str) -> bool:
    """Whether ``path`` has a ``..`` segment between ``/`` or ``\\`` separators (it may climb
    out of the folder it is read from)."""
    return ".." in _SEPARATORS.split(path)


def loose_path_problem(path: str) -> Literal["nul", "absolute", "parent"] | None:
    """Why ``path``, written the way people and models write relative paths (``/`` or ``\\``
    between segments), does not stay inside its folder: ``"nul"`` (a NUL character),
    ``"absolute"`` (starts with ``/``, ``\\``, ``~`` or a drive letter) or ``"parent"`` (a ``..``
    segment); ``None`` when it stays inside. Callers word their own error from the answer.
    """
    if "\x00" in path:
        return "nul"
    if path.startswith(("/", "\\", "~")) or _DRIVE.match(path):
        return "absolute"
    if has_parent_segment(path):
        return "parent"
    return None


def loose_path_parts(path: str) -> list[str]:
    """The segments of a loosely written relative path: split on ``/`` and ``\\``, empty and
    ``.`` segments dropped (check it with :func:`loose_path_problem` first)."""
    return [part for part in _SEPARATORS.split(path) if part not in ("", ".")]


def normalize_path(path: str) -> str:
    """Normalise a filesystem path: POSIX, relative to the root, ``""`` for the root.

    ``./x``, ``x/``, ``x//y`` and ``x/./y`` are tidied; ``a/../b`` becomes ``b``. Refused with
    :class:`PathEscapeError` (a :class:`PermissionError`): non-strings, absolute paths, a ``..``
    that climbs above the root, and NUL characters. Symlinks are not looked at here — backends
    with real folders check where a path resolves.
    """
    if not isinstance(path, str):
        raise PathEscapeError(f"path {path!r} must be a string")
    if "\x00" in path:
        raise PathEscapeError(f"path {path!r} contains a NUL character")
    if path.startswith("/"):
        raise PathEscapeError(f"path {path!r} is absolute; paths are relative to the root")
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                raise PathEscapeError(f"path {path!r} escapes the root with '..'")
            parts.pop()
            continue
        parts.append(segment)
    return "/".join(parts)

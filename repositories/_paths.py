"""Checks for skill folder names and file paths inside a skill folder."""

from __future__ import annotations

from repositories.errors import InvalidBundle, UnsafePath

SKILL_MD_NAMES = ("SKILL.md", "skill.md")
"""Accepted names of a skill's main file, preferred first."""

VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
"""Version-control metadata: never entered, never delivered."""

RESERVED_NAMES = frozenset({"_drafts", ".archive", ".reviews", ".audit", ".curator", ".usage.json"})
"""Machine-owned entries of a skills folder: reserved at a tree's top level, never a skill."""


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def check_folder(folder: str) -> str:
    """Return ``folder`` if it is a safe, visible single path segment, else raise ``InvalidBundle``."""
    if (
        not isinstance(folder, str)
        or not folder
        or len(folder.encode()) > 255
        or folder.startswith(".")
        or folder in RESERVED_NAMES
        or "/" in folder
        or "\\" in folder
        or _has_control(folder)
    ):
        raise InvalidBundle(
            f"invalid skill folder name {folder!r}: it must be one path segment that does not "
            "start with '.', is not a reserved name ({', '.join(sorted(RESERVED_NAMES))}), without '/', '\\' or control characters"
        )
    return folder


def normalise_file_path(path: str) -> str:
    """Return ``path`` as a clean relative POSIX path inside a skill folder.

    ``.`` segments and repeated slashes are dropped. Raises ``UnsafePath`` for absolute paths,
    ``..`` segments, backslashes, NUL/control characters, empty paths and VCS metadata (``.git``,
    ``.hg``, ``.svn``: never delivered). Other dot-files are ordinary files of the skill.
    """
    if not isinstance(path, str) or path.startswith("/") or "\\" in path or _has_control(path):
        raise UnsafePath(f"unsafe path refused: {path!r} (absolute, backslash or control character)")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts:
        raise UnsafePath(f"unsafe path refused: {path!r} (empty)")
    for part in parts:
        if part == "..":
            raise UnsafePath(f"unsafe path refused: {path!r} (escapes the skill folder)")
        if part in VCS_FOLDERS:
            raise UnsafePath(f"unsafe path refused: {path!r} (version-control metadata is never delivered)")
    return "/".join(parts)

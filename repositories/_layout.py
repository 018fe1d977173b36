"""Finding skill folders in a tree, shared by every tree-shaped backend.

A folder holding a ``SKILL.md`` (or ``skill.md``) is a skill; everything below it belongs to that
skill, nested ``SKILL.md`` files included. Folders without one are searched deeper. Dot-files,
dot-folders, ``node_modules`` and ``__pycache__`` are never entered; symlinks and other
non-regular files are never delivered but reported as problems.

Backends describe their tree through one callback, ``list_dir(node) -> list[Child]``, called once
per folder, so a walk costs one listing per folder plus whatever the backend does per file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from repositories._paths import SKILL_MD_NAMES

SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})

N = TypeVar("N")

DIR = "dir"
FILE = "file"
SYMLINK = "symlink"
OTHER = "other"


class Child(NamedTuple, Generic[N]):
    """One entry of a folder: ``kind`` is ``dir``, ``file``, ``symlink`` or ``other``.

    ``node`` is whatever the backend needs to list (folders) or read (files) the entry; ``token``
    changes whenever a file's content or mode changes (a stat tuple, a blob id, a content hash).
    """

    name: str
    kind: str
    node: N
    size: int = 0
    mode: int = 0
    token: str = ""


class Entry(NamedTuple, Generic[N]):
    """A file of a skill: ``path`` relative to the tree root, POSIX."""

    path: str
    node: N
    size: int
    mode: int
    token: str


@dataclass(slots=True)
class SkillLayout(Generic[N]):
    """One skill found in a tree: its folder name, root path and entries."""

    folder: str
    root: str
    node: N
    main: Entry[N]
    files: list[Entry[N]] = field(default_factory=list)

    @property
    def skill_md_name(self) -> str:
        return self.main.path.rsplit("/", 1)[-1]

    def relative(self, entry: Entry[N]) -> str:
        """``entry.path`` relative to the skill folder."""
        return entry.path[len(self.root) + 1 :] if self.root else entry.path

    def digest(self) -> str:
        """A token over every entry's path and token: changes when any file changes."""
        digest = hashlib.sha256()
        for entry in [self.main, *self.files]:
            digest.update(f"{entry.path}\0{entry.token}\0{entry.size}\0{entry.mode}\n".encode())
        return digest.hexdigest()


def find_skills(
    root: N, list_dir: Callable[[N], Iterable[Child[N]]], *, root_name: str
) -> tuple[list[SkillLayout[N]], list[str]]:
    """Walk the tree below ``root``; returns ``(skills sorted by folder, problems)``.

    ``root_name`` names the skill when the root itself holds a ``SKILL.md``. Two skills with the
    same folder name: the first in path order is kept, the other is reported.
    """
    found: list[SkillLayout[N]] = []
    problems: list[str] = []
    stack: list[tuple[str, N]] = [("", root)]
    while stack:
        prefix, node = stack.pop()
        children = [c for c in list_dir(node) if not c.name.startswith(".")]
        main = _main_file(children)
        rel = prefix[:-1]
        if main is not None:
            layout = SkillLayout(
                folder=rel.rsplit("/", 1)[-1] if rel else root_name,
                root=rel,
                node=node,
                main=Entry(prefix + main.name, main.node, main.size, main.mode, main.token),
            )
            _collect(layout, prefix, children, main, list_dir, problems)
            found.append(layout)
            continue
        for child in children:
            path = prefix + child.name
            if child.kind == DIR:
                if child.name not in SKIPPED_FOLDERS:
                    stack.append((path + "/", child.node))
            elif child.kind in (SYMLINK, OTHER):
                problems.append(_skipped(child.kind, path))
    return _unique(found, problems), sorted(problems)


def _main_file(children: list[Child[N]]) -> Child[N] | None:
    by_name = {c.name: c for c in children if c.kind == FILE and c.name in SKILL_MD_NAMES}
    for name in SKILL_MD_NAMES:
        if name in by_name:
            return by_name[name]
    return None


def _skipped(kind: str, path: str) -> str:
    return f"symlink skipped: {path}" if kind == SYMLINK else f"not a regular file, skipped: {path}"


def _collect(
    layout: SkillLayout[N],
    prefix: str,
    children: list[Child[N]],
    main: Child[N],
    list_dir: Callable[[N], Iterable[Child[N]]],
    problems: list[str],
) -> None:
    pending = [(prefix, children)]
    while pending:
        base, items = pending.pop()
        for child in items:
            if child is main:
                continue
            path = base + child.name
            if child.kind == FILE:
                layout.files.append(Entry(path, child.node, child.size, child.mode, child.token))
            elif child.kind == DIR:
                if child.name not in SKIPPED_FOLDERS:
                    listing = [c for c in list_dir(child.node) if not c.name.startswith(".")]
                    pending.append((path + "/", listing))
            else:
                problems.append(_skipped(child.kind, path))
    layout.files.sort(key=lambda e: e.path)


def _unique(found: list[SkillLayout[N]], problems: list[str]) -> list[SkillLayout[N]]:
    kept: dict[str, SkillLayout[N]] = {}
    for layout in sorted(found, key=lambda item: item.root.split("/")):
        first = kept.get(layout.folder)
        if first is None:
            kept[layout.folder] = layout
        else:
            problems.append(
                f"duplicate skill folder {layout.folder!r}: {layout.root or '.'} skipped, "
                f"{first.root or '.'} kept"
            )
    return [kept[folder] for folder in sorted(kept)]


def tree_from_paths(files: Iterable[tuple[str, Child[str]]]) -> Callable[[str], list[Child[str]]]:
    """Turn a flat listing of ``(path, file child)`` into a ``list_dir`` over folder paths.

    For backends that list a whole tree in one call (a filesystem's batched walk): folders are
    keyed by their path (``""`` is the root) and appear as ``dir`` children of their parents.
    """
    folders: dict[str, list[Child[str]]] = {"": []}
    for path, child in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in folders:
                folders[folder] = []
                folders["/".join(parts[: depth - 1])].append(Child(parts[depth - 1], DIR, folder))
        folders["/".join(parts[:-1])].append(child)

    def list_dir(folder: str) -> list[Child[str]]:
        return folders.get(folder, [])

    return list_dir

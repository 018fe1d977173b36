"""Workspace file tools (read with paging, write, list) through the user's scoped filesystem.

The tools see the user's area through :class:`ModelView`: machine-owned state — ``.harness/``
(workflow runs), ``skills/`` (live skills, drafts, usage, audit, reviews) and every other folder
the harness reads skills from (the pipeline's ``skill_dirs``: ``.agents/skills/``,
``.claude/skills/``, ...) — is not part of it, for reading, writing or listing. Agent-written
skills enter only through ``propose_skill`` / ``skill_manage``; the model reads a skill's files
with the load tool.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

import anyio.to_thread

from filesystems import MACHINE_DIR, AbstractFilesystem, FileStat, PathEscapeError, normalize_path
from harness.tools.function import Tool, tool_from_function
from harness.tools.paging import looks_binary, page_lines

__all__ = ["MACHINE_OWNED", "MachineOwnedPath", "ModelView", "file_tools"]

_MAX_PATH = 1024
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

#: Top-level folders of a user's area that only harness code writes, whatever the skill folders.
MACHINE_OWNED: frozenset[str] = frozenset({"skills", MACHINE_DIR})

_Folded = tuple[str, ...]


class MachineOwnedPath(PathEscapeError):
    """A model's file tool named a path in machine-owned state (skills, runs, usage, audit)."""


class ModelView:
    """The part of a user's area a model's file tools may read and write.

    Wraps the user's scoped filesystem and refuses, with :class:`MachineOwnedPath`, every path
    inside machine-owned state: :data:`MACHINE_OWNED` and the ``skill_dirs`` the skill layers
    read (``.agents/skills``, ...). Paths are compared segment by segment after Unicode NFKC
    folding, case folding and stripping trailing dots and spaces (so ``.Agents/Skills./x`` and
    ``．agents/skills`` are refused on every store, folding or not), and after following links
    where the area is a host folder (a link to a skill folder, or a skill folder's parent
    swapped for a link). A path naming a parent of a skill folder (``.agents``) may be listed
    but not written as a file. Listings leave machine-owned entries out.
    """

    def __init__(self, fs: AbstractFilesystem, *, skill_dirs: Sequence[str]) -> None:
        self.fs = fs
        self.skill_dirs = tuple(skill_dirs)
        self._owned: tuple[_Folded, ...] = tuple(
            {_folded(folder) for folder in (*MACHINE_OWNED, *self.skill_dirs)} - {()}
        )

    async def read_bytes(self, path: str) -> bytes:
        return await self.fs.read_bytes(await self.check(path))

    async def write_text(self, path: str, text: str) -> FileStat:
        checked = await self.check(path)
        if self._holds_owned(checked):
            raise MachineOwnedPath(
                f"{path!r} holds a skill folder ({self._shown()}); it stays a folder and is not written as a file"
            )
        return await self.fs.write_text(checked, text)

    async def list(self, path: str) -> list[FileStat]:
        entries = await self.fs.list(await self.check(path))
        return [entry for entry in entries if not self._owned_path(entry.path)]

    async def check(self, path: str) -> str:
        """The normalised ``path`` if it is a plain workspace path outside machine-owned state.

        Besides :func:`filesystems.normalize_path`'s rules, refuses control characters,
        backslashes, paths over 1024 characters, and paths whose percent-decoded or NFKC-folded
        spelling would climb out or name machine-owned state (``%2e%2e``, ``‥``, ``ｓkills``,
        ``.claude/./Skills/``).
        """
        if not isinstance(path, str):
            raise PathEscapeError(f"path {path!r} must be a string")
        normalised = _plain(path)
        if any(self._owned_path(variant) for variant in _spellings(path)) or await self._resolves_owned(normalised):
            raise MachineOwnedPath(
                f"{path!r} is machine-owned state ({self._shown()}) that file tools cannot read or write; "
                "create and change skills with propose_skill / skill_manage, read them with the load tool"
            )
        return normalised

    def _shown(self) -> str:
        return ", ".join(f"{folder}/" for folder in sorted({*MACHINE_OWNED, *self.skill_dirs}))

    def _owned_path(self, path: str) -> bool:
        """Whether ``path`` is, or lies inside, a machine-owned folder (any spelling)."""
        folded = _folded(path)
        return any(folded[: len(owned)] == owned for owned in self._owned)

    def _holds_owned(self, path: str) -> bool:
        """Whether ``path`` is a parent folder of a machine-owned folder (``.agents``)."""
        folded = _folded(path)
        return any(len(folded) < len(owned) and owned[: len(folded)] == folded for owned in self._owned)

    async def _resolves_owned(self, path: str) -> bool:
        host, root = self.fs.host_path(path), self.fs.host_path("")
        if host is None or root is None:
            return False
        return await anyio.to_thread.run_sync(self._host_owned, host, root)

    def _host_owned(self, host: Path, root: Path) -> bool:
        """Whether ``host``, links followed, is a machine-owned folder of the area or inside one
        (or inside the real folder a machine-owned name resolves to)."""
        real, base = os.path.realpath(host), os.path.realpath(root)
        if real != base and real.startswith(base + os.sep) and self._owned_path(real[len(base) + 1 :]):
            return True
        for folder in (*MACHINE_OWNED, *self.skill_dirs):
            owned = os.path.realpath(os.path.join(root, folder))
            if real == owned or real.startswith(owned + os.sep):
                return True
        return False


def _plain(path: str) -> str:
    if len(path) > _MAX_PATH:
        raise PathEscapeError(f"path {path[:40]!r}... is {len(path)} characters; the limit is {_MAX_PATH}")
    if _CONTROL.search(path):
        raise PathEscapeError(f"path {path!r} contains control characters")
    if "\\" in path:
        raise PathEscapeError(f"path {path!r} contains '\\'; separate folders with '/'")
    return normalize_path(path)


def _spellings(path: str) -> list[str]:
    """``path`` as the filesystem reads it and as decoders or folding could read it; each must
    stay inside the area (:class:`PathEscapeError` otherwise)."""
    decoded = unquote(path)
    variants = {path, decoded, unicodedata.normalize("NFKC", path), unicodedata.normalize("NFKC", decoded)}
    return [_plain(variant.replace("\\", "/")) for variant in variants]


def _folded(path: str) -> _Folded:
    """The segments of a normalised path as a folding store could compare them."""
    return tuple(unicodedata.normalize("NFKC", part).casefold().rstrip(" .") for part in path.split("/") if part)


def file_tools(fs: AbstractFilesystem, *, skill_dirs: Sequence[str]) -> list[Tool]:
    """``read_file``, ``write_file`` and ``list_files`` bound to ``fs`` (the user's area),
    seen through :class:`ModelView`; ``skill_dirs`` are the skill folders the layers read
    (``SkillPipeline.skill_dirs``)."""
    view = ModelView(fs, skill_dirs=skill_dirs)

    async def read_file(path: str, offset: int = 1, limit: int | None = None) -> str:
        """Read a text file from your workspace, paged by lines.

        Args:
            path: A path relative to your workspace.
            offset: The first line to return (1-based).
            limit: The most lines to return (at most 2000).
        """
        data = await view.read_bytes(path)
        if looks_binary(data):
            return f"{path} is a binary file of {len(data)} bytes; it is not shown as text."
        return page_lines(data.decode("utf-8"), path, offset, limit)

    async def write_file(path: str, content: str) -> str:
        """Write a text file in your workspace (replacing it if it exists). Skills are not
        written here: use propose_skill / skill_manage.

        Args:
            path: A path relative to your workspace.
            content: The full text to write.
        """
        if not isinstance(content, str):
            raise TypeError(f"content must be text, not {type(content).__name__}")
        stat = await view.write_text(path, content)
        return f"wrote {stat.size} bytes to {path}"

    async def list_files(path: str = "") -> str:
        """List a folder of your workspace (folders end with /).

        Args:
            path: A folder relative to your workspace; empty for its top.
        """
        entries = await view.list(path)
        return "\n".join(e.name + ("/" if e.is_dir else "") for e in entries) or "(empty)"

    return [tool_from_function(f) for f in (read_file, write_file, list_files)]

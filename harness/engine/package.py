"""A workflow skill's package: the files a run is pinned to.

Only what defines behaviour is part of it: the definition files (native or Comet), ``SKILL.md``
and every file under ``scripts/``. Hidden files (a segment starting with ``.``) and symlinks are
never included.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio.to_thread

from filesystems import AbstractFilesystem, normalize_path, segment_problem
from harness.engine.loader import definition_files, is_workflow_package
from harness.engine.spelling import COMET_FILES, EVALS_FILES, NATIVE_FILES
from repositories import SKILL_MD_NAMES

__all__ = ["SkillPackage", "is_package_file"]

_DEFINITION_FILES = frozenset(NATIVE_FILES) | frozenset(COMET_FILES) | frozenset(EVALS_FILES)


def is_package_file(path: str) -> bool:
    """Whether the skill-relative ``path`` belongs in a workflow package snapshot."""
    if any(part.startswith(".") for part in path.split("/")):
        return False
    return path in _DEFINITION_FILES or path in SKILL_MD_NAMES or path.startswith("scripts/")


@dataclass(frozen=True, kw_only=True)
class SkillPackage:
    """A skill's name and its package files (relative POSIX path → bytes)."""

    name: str
    files: Mapping[str, bytes] = field(repr=False)

    def __post_init__(self) -> None:
        if segment_problem(self.name):
            raise ValueError(f"skill package name {self.name!r} must be a folder name")
        for path in self.files:
            if normalize_path(path) != path or not is_package_file(path):
                raise ValueError(f"{path!r} is not a package file of skill {self.name!r}")
        if not is_workflow_package(self.files):
            raise ValueError(f"skill {self.name!r} has no workflow definition ({NATIVE_FILES[0]} or {COMET_FILES[0]})")

    @property
    def definition_files(self) -> tuple[str, ...]:
        """The definition files present (native and/or Comet)."""
        return definition_files(self.files)

    @classmethod
    async def from_directory(cls, path: str | os.PathLike[str], *, name: str | None = None) -> SkillPackage:
        """Read the package files of the skill folder ``path`` on this host (one worker hop).

        ``name`` defaults to the folder's name. ``ValueError`` if it has no workflow definition.
        """
        root = pathlib.Path(path)
        files = await anyio.to_thread.run_sync(_read_tree, root)
        return cls(name=name or root.resolve().name, files=files)

    @classmethod
    async def from_filesystem(
        cls, filesystem: AbstractFilesystem, path: str, *, name: str | None = None
    ) -> SkillPackage:
        """Read the package files of the skill folder ``path`` through ``filesystem``
        (one batched walk, one batched read)."""
        base = normalize_path(path)
        prefix = f"{base}/" if base else ""
        wanted = [stat.path for stat in await filesystem.walk(base) if is_package_file(stat.path[len(prefix) :])]
        contents = await filesystem.read_many(wanted)
        files = {p[len(prefix) :]: data for p, data in contents.items()}
        return cls(name=name or base.rsplit("/", 1)[-1], files=files)


def _read_tree(root: pathlib.Path) -> dict[str, bytes]:
    if not root.is_dir():
        raise FileNotFoundError(f"skill folder {str(root)!r} does not exist")
    files: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            full = pathlib.Path(folder, name)
            relative = full.relative_to(root).as_posix()
            if full.is_symlink() or not is_package_file(relative):
                continue
            files[relative] = full.read_bytes()
    return files

"""An in-process repository for tests and examples."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable

from repositories.base import (
    BundleFile,
    FileContents,
    SkillBundle,
    SkillBundleContents,
    SkillRepository,
    Snapshot,
)
from repositories.bulk import collections_paused
from repositories.errors import BundleNotFound
from repositories.sources import make_source

__all__ = ["MemoryRepository", "bundle_digest"]


def bundle_digest(bundle: SkillBundleContents) -> str:
    """SHA-256 over a bundle's main file and every file's path, mode and bytes."""
    return _digest(bundle, sorted(bundle.files, key=_PATH))


_PATH = operator.attrgetter("path")


def _digest(bundle: SkillBundleContents, files: list[FileContents]) -> str:
    """:func:`bundle_digest` of ``bundle`` whose ``files`` are sorted by path."""
    digest = hashlib.sha256(bundle.skill_md_name.encode() + b"\0" + bundle.skill_md + b"\0")
    for item in files:
        digest.update(f"{item.path}\0{item.mode:o}\0{len(item.data)}\0".encode())
        digest.update(item.data)
    return digest.hexdigest()


class MemoryRepository(SkillRepository):
    """Skills held in a dict; writable unless ``writable=False``.

    The version is a counter bumped by every ``save``/``delete``.
    """

    def __init__(
        self,
        bundles: Iterable[SkillBundleContents] = (),
        *,
        source: str | None = None,
        writable: bool = True,
        name: str = "memory",
    ) -> None:
        super().__init__(source=source or make_source(name), writable=writable)
        self._name = name
        self._bundles = {bundle.folder: bundle for bundle in bundles}
        self._generation = 0

    async def _version(self) -> str:
        return str(self._generation)

    async def _load(self, version: str) -> Snapshot:
        with collections_paused(len(self._bundles)):
            bundles = tuple(self._describe(self._bundles[folder]) for folder in sorted(self._bundles))
        return Snapshot(version=version, bundles=bundles)

    def _describe(self, bundle: SkillBundleContents) -> SkillBundle:
        files = sorted(bundle.files, key=_PATH)
        return SkillBundle(
            folder=bundle.folder,
            skill_md=bundle.skill_md,
            skill_md_name=bundle.skill_md_name,
            files=tuple([BundleFile(path=f.path, size=len(f.data), mode=f.mode) for f in files]),
            location=f"memory:{self._name}/{bundle.folder}",
            digest=_digest(bundle, files),
        )

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        bundle = self._bundles.get(folder)
        if bundle is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r}")
        return bundle.read(paths, where=f"{self.source}: {folder}")

    async def _save(self, bundle: SkillBundleContents) -> None:
        self._bundles[bundle.folder] = bundle
        self._generation += 1

    async def _delete(self, folder: str) -> None:
        if self._bundles.pop(folder, None) is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r} to delete")
        self._generation += 1

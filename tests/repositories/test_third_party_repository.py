"""A market written outside the package passes the conformance suite by subclassing it, as a
plug-in author would: skills held in a dict, built on nothing but ``SkillRepository``."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import pytest_asyncio

from repositories import BundleFile, BundleNotFound, SkillBundle, SkillBundleContents, SkillRepository, Snapshot
from repositories.testing import RepositoryCase, RepositoryConformance, skill_bundle


class DictRepository(SkillRepository):
    """Skills as ``{folder: {path: (bytes, mode)}}``; every :meth:`put` is a new version."""

    def __init__(self) -> None:
        super().__init__(source="dict")
        self._folders: dict[str, dict[str, tuple[bytes, int]]] = {}
        self._changes = 0

    def put(self, bundle: SkillBundleContents) -> None:
        files = {item.path: (item.data, item.mode) for item in bundle.files}
        self._folders[bundle.folder] = {bundle.skill_md_name: (bundle.skill_md, 0o644), **files}
        self._changes += 1

    async def _version(self) -> str:
        return str(self._changes)

    async def _load(self, version: str) -> Snapshot:
        return Snapshot(version=version, bundles=tuple(self._bundle(folder) for folder in sorted(self._folders)))

    def _bundle(self, folder: str) -> SkillBundle:
        files = sorted(self._folders[folder].items())
        digest = hashlib.sha256()
        for path, (data, mode) in files:
            digest.update(f"{path}\0{mode:o}\0{len(data)}\0".encode() + data)
        return SkillBundle(
            folder=folder,
            skill_md=self._folders[folder]["SKILL.md"][0],
            skill_md_name="SKILL.md",
            files=tuple(BundleFile(path=p, size=len(d), mode=m) for p, (d, m) in files if p != "SKILL.md"),
            location=f"dict:{folder}",
            digest=digest.hexdigest(),
        )

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        files = self._folders.get(folder)
        if files is None:
            raise BundleNotFound(f"no skill folder {folder!r}")
        missing = [path for path in paths if path not in files]
        if missing:
            raise BundleNotFound(f"{folder}/{missing[0]} does not exist")
        return {path: files[path][0] for path in paths}


class TestThirdPartyRepository(RepositoryConformance):
    @pytest_asyncio.fixture
    async def repository_case(self) -> AsyncIterator[RepositoryCase]:
        market = DictRepository()
        market.put(skill_bundle("alpha"))
        market.put(skill_bundle("beta", with_files=False))

        async def add(folder: str) -> None:
            market.put(skill_bundle(folder, with_files=False))

        async with market:
            yield RepositoryCase(repo=market, add=add)

"""The market conformance suite: the contract of :class:`~repositories.SkillRepository` as pytest
tests, for anyone writing a market.

Subclass :class:`RepositoryConformance` in a test module and give the subclass a fixture named
``repository_case`` that yields a :class:`RepositoryCase`: a fresh, entered market serving the
two skills of the suite — ``alpha`` with :data:`SKILL_FILES`, ``beta`` with only its SKILL.md,
each SKILL.md being :func:`skill_md` of the folder — and a coroutine function that publishes one
more skill (SKILL.md only) through the backend::

    import pytest_asyncio
    from repositories.testing import RepositoryCase, RepositoryConformance, skill_bundle

    class TestMyMarket(RepositoryConformance):
        @pytest_asyncio.fixture
        async def repository_case(self, tmp_path):
            store = MyStore(tmp_path)
            store.put(skill_bundle("alpha"))
            store.put(skill_bundle("beta", with_files=False))

            async def add(folder):
                store.put(skill_bundle(folder, with_files=False))

            async with MyMarket(store) as market:
                yield RepositoryCase(repo=market, add=add)

:func:`skill_bundle` gives a skill as the bytes a store-backed market saves,
:func:`write_skill_folder` as a folder on disk (with a git-ignored build output a folder market
must leave out). Parametrise the fixture to run the suite over several configurations.

This module needs pytest and pytest-asyncio, which are test dependencies, not the package's; the
suite's tests carry the ``asyncio`` mark, so they run in pytest-asyncio's strict and auto modes
(in strict mode, declare the async fixture with ``pytest_asyncio.fixture``). Nothing else in the
package imports this module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from repositories.base import FileContents, SkillBundleContents, SkillRepository
from repositories.errors import BundleNotFound, RepositoryClosed, UnsafePath

__all__ = [
    "SKILL_FILES",
    "RepositoryCase",
    "RepositoryConformance",
    "skill_bundle",
    "skill_md",
    "write_skill_folder",
]

SKILL_FILES: dict[str, tuple[bytes, int]] = {
    "scripts/run.sh": (b"#!/bin/sh\necho run\n", 0o755),
    "data/blob.bin": (bytes(range(256)), 0o644),
}
"""The files of the suite's ``alpha`` skill besides its SKILL.md: path -> (bytes, mode)."""


def skill_md(folder: str) -> bytes:
    """The SKILL.md the suite expects of the skill in ``folder``."""
    return f"---\nname: {folder}\ndescription: The {folder} skill.\n---\nBody of {folder}.\n".encode()


def skill_bundle(folder: str, *, with_files: bool = True) -> SkillBundleContents:
    """The suite's skill in ``folder`` as a bundle to save: :func:`skill_md`, plus
    :data:`SKILL_FILES` with ``with_files``."""
    files = tuple(FileContents(path=p, data=d, mode=m) for p, (d, m) in SKILL_FILES.items()) if with_files else ()
    return SkillBundleContents(folder=folder, skill_md=skill_md(folder), files=files)


def write_skill_folder(root: Path, folder: str, *, with_files: bool = True) -> None:
    """Write the suite's skill in ``folder`` as ``root/folder`` on disk. With ``with_files``, also
    :data:`SKILL_FILES` (with their modes) and a ``build/`` folder that its own ``.gitignore``
    ignores entirely, which a market must not deliver."""
    target = root / folder
    target.mkdir(parents=True, exist_ok=True)
    (target / "SKILL.md").write_bytes(skill_md(folder))
    if not with_files:
        return
    for path, (data, mode) in SKILL_FILES.items():
        file = target / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        file.chmod(mode)
    (target / "build").mkdir()
    (target / "build" / "out.o").write_text("ignored\n")
    (target / "build" / ".gitignore").write_text("*\n")


@dataclass(frozen=True, kw_only=True)
class RepositoryCase:
    """A market under test: ``repo``, entered, serving the suite's ``alpha`` and ``beta`` skills,
    and ``add(folder)``, which publishes :func:`skill_md` of ``folder`` as a new skill through the
    backend (the next version must show it)."""

    repo: SkillRepository
    add: Callable[[str], Awaitable[None]]


@pytest.mark.asyncio
class RepositoryConformance:
    """The contract every market keeps. Subclass it and provide the ``repository_case`` fixture
    (see the module docstring)."""

    @pytest.fixture
    def market(self, repository_case: RepositoryCase) -> RepositoryCase:
        """The market under test (what the subclass's ``repository_case`` yields)."""
        return repository_case

    async def test_snapshot_lists_bundles_sorted_with_main_file_and_listing(self, market: RepositoryCase) -> None:
        snap = await market.repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["alpha", "beta"]
        alpha, beta = snap.bundles
        assert alpha.skill_md == skill_md("alpha") and alpha.skill_md_name == "SKILL.md"
        assert [(f.path, f.size, f.mode) for f in alpha.files] == [
            ("data/blob.bin", 256, 0o644),
            ("scripts/run.sh", len(SKILL_FILES["scripts/run.sh"][0]), 0o755),
        ]
        assert beta.files == ()
        assert alpha.digest and alpha.digest != beta.digest
        assert snap.error is None

    async def test_read_files_returns_bytes_keyed_as_asked(self, market: RepositoryCase) -> None:
        data = await market.repo.read_files("alpha", ["data/blob.bin", "./scripts/run.sh", "SKILL.md"])
        assert data == {
            "data/blob.bin": bytes(range(256)),
            "./scripts/run.sh": SKILL_FILES["scripts/run.sh"][0],
            "SKILL.md": skill_md("alpha"),
        }
        assert await market.repo.read_file("beta", "SKILL.md") == skill_md("beta")

    async def test_missing_folder_or_file_is_not_found(self, market: RepositoryCase) -> None:
        with pytest.raises(BundleNotFound):
            await market.repo.read_file("nope", "SKILL.md")
        with pytest.raises(BundleNotFound):
            await market.repo.read_file("alpha", "scripts/missing.sh")
        with pytest.raises(FileNotFoundError):
            await market.repo.read_file("alpha", "scripts")

    @pytest.mark.parametrize("path", ["../beta/SKILL.md", "/etc/passwd", ".git/config", "scripts/../../x", "a\0b", ""])
    async def test_unsafe_paths_are_refused(self, market: RepositoryCase, path: str) -> None:
        with pytest.raises(UnsafePath):
            await market.repo.read_file("alpha", path)

    async def test_unchanged_repository_keeps_version_and_snapshot(self, market: RepositoryCase) -> None:
        first = await market.repo.snapshot()
        assert await market.repo.version() == first.version
        assert await market.repo.snapshot() is first

    async def test_change_gives_a_new_version_and_keeps_unchanged_digests(self, market: RepositoryCase) -> None:
        first = await market.repo.snapshot()
        await market.add("gamma")
        second = await market.repo.snapshot()
        assert second.version != first.version
        assert [b.folder for b in second.bundles] == ["alpha", "beta", "gamma"]
        assert second.bundles[0].digest == first.bundles[0].digest

    async def test_refresh_rereads_and_keeps_serving(self, market: RepositoryCase) -> None:
        first = await market.repo.snapshot()
        await market.repo.refresh()
        again = await market.repo.snapshot()
        assert [b.digest for b in again.bundles] == [b.digest for b in first.bundles]

    async def test_aclose_is_idempotent_and_final(self, market: RepositoryCase) -> None:
        await market.repo.snapshot()
        await market.repo.aclose()
        await market.repo.aclose()
        with pytest.raises(RepositoryClosed):
            await market.repo.snapshot()
        with pytest.raises(RepositoryClosed):
            await market.repo.read_file("alpha", "SKILL.md")

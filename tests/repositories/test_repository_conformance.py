"""The market conformance suite (``repositories.testing``), run against memory, directory, git,
plugin-marketplace, MySQL and Nacos (through its local stand-in, see tests/support/nacos.py) markets."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from repositories import (
    DirectoryRepository,
    GitRepository,
    MemoryRepository,
    MySQLRepository,
    NacosRepository,
    PluginMarketplaceRepository,
)
from repositories.testing import (
    SKILL_FILES,
    RepositoryCase,
    RepositoryConformance,
    skill_bundle,
    skill_md,
    write_skill_folder,
)
from tests.support.mysql import drop_tables
from tests.support.nacos import NacosStandIn, skill_zip
from tests.support.repositories import GitRemote


async def memory_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    repo = MemoryRepository([skill_bundle("alpha"), skill_bundle("beta", with_files=False)])

    async def add(folder: str) -> None:
        await repo.save(skill_bundle(folder, with_files=False))

    return RepositoryCase(repo=repo, add=add)


async def directory_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    root = tmp_path / "skills"
    write_skill_folder(root, "alpha")
    write_skill_folder(root / "group", "beta", with_files=False)

    async def add(folder: str) -> None:
        write_skill_folder(root, folder, with_files=False)

    return RepositoryCase(repo=DirectoryRepository(root), add=add)


async def filesystem_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    root = tmp_path / "ws" / "skills"
    write_skill_folder(root, "alpha")
    write_skill_folder(root / "group", "beta", with_files=False)

    async def add(folder: str) -> None:
        write_skill_folder(root, folder, with_files=False)

    return RepositoryCase(repo=DirectoryRepository("skills", filesystem=LocalFilesystem(tmp_path / "ws")), add=add)


async def git_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    remote = GitRemote(tmp_path / "git")
    write_skill_folder(remote.work / "skills", "alpha")
    write_skill_folder(remote.work / "skills", "beta", with_files=False)
    remote.commit()

    async def add(folder: str) -> None:
        write_skill_folder(remote.work / "skills", folder, with_files=False)
        remote.commit()

    return RepositoryCase(repo=GitRepository(remote.url, cache_dir=tmp_path / "cache"), add=add)


async def plugin_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    remote = GitRemote(tmp_path / "git")
    manifest = remote.work / ".claude-plugin" / "marketplace.json"
    manifest.parent.mkdir()
    manifest.write_text('{"name": "m", "plugins": [{"name": "kit", "source": "./plugins/kit"}]}')
    skills_root = remote.work / "plugins" / "kit" / "skills"
    write_skill_folder(skills_root, "alpha")
    write_skill_folder(skills_root, "beta", with_files=False)
    remote.commit()

    async def add(folder: str) -> None:
        write_skill_folder(skills_root, folder, with_files=False)
        remote.commit()

    return RepositoryCase(
        repo=PluginMarketplaceRepository(GitRepository(remote.url, cache_dir=tmp_path / "cache")), add=add
    )


async def mysql_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    dsn = request.getfixturevalue("mysql_dsn")
    table = f"conf_{secrets.token_hex(4)}"
    repo = MySQLRepository(dsn, table=table, writable=True, create_if_missing=True)
    await repo.save(skill_bundle("alpha"))
    await repo.save(skill_bundle("beta", with_files=False))

    async def drop() -> None:
        await drop_tables(dsn, table)

    request.node.mysql_cleanup = drop

    async def add(folder: str) -> None:
        await repo.save(skill_bundle(folder, with_files=False))

    return RepositoryCase(repo=repo, add=add)


async def nacos_market(tmp_path: Path, request: pytest.FixtureRequest) -> RepositoryCase:
    stand_in = NacosStandIn()
    stand_in.start()
    request.addfinalizer(stand_in.stop)

    def publish(folder: str, with_files: bool = True) -> None:
        stand_in.publish(folder, skill_zip(folder, skill_md(folder), dict(SKILL_FILES) if with_files else None))

    publish("alpha")
    publish("beta", False)

    async def add(folder: str) -> None:
        publish(folder, False)

    # Nacos cannot list skills: the market names the ones it serves, "gamma" before it exists.
    names = ["alpha", "beta", "gamma"]
    return RepositoryCase(
        repo=NacosRepository(stand_in.address, skills=names, check_interval=0, log_dir=tmp_path / "logs"), add=add
    )


BACKENDS = {
    "memory": memory_market,
    "directory": directory_market,
    "directory-over-filesystem": filesystem_market,
    "git": git_market,
    "claude-plugins": plugin_market,
    "mysql": mysql_market,
    "nacos": nacos_market,
}


@pytest.fixture(params=sorted(BACKENDS))
async def repository_case(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RepositoryCase]:
    built = await BACKENDS[request.param](tmp_path, request)
    async with built.repo:
        yield built
    cleanup = getattr(request.node, "mysql_cleanup", None)
    if cleanup is not None:
        await cleanup()


class TestRepositories(RepositoryConformance):
    """Every backend in ``BACKENDS``."""

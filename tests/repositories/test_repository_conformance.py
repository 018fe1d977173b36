"""The common SkillRepository contract, run against memory, directory, git, plugin-marketplace, MySQL and
Nacos (through its local stand-in, see tests/support/nacos.py) markets."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from repositories import (
    BundleNotFound,
    DirectoryRepository,
    GitRepository,
    MemoryRepository,
    MySQLRepository,
    NacosRepository,
    PluginMarketplaceRepository,
    RepositoryClosed,
    SkillBundleContents,
    SkillRepository,
    UnsafePath,
)
from tests.support import skills
from tests.support.mysql import drop_tables
from tests.support.nacos import NacosStandIn, skill_zip
from tests.support.repositories import GitRemote

FILES = {"scripts/run.sh": (b"#!/bin/sh\necho run\n", 0o755), "data/blob.bin": (bytes(range(256)), 0o644)}


def skill_md(folder: str) -> bytes:
    return skills.skill_md(folder, f"The {folder} skill.", body=f"Body of {folder}.\n").encode()


def contents(folder: str, with_files: bool = True) -> SkillBundleContents:
    return skills.make_bundle(folder, text=skill_md(folder), files=FILES if with_files else None)


def write_tree(root: Path, folder: str, with_files: bool = True) -> None:
    files = {p: d for p, (d, _) in FILES.items()} if with_files else {}
    skills.make_skill(
        root,
        folder,
        text=skill_md(folder),
        files=files,
        executable=[p for p, (_, m) in FILES.items() if with_files and m == 0o755],
    )
    if with_files:
        (root / folder / "build").mkdir()
        (root / folder / "build" / "out.o").write_text("ignored\n")
        (root / folder / "build" / ".gitignore").write_text("*\n")


@dataclass
class Market:
    repo: SkillRepository
    add: Callable[[str], Awaitable[None]]


async def memory_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    repo = MemoryRepository([contents("alpha"), contents("beta", False)])

    async def add(folder: str) -> None:
        await repo.save(contents(folder, False))

    return Market(repo, add)


async def directory_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    root = tmp_path / "skills"
    write_tree(root, "alpha")
    write_tree(root / "group", "beta", False)

    async def add(folder: str) -> None:
        write_tree(root, folder, False)

    return Market(DirectoryRepository(root), add)


async def filesystem_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    root = tmp_path / "ws" / "skills"
    write_tree(root, "alpha")
    write_tree(root / "group", "beta", False)

    async def add(folder: str) -> None:
        write_tree(root, folder, False)

    return Market(DirectoryRepository("skills", filesystem=LocalFilesystem(tmp_path / "ws")), add)


async def git_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    remote = GitRemote(tmp_path / "git")
    write_tree(remote.work / "skills", "alpha")
    write_tree(remote.work / "skills", "beta", False)
    remote.commit()

    async def add(folder: str) -> None:
        write_tree(remote.work / "skills", folder, False)
        remote.commit()

    return Market(GitRepository(remote.url, cache_dir=tmp_path / "cache"), add)


async def plugin_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    remote = GitRemote(tmp_path / "git")
    manifest = remote.work / ".claude-plugin" / "marketplace.json"
    manifest.parent.mkdir()
    manifest.write_text('{"name": "m", "plugins": [{"name": "kit", "source": "./plugins/kit"}]}')
    skills_root = remote.work / "plugins" / "kit" / "skills"
    write_tree(skills_root, "alpha")
    write_tree(skills_root, "beta", False)
    remote.commit()

    async def add(folder: str) -> None:
        write_tree(skills_root, folder, False)
        remote.commit()

    return Market(PluginMarketplaceRepository(GitRepository(remote.url, cache_dir=tmp_path / "cache")), add)


async def mysql_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    dsn = request.getfixturevalue("mysql_dsn")
    table = f"conf_{secrets.token_hex(4)}"
    repo = MySQLRepository(dsn, table=table, writable=True, create_if_missing=True)
    await repo.save(contents("alpha"))
    await repo.save(contents("beta", False))

    async def drop() -> None:
        await drop_tables(dsn, table)

    request.node.mysql_cleanup = drop

    async def add(folder: str) -> None:
        await repo.save(contents(folder, False))

    return Market(repo, add)


async def nacos_market(tmp_path: Path, request: pytest.FixtureRequest) -> Market:
    stand_in = NacosStandIn()
    stand_in.start()
    request.addfinalizer(stand_in.stop)

    def publish(folder: str, with_files: bool = True) -> None:
        stand_in.publish(folder, skill_zip(folder, skill_md(folder), dict(FILES) if with_files else None))

    publish("alpha")
    publish("beta", False)

    async def add(folder: str) -> None:
        publish(folder, False)

    # Nacos cannot list skills: the market names the ones it serves, "gamma" before it exists.
    names = ["alpha", "beta", "gamma"]
    return Market(NacosRepository(stand_in.address, skills=names, check_interval=0, log_dir=tmp_path / "logs"), add)


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
async def market(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Market]:
    built = await BACKENDS[request.param](tmp_path, request)
    async with built.repo:
        yield built
    cleanup = getattr(request.node, "mysql_cleanup", None)
    if cleanup is not None:
        await cleanup()


async def test_snapshot_lists_bundles_sorted_with_main_file_and_listing(market: Market) -> None:
    snap = await market.repo.snapshot()
    assert [b.folder for b in snap.bundles] == ["alpha", "beta"]
    alpha, beta = snap.bundles
    assert alpha.skill_md == skill_md("alpha") and alpha.skill_md_name == "SKILL.md"
    assert [(f.path, f.size, f.mode) for f in alpha.files] == [
        ("data/blob.bin", 256, 0o644),
        ("scripts/run.sh", len(FILES["scripts/run.sh"][0]), 0o755),
    ]
    assert beta.files == ()
    assert alpha.digest and alpha.digest != beta.digest
    assert snap.error is None


async def test_read_files_returns_bytes_keyed_as_asked(market: Market) -> None:
    data = await market.repo.read_files("alpha", ["data/blob.bin", "./scripts/run.sh", "SKILL.md"])
    assert data == {
        "data/blob.bin": bytes(range(256)),
        "./scripts/run.sh": FILES["scripts/run.sh"][0],
        "SKILL.md": skill_md("alpha"),
    }
    assert await market.repo.read_file("beta", "SKILL.md") == skill_md("beta")


async def test_missing_folder_or_file_is_not_found(market: Market) -> None:
    with pytest.raises(BundleNotFound):
        await market.repo.read_file("nope", "SKILL.md")
    with pytest.raises(BundleNotFound):
        await market.repo.read_file("alpha", "scripts/missing.sh")
    with pytest.raises(FileNotFoundError):
        await market.repo.read_file("alpha", "scripts")


@pytest.mark.parametrize("path", ["../beta/SKILL.md", "/etc/passwd", ".git/config", "scripts/../../x", "a\0b", ""])
async def test_unsafe_paths_are_refused(market: Market, path: str) -> None:
    with pytest.raises(UnsafePath):
        await market.repo.read_file("alpha", path)


async def test_unchanged_repository_keeps_version_and_snapshot(market: Market) -> None:
    first = await market.repo.snapshot()
    assert await market.repo.version() == first.version
    assert await market.repo.snapshot() is first


async def test_change_gives_a_new_version_and_keeps_unchanged_digests(market: Market) -> None:
    first = await market.repo.snapshot()
    await market.add("gamma")
    second = await market.repo.snapshot()
    assert second.version != first.version
    assert [b.folder for b in second.bundles] == ["alpha", "beta", "gamma"]
    assert second.bundles[0].digest == first.bundles[0].digest


async def test_refresh_rereads_and_keeps_serving(market: Market) -> None:
    first = await market.repo.snapshot()
    await market.repo.refresh()
    again = await market.repo.snapshot()
    assert [b.digest for b in again.bundles] == [b.digest for b in first.bundles]


async def test_aclose_is_idempotent_and_final(market: Market) -> None:
    await market.repo.snapshot()
    await market.repo.aclose()
    await market.repo.aclose()
    with pytest.raises(RepositoryClosed):
        await market.repo.snapshot()
    with pytest.raises(RepositoryClosed):
        await market.repo.read_file("alpha", "SKILL.md")

"""The well-known index market against a local HTTP server and a local site folder, with the
hostile artifacts a publisher could craft."""

from __future__ import annotations

from pathlib import Path

import pytest

from repositories import RepositoryUnavailable, WellKnownRepository, open_repository
from repositories.errors import InvalidRepositoryConfig
from tests.support.wellknown import Site, serve, tar_gz, zipped


def _md(name: str, body: str = "Do it.") -> bytes:
    return f"---\nname: {name}\ndescription: the {name} skill\n---\n{body}\n".encode()


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


async def test_serves_skill_md_and_archive_entries_over_http(site: Site) -> None:
    site.add("hello", _md("hello"))
    site.add(
        "tool", tar_gz({"SKILL.md": _md("tool"), "scripts/run.sh": (b"#!/bin/sh\necho hi\n", 0o755)}), kind="archive"
    )
    site.add("zipped", zipped({"SKILL.md": _md("zipped"), "references/a.md": b"A"}), kind="archive", url="zipped.zip")
    with serve(site.root) as base:
        async with open_repository(base + "#check_interval=0") as repo:
            assert isinstance(repo, WellKnownRepository)
            assert repo.source == "wk-127.0.0.1"
            snapshot = await repo.snapshot()
            assert [b.folder for b in snapshot.bundles] == ["hello", "tool", "zipped"]
            assert snapshot.problems == ()
            tool = snapshot.bundle("tool")
            assert tool is not None and [(f.path, f.mode) for f in tool.files] == [("scripts/run.sh", 0o755)]
            assert await repo.read_file("tool", "scripts/run.sh") == b"#!/bin/sh\necho hi\n"
            assert await repo.read_file("zipped", "references/a.md") == b"A"
            version = snapshot.version
            assert await repo.version() == version  # unchanged index: same token
            site.add("hello", _md("hello", "Changed."))
            assert await repo.version() != version


async def test_a_local_site_folder_and_index_file(site: Site) -> None:
    site.add("hello", _md("hello"))
    async with WellKnownRepository(site.root) as repo:
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["hello"]
    async with open_repository(f"well-known+file://{site.folder / 'index.json'}") as repo:
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["hello"]


async def test_an_index_of_an_unknown_schema_is_refused(site: Site) -> None:
    site.add("ok", _md("ok"))
    site.write(schema=None)
    async with WellKnownRepository(site.root) as repo:
        with pytest.raises(RepositoryUnavailable, match="unknown index schema"):
            await repo.snapshot()


async def test_a_server_going_away_keeps_the_last_good_skills(site: Site) -> None:
    site.add("hello", _md("hello"))
    with serve(site.root) as base:
        repo = WellKnownRepository(base, check_interval=0, timeout=2)
        first = await repo.snapshot()
    snapshot = await repo.snapshot()
    assert snapshot.error is not None and snapshot.bundles == first.bundles
    await repo.aclose()


def test_bad_urls_are_refused() -> None:
    with pytest.raises(InvalidRepositoryConfig):
        WellKnownRepository("ftp://example.com")
    with pytest.raises(InvalidRepositoryConfig):
        open_repository("well-known+https://example.com#bogus=1")

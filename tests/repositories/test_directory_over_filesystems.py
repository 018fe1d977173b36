"""DirectoryRepository reading through filesystems: a local folder and a remote key-value store."""

from __future__ import annotations

from pathlib import Path

import pytest

from filesystems import LocalFilesystem, MemoryKeyValueStore, RemoteFilesystem
from repositories import BundleNotFound, DirectoryRepository, InvalidRepositoryConfig, UnsafePath
from tests.support.repositories import write_skill


async def test_local_filesystem_tree_is_served_with_modes(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "market", "alpha")
    (skill / "run.sh").write_bytes(b"#!/bin/sh\n")
    (skill / "run.sh").chmod(0o755)
    (skill / ".env").write_text("x")
    write_skill(tmp_path / "market" / "node_modules", "ignored")
    async with LocalFilesystem(tmp_path) as fs, DirectoryRepository("market", filesystem=fs) as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["alpha"]
        assert [(f.path, f.mode) for f in snap.bundles[0].files] == [(".env", 0o644), ("run.sh", 0o755)]
        assert snap.bundles[0].location == str(tmp_path / "market" / "alpha")
        assert await repo.read_file("alpha", "run.sh") == b"#!/bin/sh\n"
        assert repo.source == "dir-market"
        assert await repo.snapshot() is snap
        write_skill(tmp_path / "market", "beta")
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["alpha", "beta"]


async def test_remote_store_uses_its_generation_and_reads_in_batches(tmp_path: Path) -> None:
    async with RemoteFilesystem(MemoryKeyValueStore(), agent_id="bot") as fs:
        await fs.write_bytes("skills/group/alpha/SKILL.md", b"---\nname: alpha\n---\n")
        await fs.write_bytes("skills/group/alpha/scripts/go.py", b"print(1)\n", mode=0o755)
        await fs.write_bytes("skills/beta/SKILL.md", b"---\nname: beta\n---\n")
        async with DirectoryRepository("skills", filesystem=fs) as repo:
            first = await repo.snapshot()
            assert [b.folder for b in first.bundles] == ["alpha", "beta"]
            assert [(f.path, f.mode) for f in first.bundles[0].files] == [("scripts/go.py", 0o755)]
            assert first.bundles[0].location == "RemoteFilesystem:skills/group/alpha"
            assert await repo.snapshot() is first
            await fs.write_bytes("skills/beta/SKILL.md", b"---\nname: beta\ndescription: v2\n---\n")
            second = await repo.snapshot()
            assert b"v2" in second.bundles[1].skill_md
            assert second.bundles[0] is first.bundles[0]
            assert await repo.read_files("alpha", ["scripts/go.py"]) == {"scripts/go.py": b"print(1)\n"}
            with pytest.raises(BundleNotFound):
                await repo.read_file("alpha", "nope.txt")
            with pytest.raises(UnsafePath):
                await repo.read_file("alpha", "../beta/SKILL.md")


def test_filesystem_variant_is_read_only(tmp_path: Path) -> None:
    with pytest.raises(InvalidRepositoryConfig):
        DirectoryRepository("x", filesystem=LocalFilesystem(tmp_path), writable=True)

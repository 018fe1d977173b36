"""DirectoryRepository on real host folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repositories import (
    DirectoryRepository,
    FileContents,
    InvalidBundle,
    RepositoryReadOnly,
    RepositoryUnavailable,
    SkillBundleContents,
    UnsafePath,
    read_skill_folder,
)
from tests.support.io import IORecorder
from tests.support.repositories import write_skill


async def test_nested_and_dot_folders_are_searched_and_skipped_names_are_not(tmp_path: Path) -> None:
    write_skill(tmp_path, "top")
    write_skill(tmp_path, "team/a/deep")
    write_skill(tmp_path, "top/inner")  # inside a skill: just files of "top"
    write_skill(tmp_path, "node_modules/pkg")
    write_skill(tmp_path, ".hidden/secret")
    write_skill(tmp_path, "top/__pycache__/cached")
    (tmp_path / "top" / ".git").mkdir()
    (tmp_path / "top" / ".git" / "config").write_text("x")
    async with DirectoryRepository(tmp_path) as repo:
        snap = await repo.snapshot()
    assert [b.folder for b in snap.bundles] == ["deep", "secret", "top"]
    top = snap.bundle("top")
    assert top is not None
    assert [f.path for f in top.files] == ["inner/SKILL.md"]
    assert top.location == str(tmp_path / "top")
    assert repo.source == f"dir-{tmp_path.name.lower()}"


async def test_lowercase_skill_md_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "lower").mkdir()
    (tmp_path / "lower" / "skill.md").write_text("---\nname: lower\n---\n")
    async with DirectoryRepository(tmp_path) as repo:
        (bundle,) = (await repo.snapshot()).bundles
    assert bundle.skill_md_name == "skill.md"
    assert bundle.files == ()


async def test_symlinks_are_reported_and_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    root = tmp_path / "skills"
    skill = write_skill(root, "alpha")
    (skill / "link.txt").symlink_to(outside / "secret.txt")
    (skill / "linkdir").symlink_to(outside)
    (root / "linked-skill").symlink_to(skill)
    async with DirectoryRepository(root) as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["alpha"]
        assert snap.bundles[0].files == ()
        assert snap.problems == (
            "symlink skipped: alpha/link.txt",
            "symlink skipped: alpha/linkdir",
            "symlink skipped: linked-skill",
        )
        with pytest.raises(UnsafePath):
            await repo.read_file("alpha", "link.txt")
        with pytest.raises(UnsafePath):
            await repo.read_file("alpha", "linkdir/secret.txt")


async def test_duplicate_folder_names_keep_the_first_in_path_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "a/same", description="first")
    write_skill(tmp_path, "b/same", description="second")
    async with DirectoryRepository(tmp_path) as repo:
        snap = await repo.snapshot()
    assert len(snap.bundles) == 1 and b"first" in snap.bundles[0].skill_md
    assert snap.problems == ("duplicate skill folder 'same': b/same skipped, a/same kept",)


async def test_unchanged_tree_opens_no_file_and_a_change_rereads_only_that_skill(
    tmp_path: Path, opens: IORecorder
) -> None:
    for i in range(20):
        write_skill(tmp_path, f"skill-{i:02d}")
    async with DirectoryRepository(tmp_path) as repo:
        first = await repo.snapshot()
        with opens as paths:
            again = await repo.snapshot()
        assert paths == []
        assert again is first
        (tmp_path / "skill-07" / "SKILL.md").write_text("---\nname: skill-07\ndescription: new\n---\n")
        with opens as paths:
            changed = await repo.snapshot()
        assert paths == [str(tmp_path / "skill-07" / "SKILL.md")]
    assert changed.version != first.version
    assert b"new" in changed.bundles[7].skill_md
    assert all(changed.bundles[i] is first.bundles[i] for i in range(20) if i != 7)


async def test_same_size_edit_within_the_same_second_is_seen(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "alpha", body="AAAA\n")
    async with DirectoryRepository(tmp_path) as repo:
        first = await repo.snapshot()
        stat = (skill / "SKILL.md").stat()
        (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text().replace("AAAA", "BBBB"))
        os.utime(skill / "SKILL.md", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, ctime moves
        second = await repo.snapshot()
    assert b"BBBB" in second.bundles[0].skill_md
    assert second.version != first.version


async def test_missing_folder_is_unavailable(tmp_path: Path) -> None:
    async with DirectoryRepository(tmp_path / "missing") as repo:
        with pytest.raises(RepositoryUnavailable, match="cannot read skill directory"):
            await repo.snapshot()


async def test_folder_removed_later_serves_the_last_good_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "alpha")
    async with DirectoryRepository(root) as repo:
        good = await repo.snapshot()
        root.rename(tmp_path / "moved")
        served = await repo.snapshot()
    assert served.bundles == good.bundles
    assert isinstance(served.error, RepositoryUnavailable)


async def test_writable_directory_saves_and_deletes_whole_folders(tmp_path: Path) -> None:
    bundle = SkillBundleContents(
        folder="made",
        skill_md=b"---\nname: made\n---\n",
        files=(FileContents(path="scripts/go.sh", data=b"#!/bin/sh\n", mode=0o755),),
    )
    async with DirectoryRepository(tmp_path, writable=True) as repo:
        await repo.save(bundle)
        assert (tmp_path / "made" / "scripts" / "go.sh").stat().st_mode & 0o777 == 0o755
        (bundle_seen,) = (await repo.snapshot()).bundles
        assert [(f.path, f.mode) for f in bundle_seen.files] == [("scripts/go.sh", 0o755)]
        await repo.save(SkillBundleContents(folder="made", skill_md=b"---\nname: made\n---\nv2\n"))
        assert not (tmp_path / "made" / "scripts").exists()
        await repo.delete("made")
        assert (await repo.snapshot()).bundles == ()
    assert sorted(os.listdir(tmp_path)) == []


async def test_read_only_directory_refuses_writes(tmp_path: Path) -> None:
    async with DirectoryRepository(tmp_path) as repo:
        with pytest.raises(RepositoryReadOnly):
            await repo.save(SkillBundleContents(folder="x", skill_md=b""))


async def test_read_skill_folder_reads_everything_for_publishing(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "pub")
    (skill / "run.sh").write_bytes(b"#!/bin/sh\n")
    (skill / "run.sh").chmod(0o755)
    (skill / ".env").write_text("x")
    (skill / "evil").symlink_to("/etc/passwd")
    bundle, problems = await read_skill_folder(skill)
    assert bundle.folder == "pub"
    assert [(f.path, f.data, f.mode) for f in bundle.files] == [
        (".env", b"x", 0o644),
        ("run.sh", b"#!/bin/sh\n", 0o755),
    ]
    assert problems == ("symlink skipped: evil",)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidBundle, match="no SKILL.md"):
        await read_skill_folder(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        await read_skill_folder(tmp_path / "absent")

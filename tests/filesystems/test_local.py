"""LocalFilesystem specifics: symlinks, host paths, ownership, scoping on the host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filesystems import InvalidUserId, LocalFilesystem, PathEscapeError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("host secret")
    return secret


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_symlinks_leading_out_are_refused(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", root / "file-link")
    os.symlink(outside, root / "dir-link")
    fs = LocalFilesystem(root)
    for attempt in (
        fs.read_bytes("file-link"),
        fs.read_bytes("dir-link/secret.txt"),
        fs.list("dir-link"),
        fs.write_bytes("dir-link/planted.txt", b"x"),
        fs.append("dir-link/log", b"x"),
        fs.stat("dir-link/secret.txt"),
    ):
        with pytest.raises(PathEscapeError, match="outside"):
            await attempt
    assert not (outside / "planted.txt").exists()


async def test_read_many_refuses_an_escaping_symlink(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", root / "file-link")
    with pytest.raises(PathEscapeError):
        await LocalFilesystem(root).read_many(["file-link"])


async def test_symlinks_inside_the_root_are_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "a.txt").write_text("inside")
    os.symlink("real", root / "alias")
    fs = LocalFilesystem(root)
    assert await fs.read_text("alias/a.txt") == "inside"


async def test_listings_leave_out_escaping_symlinks(root: Path, outside: Path) -> None:
    (root / "keep.txt").write_text("x")
    os.symlink(outside, root / "dir-link")
    os.symlink(outside / "secret.txt", root / "file-link")
    fs = LocalFilesystem(root)
    assert [s.path for s in await fs.list()] == ["keep.txt"]
    assert [s.path for s in await fs.walk()] == ["keep.txt"]


async def test_deleting_a_symlink_leaves_its_target(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "dir-link")
    await LocalFilesystem(root).delete("dir-link")
    assert not os.path.lexists(root / "dir-link")
    assert (outside / "secret.txt").read_text() == "host secret"


async def test_scoped_view_is_the_user_folder_and_host_path_points_there(root: Path) -> None:
    fs = LocalFilesystem(root, shell=True)
    alice = fs.scoped("alice")
    await alice.write_text("skills/x/SKILL.md", "hi")
    assert (root / "alice" / "skills" / "x" / "SKILL.md").read_text() == "hi"
    assert alice.host_path("skills") == root / "alice" / "skills"
    assert alice.shell_path("skills/x") == str(root / "alice" / "skills" / "x")
    assert fs.shell_path("skills/x") == str(root / "skills" / "x")
    assert await fs.generation() is None
    with pytest.raises(InvalidUserId):
        fs.scoped("skills")


async def test_local_shell_is_trusted_and_sees_the_host(root: Path, outside: Path) -> None:
    result = await LocalFilesystem(root, shell=True).run(f"cat {outside}/secret.txt")
    assert result.stdout == "host secret"


async def test_owner_receives_created_files_and_folders(root: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    fs = LocalFilesystem(root / "area", owner=(65534, 65534))
    await fs.write_text("deep/file.txt", "x")
    await fs.append("deep/log", b"x")
    for path in ("", "deep", "deep/file.txt", "deep/log"):
        assert (root / "area" / path).stat().st_uid == 65534, path


async def test_versions_change_on_every_write_even_with_equal_size(root: Path) -> None:
    fs = LocalFilesystem(root)
    versions = {(await fs.write_bytes("v", b"same")).version for _ in range(50)}
    assert len(versions) == 50


async def test_no_temporary_files_are_left_or_listed(root: Path) -> None:
    fs = LocalFilesystem(root)
    await fs.write_bytes("a", b"1")
    await fs.create_exclusive("b", b"2")
    with pytest.raises(FileExistsError):
        await fs.create_exclusive("b", b"3")
    await fs.compare_and_set("a", b"4", (await fs.stat("a")).version)
    assert sorted(os.listdir(root)) == ["a", "b"]

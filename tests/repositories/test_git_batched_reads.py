"""A git market reads skills' files by the blob ids its listing found, many skills in one
``git cat-file --batch`` stream; what the listing did not name is refused as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repositories import BundleNotFound, GitRepository, UnsafePath
from repositories._git_blobs import BlobReadError, blob_sizes, read_blobs
from tests.support.repositories import GitRemote


def _market(remote: GitRemote, count: int) -> None:
    for index in range(count):
        remote.skill(f"skills/s{index}")
        remote.write(f"skills/s{index}/scripts/run.sh", f"#!/bin/sh\necho {index}\n", 0o755)
        remote.write(f"skills/s{index}/references/big.md", f"line {index}\n" * 20_000)


async def test_many_skills_are_read_in_one_batch_with_their_exact_bytes(remote: GitRemote, cache_dir: Path) -> None:
    _market(remote, 12)
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        assert repo.batch_reads
        await repo.snapshot()
        asks = [(f"s{i}", ["SKILL.md", "scripts/run.sh", "references/big.md"]) for i in range(12)]
        answers = await repo.read_files_batch([*asks, ("nope", ["SKILL.md"])])
    for index, answer in enumerate(answers[:12]):
        assert isinstance(answer, dict)
        assert answer["scripts/run.sh"] == f"#!/bin/sh\necho {index}\n".encode()
        assert answer["references/big.md"] == f"line {index}\n".encode() * 20_000
        assert answer["SKILL.md"] == (remote.work / f"skills/s{index}/SKILL.md").read_bytes()
    assert isinstance(answers[12], BundleNotFound)


async def test_files_at_the_same_paths_in_many_skills_all_come_from_the_stream(
    remote: GitRemote, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _market(remote, 6)
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        await repo.snapshot()
        walked: list[str] = []
        lookup = repo._lookup
        monkeypatch.setattr(
            repo, "_lookup", lambda tree, path, commit: walked.append(path) or lookup(tree, path, commit)
        )
        answers = await repo.read_files_batch([(f"s{i}", ["SKILL.md", "scripts/run.sh"]) for i in range(6)])
    assert [a["scripts/run.sh"] for a in answers if isinstance(a, dict)] == [
        f"#!/bin/sh\necho {i}\n".encode() for i in range(6)
    ]
    assert walked == []  # each skill's blobs by the ids its listing found, no tree walked per path


async def test_paths_the_listing_did_not_name_are_refused_as_before(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    os.symlink("/etc/passwd", remote.work / "skills/alpha/link")
    (remote.work / "skills/alpha/folder").mkdir()
    remote.write("skills/alpha/folder/x.txt", "x\n")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        await repo.snapshot()
        with pytest.raises(UnsafePath):
            await repo.read_file("alpha", "link")
        with pytest.raises(BundleNotFound):
            await repo.read_file("alpha", "folder")
        with pytest.raises(BundleNotFound):
            await repo.read_file("alpha", "missing.txt")
        answers = await repo.read_files_batch([("alpha", ["folder/x.txt"]), ("alpha", ["link"])])
    assert answers[0] == {"folder/x.txt": b"x\n"}
    assert isinstance(answers[1], UnsafePath)


async def test_reads_after_a_push_serve_the_new_commit(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    remote.write("skills/alpha/notes.md", "old\n")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        assert await repo.read_file("alpha", "notes.md") == b"old\n"
        remote.write("skills/alpha/notes.md", "new\n")
        remote.commit()
        await repo.snapshot()
        assert await repo.read_file("alpha", "notes.md") == b"new\n"


def test_the_stream_leaves_out_missing_objects_and_non_blobs(remote: GitRemote) -> None:
    remote.write("a.txt", "a\n")
    remote.commit()
    blob = remote.git("rev-parse", "HEAD:a.txt")
    tree = remote.git("rev-parse", "HEAD^{tree}")
    found = read_blobs(remote.bare, [blob, "0" * 40, tree, blob], env=os.environ, timeout=30)
    assert found == {blob: b"a\n"}
    assert blob_sizes(remote.bare, tree, env=os.environ, timeout=30) == {blob: 2}


def test_a_broken_clone_is_a_blob_read_error(tmp_path: Path) -> None:
    with pytest.raises(BlobReadError):
        read_blobs(tmp_path / "no-such-clone", ["0" * 40], env=os.environ, timeout=30)
    with pytest.raises(BlobReadError):
        blob_sizes(tmp_path / "no-such-clone", "0" * 40, env=os.environ, timeout=30)

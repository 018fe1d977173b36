"""GitRepository against real repositories: a bare remote in tmp_path reached by file:// URL."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from repositories import GitRepository, RepositoryUnavailable, UnsafePath
from tests.support.cli import python_command
from tests.support.io import IORecorder
from tests.support.repositories import GitRemote


async def test_clone_serves_skills_with_modes_from_the_tree(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    remote.write("skills/alpha/scripts/run.sh", "#!/bin/sh\necho hi\n", 0o755)
    remote.write("skills/alpha/.env", "SECRET=1\n")
    remote.write("README.md", "not a skill\n")
    commit = remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        snap = await repo.snapshot()
        assert snap.version == commit
        assert [b.folder for b in snap.bundles] == ["alpha"]
        (bundle,) = snap.bundles
        assert bundle.skill_md.startswith(b"---\nname: alpha")
        assert [(f.path, f.mode) for f in bundle.files] == [(".env", 0o644), ("scripts/run.sh", 0o755)]
        assert bundle.location == f"{remote.url}@{commit}:skills/alpha"
        assert await repo.read_file("alpha", "scripts/run.sh") == b"#!/bin/sh\necho hi\n"
    assert repo.source == "git-git-remote"


async def test_new_commit_is_picked_up_on_the_next_read(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        first = await repo.snapshot()
        remote.skill("skills/beta")
        second_commit = remote.commit()
        second = await repo.snapshot()
    assert [b.folder for b in first.bundles] == ["alpha"]
    assert second.version == second_commit
    assert [b.folder for b in second.bundles] == ["alpha", "beta"]
    assert first.bundles[0].digest == second.bundles[0].digest


async def test_unchanged_remote_costs_one_ls_remote_and_no_fetch(
    remote: GitRemote, cache_dir: Path, subprocesses: IORecorder
) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        first = await repo.snapshot()
        with subprocesses as calls:
            second = await repo.snapshot()
    assert second is first
    assert len(calls) == 1
    assert "ls-remote" in calls[0]


async def test_check_interval_skips_the_remote_check(
    remote: GitRemote, cache_dir: Path, subprocesses: IORecorder
) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir, check_interval=3600) as repo:
        await repo.snapshot()
        remote.skill("skills/beta")
        remote.commit()
        with subprocesses as calls:
            snap = await repo.snapshot()
        assert calls == []
        assert [b.folder for b in snap.bundles] == ["alpha"]
        await repo.refresh()
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["alpha", "beta"]


async def test_force_push_is_followed(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    remote.commit("one")
    remote.skill("skills/beta")
    remote.commit("two")
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        assert len((await repo.snapshot()).bundles) == 2
        remote.git("reset", "--quiet", "--hard", "HEAD~1")
        remote.skill("skills/gamma")
        rewritten = remote.commit("rewritten", force=True)
        snap = await repo.snapshot()
    assert snap.version == rewritten
    assert [b.folder for b in snap.bundles] == ["alpha", "gamma"]


async def test_branch_and_subdir(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/on-main")
    remote.commit()
    remote.git("checkout", "--quiet", "-b", "team")
    remote.skill("team/skills-here/on-team")
    remote.skill("skills/ignored")
    remote.commit(branch="team")
    async with GitRepository(remote.url, branch="team", subdir="team/skills-here", cache_dir=cache_dir) as repo:
        snap = await repo.snapshot()
    assert [b.folder for b in snap.bundles] == ["on-team"]
    assert repo.source == "git-git-remote-team"


async def test_root_is_used_without_a_skills_folder(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("alpha")
    remote.skill("group/beta")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["alpha", "beta"]


async def test_symlinks_are_reported_and_never_followed(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    (remote.work / "skills/alpha/passwd").symlink_to("/etc/passwd")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        snap = await repo.snapshot()
        assert snap.bundles[0].files == ()
        assert snap.problems == ("symlink skipped: alpha/passwd",)
        with pytest.raises(UnsafePath):
            await repo.read_file("alpha", "passwd")


async def test_deleted_remote_keeps_serving_the_last_good_commit(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    commit = remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir) as repo:
        await repo.snapshot()
        shutil.rmtree(remote.bare)
        snap = await repo.snapshot()
        assert snap.version == commit
        assert [b.folder for b in snap.bundles] == ["alpha"]
        assert isinstance(snap.error, RepositoryUnavailable)
        assert await repo.read_file("alpha", "SKILL.md")
    # A new process with the same cache serves the cached commit while the remote is gone.
    async with GitRepository(remote.url, cache_dir=cache_dir) as again:
        snap = await again.snapshot()
        assert snap.version == commit and snap.error is not None


async def test_unreachable_remote_without_cache_is_unavailable(tmp_path: Path, cache_dir: Path) -> None:
    async with GitRepository((tmp_path / "missing.git").as_uri(), cache_dir=cache_dir) as repo:
        with pytest.raises(RepositoryUnavailable):
            await repo.snapshot()


async def test_auto_sync_off_waits_for_sync(remote: GitRemote, cache_dir: Path, subprocesses: IORecorder) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir, auto_sync=False) as repo:
        with subprocesses as calls:
            with pytest.raises(RepositoryUnavailable, match="sync"):
                await repo.snapshot()
        assert calls == []
        await repo.sync()
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["alpha"]
        remote.skill("skills/beta")
        remote.commit()
        with subprocesses as calls:
            assert len((await repo.snapshot()).bundles) == 1
        assert calls == []
        await repo.sync()
        assert len((await repo.snapshot()).bundles) == 2


async def test_background_refresh_serves_current_commit_while_checking(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    first_commit = remote.commit()
    async with GitRepository(remote.url, cache_dir=cache_dir, background_refresh=True) as repo:
        assert (await repo.snapshot()).version == first_commit
        remote.skill("skills/beta")
        second_commit = remote.commit()
        assert (await repo.snapshot()).version == first_commit  # the check starts in the background
        assert repo._pending is not None
        repo._pending.result(timeout=30)
        assert (await repo.snapshot()).version == second_commit


async def test_two_processes_share_one_cached_clone(remote: GitRemote, cache_dir: Path) -> None:
    remote.skill("skills/alpha")
    commit = remote.commit()
    script = textwrap.dedent(
        f"""
        import anyio
        from repositories import GitRepository
        async def main():
            async with GitRepository({remote.url!r}, cache_dir={str(cache_dir)!r}) as repo:
                snap = await repo.snapshot()
                print(snap.version, ",".join(b.folder for b in snap.bundles))
        anyio.run(main)
        """
    )
    driver = cache_dir.parent / "clone_once.py"
    driver.write_text(script)
    procs = [subprocess.Popen(python_command(driver), stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs == [f"{commit} alpha"] * 2
    assert [p.name for p in cache_dir.iterdir() if not p.name.endswith(".lock")] == [
        GitRepository(remote.url, cache_dir=cache_dir).clone_path.name
    ]

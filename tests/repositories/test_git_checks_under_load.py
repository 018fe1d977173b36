"""Git markets under load: checks are single-flight (concurrent turns share one ``ls-remote``
per market), run side by side across markets, and with ``check_budget`` a turn serves the last
known commit instead of waiting for a slow check, picking the new commit up on a later turn."""

from __future__ import annotations

import fcntl
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import GitRepository, InvalidRepositoryConfig, open_repository
from tests.support.io import IORecorder
from tests.support.polling import eventually
from tests.support.repositories import GitRemote

MARKETS = 3
TURNS = 12


def ls_remotes(calls: list[list[str]]) -> dict[str, int]:
    """``ls-remote`` runs per remote URL."""
    counts: dict[str, int] = {}
    for argv in calls:
        if "ls-remote" in argv:
            counts[argv[-2]] = counts.get(argv[-2], 0) + 1
    return counts


def remotes(tmp_path: Path) -> list[GitRemote]:
    made = []
    for index in range(MARKETS):
        remote = GitRemote(tmp_path / f"git{index}")
        remote.skill(f"skills/tool-{index}")
        remote.commit()
        made.append(remote)
    return made


async def test_concurrent_turns_share_one_check_per_market(tmp_path: Path, subprocesses: IORecorder) -> None:
    markets = remotes(tmp_path)
    repos = [GitRepository(r.url, cache_dir=tmp_path / "cache") for r in markets]
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=repos, watch=False) as pipeline,
    ):
        await pipeline.prepare(RuntimeContext(user_id="warm"))
        with subprocesses as calls:
            async with anyio.create_task_group() as group:
                for turn in range(TURNS):
                    group.start_soon(pipeline.prepare, RuntimeContext(user_id=f"user{turn}"))
        assert ls_remotes(calls) == {r.url: 1 for r in markets}
        assert [repo.checks for repo in repos] == [2] * MARKETS
        with subprocesses as calls:  # a later turn checks again: freshness is per turn
            await pipeline.prepare(RuntimeContext(user_id="later"))
        assert ls_remotes(calls) == {r.url: 1 for r in markets}


async def test_concurrent_snapshots_of_one_repository_share_the_check(tmp_path: Path, subprocesses: IORecorder) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("skills/alpha")
    remote.commit()
    async with GitRepository(remote.url, cache_dir=tmp_path / "cache") as repo:
        await repo.snapshot()
        with subprocesses as calls:
            async with anyio.create_task_group() as group:
                for _ in range(TURNS):
                    group.start_soon(repo.version)
        assert ls_remotes(calls) == {remote.url: 1}


async def test_a_turn_serves_the_last_commit_within_the_budget_and_the_next_sees_the_new_one(
    tmp_path: Path,
) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("skills/alpha")
    first = remote.commit()
    async with GitRepository(remote.url, cache_dir=tmp_path / "cache", check_budget=0.0) as repo:
        assert await repo.version() == first  # the first check is always waited for
        remote.skill("skills/beta")
        second = remote.commit()
        with open(repo._lock_path, "a") as held:  # the fetch waits for the shared clone's lock
            fcntl.flock(held, fcntl.LOCK_EX)
            assert await repo.version() == first  # the check runs on in the background
            assert await repo.version() == first
        assert await eventually(repo.version, lambda version: version == second) == second
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["alpha", "beta"]


async def test_check_budget_from_a_url_and_its_bounds(tmp_path: Path) -> None:
    repo = open_repository(f"git+file://{tmp_path}/r.git#check_budget=0.005&cache_dir={tmp_path}/c")
    assert isinstance(repo, GitRepository) and repo.check_budget == 0.005
    with pytest.raises(InvalidRepositoryConfig, match="check_budget"):
        GitRepository("file:///x.git", check_budget=-1)

"""Warm turns with git markets: each market asks its remote at most every
``market_check_interval`` seconds, a push shows within that interval or at once when asked
(``refresh_market``, ``harness market refresh``); with watchers, a push to a local remote or a
commit another process fetched into the shared clone is checked on the next turn."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.cli import main
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import GitRepository, Snapshot
from tests.support.repositories import GitRemote

ALICE = RuntimeContext(user_id="alice")


@pytest.fixture
def remote(tmp_path: Path) -> GitRemote:
    remote = GitRemote(tmp_path / "git")
    remote.skill("skills/alpha")
    remote.commit()
    return remote


async def _names(pipeline: SkillPipeline) -> set[str]:
    return {skill.skill.name for skill in (await pipeline.prepare(ALICE, stage=False)).skills.values()}


class _CountedGit(GitRepository):
    """A git market that counts the pipeline's calls for its snapshot."""

    snapshots = 0

    async def snapshot(self) -> Snapshot:
        self.snapshots += 1
        return await super().snapshot()


async def test_between_checks_a_turn_asks_neither_the_remote_nor_the_market(remote: GitRemote, tmp_path: Path) -> None:
    repo = _CountedGit(remote.url, cache_dir=tmp_path / "cache")
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False, market_check_interval=3600) as pipeline,
    ):
        assert await _names(pipeline) == {"alpha"}
        checks, asked = repo.checks, repo.snapshots
        remote.skill("skills/beta")
        remote.commit()
        for _ in range(5):
            assert await _names(pipeline) == {"alpha"}  # not checked yet: the interval holds
        assert repo.checks == checks
        assert repo.snapshots == asked  # the layer knew the market would answer from its cache
        repo.hint_changed()  # what a watcher of the remote's refs does: the next turn asks at once
        assert await _names(pipeline) == {"alpha", "beta"}
        assert (repo.checks, repo.snapshots) == (checks + 1, asked + 1)


async def test_a_push_shows_once_the_interval_has_passed(remote: GitRemote, tmp_path: Path) -> None:
    repo = GitRepository(remote.url, cache_dir=tmp_path / "cache")
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False, market_check_interval=0.3) as pipeline,
    ):
        assert await _names(pipeline) == {"alpha"}
        remote.skill("skills/beta")
        remote.commit()
        time.sleep(0.35)
        assert await _names(pipeline) == {"alpha", "beta"}


async def test_refresh_market_shows_a_push_at_once(remote: GitRemote, tmp_path: Path) -> None:
    repo = GitRepository(remote.url, cache_dir=tmp_path / "cache", check_budget=0)
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False, market_check_interval=3600) as pipeline,
    ):
        assert await _names(pipeline) == {"alpha"}
        remote.skill("skills/beta")
        pushed = remote.commit()
        assert await pipeline.refresh_market(repo.source) == pushed  # waits, whatever the budget
        assert await _names(pipeline) == {"alpha", "beta"}
        with pytest.raises(KeyError, match="git-git-remote"):
            await pipeline.refresh_market("git-nobody-nothing")


async def test_a_market_keeps_its_own_interval(remote: GitRemote, tmp_path: Path) -> None:
    own = GitRepository(remote.url, cache_dir=tmp_path / "cache", check_interval=0)
    other = GitRepository(remote.url, branch="main", cache_dir=tmp_path / "cache")
    async with LocalFilesystem(tmp_path / "ws") as fs:
        SkillPipeline(filesystem=fs, repositories=[own, other], watch=False, market_check_interval=60)
    assert (own.check_interval, other.check_interval) == (0, 60)


async def _shows(pipeline: SkillPipeline, name: str) -> bool:
    """Whether ``name`` shows within a few seconds (a watcher reports after its debounce)."""
    with anyio.move_on_after(10):
        while name not in await _names(pipeline):
            await anyio.sleep(0.05)
        return True
    return False


async def test_a_push_to_a_local_remote_shows_on_the_next_turn_with_watchers(remote: GitRemote, tmp_path: Path) -> None:
    repo = GitRepository(remote.url, cache_dir=tmp_path / "cache")
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], market_check_interval=3600) as pipeline,
    ):
        assert await _names(pipeline) == {"alpha"}
        remote.skill("skills/beta")
        remote.commit()
        assert await _shows(pipeline, "beta")


async def test_a_commit_another_process_fetched_is_served_on_the_next_turn(remote: GitRemote, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # A remote named by its path, which gives no hint of its own: only the shared clone tells.
    repo = GitRepository(str(remote.bare), cache_dir=cache)
    hints = repo.change_hints
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], market_check_interval=3600) as pipeline,
    ):
        assert hints == (repo.clone_path / "refs" / "harness",)
        assert await _names(pipeline) == {"alpha"}
        remote.skill("skills/beta")
        pushed = remote.commit()
        async with GitRepository(str(remote.bare), cache_dir=cache) as elsewhere:  # e.g. the CLI
            assert await elsewhere.sync() == pushed
        assert await _shows(pipeline, "beta")


async def test_the_market_refresh_command_fetches_for_running_processes(
    remote: GitRemote, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    url = f"git+{remote.url}#cache_dir={cache}"
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\nrepositories:\n  - {url}\nmarket_check_interval: 3600\n")
    repo = GitRepository(remote.url, cache_dir=cache)
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], market_check_interval=3600) as pipeline,
    ):
        assert await _names(pipeline) == {"alpha"}
        remote.skill("skills/beta")
        pushed = remote.commit()
        command = ["market", "refresh", repo.source, "--config", str(config), "--json"]
        assert await anyio.to_thread.run_sync(main, command) == 0  # the CLI runs its own loop
        assert json.loads(capsys.readouterr().out) == {
            "market": repo.source,
            "version": pushed,
            "skills": 2,
            "error": None,
        }
        assert await _shows(pipeline, "beta")
    unknown = ["market", "refresh", "git-nobody-nothing", "--config", str(config)]
    assert await anyio.to_thread.run_sync(main, unknown) == 2
    assert "no market 'git-nobody-nothing'" in capsys.readouterr().err

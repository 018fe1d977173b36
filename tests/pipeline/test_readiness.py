"""A pipeline says from memory whether its shared skill sources have loaded (what a readiness
probe answers), in counts that name no source."""

from __future__ import annotations

import shutil
from pathlib import Path

from filesystems import LocalFilesystem
from harness import RuntimeContext, SkillPipeline
from harness.pipeline.status import Readiness
from repositories import GitRepository
from tests.support.git import GitRemote
from tests.support.io import FILE_EVENTS, IORecorder
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")


def _pipeline(tmp_path: Path, url: str) -> SkillPipeline:
    fs = LocalFilesystem(tmp_path / "ws", shell=False)
    market = GitRepository(url, cache_dir=tmp_path / "gitcache")
    return SkillPipeline(filesystem=fs, repositories=[market], watch=False)


async def test_it_is_not_ready_until_the_shared_sources_have_loaded(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "market")
    make_skill(remote.work / "skills", "deploy")
    remote.commit("skills")
    async with _pipeline(tmp_path, remote.url) as pipeline:
        before = pipeline.readiness()
        after = await pipeline.warm()
        with IORecorder(FILE_EVENTS) as seen:
            asked = pipeline.readiness()
    assert not before.ready and before.reason == "the shared skill sources are still loading"
    assert after.ready and after.reason == "" and after.unanswered == after.failing == 0
    assert asked == after and seen == []  # a probe reads nothing


async def test_a_market_that_never_answered_keeps_it_unready_until_it_does(tmp_path: Path) -> None:
    late = tmp_path / "late"
    async with _pipeline(tmp_path, (late / "remote.git").as_uri()) as pipeline:
        down = await pipeline.warm()
        remote = GitRemote(late)
        make_skill(remote.work / "skills", "deploy")
        remote.commit("skills")
        up = await pipeline.warm()
    assert not down.ready and (down.unanswered, down.failing) == (1, 1)
    assert down.reason == f"1 of {down.sources} shared skill sources have not answered yet"
    assert "late" not in str(down.as_dict()) and "git" not in str(down.as_dict())
    assert up.ready and (up.unanswered, up.failing) == (0, 0)


async def test_a_market_that_fails_after_it_answered_leaves_it_ready_on_its_last_good_skills(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "market")
    make_skill(remote.work / "skills", "deploy")
    remote.commit("skills")
    async with _pipeline(tmp_path, remote.url) as pipeline:
        await pipeline.warm()
        shutil.rmtree(remote.bare)
        plan = await pipeline.prepare(ALICE)
        readiness = pipeline.readiness()
    assert "deploy" in plan.catalog
    assert readiness.ready and (readiness.unanswered, readiness.failing) == (0, 1)


def test_every_source_failing_at_once_is_not_ready() -> None:
    down = Readiness(loaded=True, sources=4, unanswered=0, failing=4)
    assert not down.ready and down.reason == "all 4 shared skill sources are failing"
    assert down.as_dict() == {
        "status": "not ready",
        "reason": "all 4 shared skill sources are failing",
        "loaded": True,
        "sources": 4,
        "unanswered": 0,
        "failing": 4,
    }

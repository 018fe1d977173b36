"""The curator running itself: the harness's curator task, its replica throttle and clean stop,
the umbrella-merge review, and the ``curator:`` key of harness.yaml."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness import Harness
from harness.agent import LearningOptions, PipelineOptions
from harness.config import load_config
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.learning import CuratorConfig, CuratorTask, SelfLearning
from harness.learning._layout import read_folder
from harness.models import DemoModel, ScriptedModel
from tests.support.clock import ManualClock
from tests.support.polling import eventually

SCHEDULE = CuratorConfig(interval=timedelta(hours=1), stale_after=timedelta(days=10), archive_after=timedelta(days=30))


async def _agent_skills(root: Path, clock: ManualClock, user: str, skills: dict[str, str]) -> None:
    """Live agent-created skills ``name -> description`` in ``user``'s area."""
    async with LocalFilesystem(root) as fs:
        shop = SelfLearning(fs, auto_promote=True, clock=clock).workshop(RuntimeContext(user_id=user))
        for name, description in skills.items():
            await shop.propose_skill(name, description, f"How to {name}.")


def _curator_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "harness-curator"]


async def test_the_harness_curates_while_entered_and_archives_a_stale_skill(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", {"tidy": "Tidy things."})
    clock.advance(days=40)
    fs = LocalFilesystem(root)
    agent = Harness(
        filesystem=fs,
        learning=LearningOptions(loop=SelfLearning(fs, clock=clock), curator=SCHEDULE),
        pipeline=PipelineOptions(watch=False),
    )
    async with agent:
        assert len(_curator_tasks()) == 1

        async def archived() -> list[str]:
            return (
                [e.name for e in await fs.list("alice/skills/.archive")]
                if await fs.exists("alice/skills/.archive")
                else []
            )

        assert await eventually(archived, what="the scheduled curator archiving tidy")
        assert not await fs.exists("alice/skills/tidy")
    assert _curator_tasks() == []
    async with LocalFilesystem(root) as again:
        shelf = await SelfLearning(again).reports.list("curator")
        assert len(shelf) == 1


async def test_exit_stops_the_task_without_waiting_for_the_next_wake_up(tmp_path: Path) -> None:
    fs = LocalFilesystem(tmp_path / "ws")
    schedule = CuratorConfig(interval=timedelta(days=1), check_every=timedelta(days=1))
    async with Harness(
        filesystem=fs, learning=LearningOptions(loop=True, curator=schedule), pipeline=PipelineOptions(watch=False)
    ):
        assert len(_curator_tasks()) == 1
    assert _curator_tasks() == []


async def test_without_learning_the_curator_still_runs_on_the_workspace(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", {"tidy": "Tidy things."})
    async with Harness(
        filesystem=LocalFilesystem(root),
        learning=LearningOptions(curator=SCHEDULE),
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        assert agent.learning is None
        shelf = SelfLearning(agent.filesystem).reports
        assert await eventually(lambda: shelf.list("curator"), what="a curator report")


async def test_replicas_share_one_run_per_interval(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", {"tidy": "Tidy things."})
    async with LocalFilesystem(root) as fs:
        replicas = [CuratorTask(SelfLearning(fs, clock=clock).curator, SCHEDULE) for _ in range(3)]
        for replica in replicas:
            await replica.__aenter__()
        try:

            async def attempts() -> int:
                return min(len(r.reports) for r in replicas)

            await eventually(attempts, what="every replica trying once")
        finally:
            for replica in replicas:
                await replica.aclose()
        ran = [report for r in replicas for report in r.reports if report.ran]
        assert len(ran) == 1
        assert all(
            "throttled" in rep.reason or "another replica" in rep.reason
            for r in replicas
            for rep in r.reports
            if not rep.ran
        )
    assert _curator_tasks() == []


async def test_a_failing_run_does_not_end_the_schedule(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fs = LocalFilesystem(tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "skills").write_text("a file where the skills folder should be")
    schedule = CuratorConfig(interval=timedelta(0), check_every=timedelta(milliseconds=10))
    async with fs, CuratorTask(SelfLearning(fs).curator, schedule) as task:

        async def failures() -> int:
            return sum("scheduled curator run failed" in r.message for r in caplog.records)

        await eventually(failures, lambda n: n >= 2, what="two failed runs, the task still going")
        assert task.running
    assert not task.running


SKILLS = {
    "deploy-web": "Deploy the web service to production with docker compose and a health check.",
    "deploy-api": "Deploy the api service to production with docker compose and a health check.",
    "release-notes": "Write release notes from the merged pull requests.",
    "changelog": "Write the changelog from merged pull requests for a release.",
    "tidy": "Sort the downloads folder by file type.",
}


async def test_the_umbrella_review_with_the_demo_model_groups_by_description(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", SKILLS)
    async with LocalFilesystem(root) as fs:
        before = {name: await read_folder(fs, f"alice/skills/{name}") for name in SKILLS}
        loop = SelfLearning(fs, clock=clock)
        first = await loop.umbrella_review(DemoModel()).review()
        clock.advance(minutes=1)
        second = await loop.umbrella_review(DemoModel()).review()
        assert [p.members for p in first.proposals] == [("changelog", "release-notes"), ("deploy-api", "deploy-web")]
        assert [p.as_dict() for p in first.proposals] == [p.as_dict() for p in second.proposals]
        assert {p.area for p in first.proposals} == {"users/alice"}
        assert first.proposals[1].umbrella.endswith("-suite") and "deploy" in first.proposals[1].description
        assert {name: await read_folder(fs, f"alice/skills/{name}") for name in SKILLS} == before
        stored = await loop.reports.list("umbrella")
        assert [e.path for e in stored] == [first.path, second.path]
        data = await loop.reports.read(stored[-1])
        assert data["dry_run"] is True and data["model"] == "demo"


async def test_the_umbrella_review_uses_a_real_models_grouping_and_checks_it(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", SKILLS)
    answer = {
        "groups": [
            {
                "umbrella": "shipping",
                "description": "Ship a release.",
                "members": ["deploy-web", "release-notes"],
                "reason": "both ship",
            }
        ]
    }
    async with LocalFilesystem(root) as fs:
        loop = SelfLearning(fs, clock=clock)
        report = await loop.umbrella_review(ScriptedModel([json.dumps(answer)])).review()
        assert [(p.umbrella, p.members) for p in report.proposals] == [("shipping", ("deploy-web", "release-notes"))]
        bogus = {"groups": [{"umbrella": "x", "members": ["deploy-web", "no-such-skill"]}]}
        fallback = await loop.umbrella_review(ScriptedModel([json.dumps(bogus)])).review()
        assert [p.members for p in fallback.proposals] == [("changelog", "release-notes"), ("deploy-api", "deploy-web")]
        assert any("not usable" in note for note in fallback.notes)


async def test_the_scheduled_curator_writes_the_umbrella_report_after_a_run(tmp_path: Path) -> None:
    root, clock = tmp_path / "ws", ManualClock()
    await _agent_skills(root, clock, "alice", SKILLS)
    fs = LocalFilesystem(root)
    schedule = CuratorConfig(interval=timedelta(hours=1), umbrella_review=True)
    async with Harness(
        filesystem=fs,
        learning=LearningOptions(loop=SelfLearning(fs, clock=clock), curator=schedule),
        pipeline=PipelineOptions(watch=False),
    ):
        shelf = SelfLearning(fs).reports
        entries = await eventually(lambda: shelf.list("umbrella"), what="an umbrella report")
        data = await shelf.read(entries[0])
        assert [p["members"] for p in data["proposals"]] == [
            ["changelog", "release-notes"],
            ["deploy-api", "deploy-web"],
        ]


def test_harness_yaml_curator_keys(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(
        "curator:\n  interval_hours: 6\n  stale_after_days: 14\n  archive_after_days: 60\n"
        "  check_every_minutes: 5\n  umbrella_review: true\n"
    )
    assert load_config(config).curator == CuratorConfig(
        interval=timedelta(hours=6),
        stale_after=timedelta(days=14),
        archive_after=timedelta(days=60),
        check_every=timedelta(minutes=5),
        umbrella_review=True,
    )
    config.write_text("curator: true\n")
    assert load_config(config).curator == CuratorConfig()
    config.write_text("curator: false\n")
    assert load_config(config).curator is None


@pytest.mark.parametrize(
    "text",
    [
        "curator: {interval: 6}\n",
        "curator: {stale_after_days: 90, archive_after_days: 30}\n",
        "curator: {interval_hours: soon}\n",
        "curator: 3\n",
    ],
)
def test_bad_curator_keys_are_refused(tmp_path: Path, text: str) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match="curator"):
        load_config(config)

"""The curator's transitions with an injected clock, its throttle and its report."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import AuditLog, Curator, CuratorPolicy, Promoter, SidecarUsage, SkillUsage, SkillWorkshop
from tests.support.clock import ManualClock
from tests.support.learning import user_workshop

POLICY = CuratorPolicy(stale_after_days=10, archive_after_days=30, interval_hours=24)


def _curator(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, **options: Any
) -> Curator:
    return Curator(workspace, usage=usage, audit=audit, clock=clock, policy=POLICY, **options)


def _known(usage: SkillUsage | None) -> SkillUsage:
    assert usage is not None
    return usage


async def _live_agent_skill(
    workspace: LocalFilesystem,
    usage: SidecarUsage,
    audit: AuditLog,
    clock: ManualClock,
    context: RuntimeContext,
    name: str,
) -> None:
    shop = user_workshop(workspace, context, usage=usage, audit=audit, clock=clock, auto_promote=True)
    await shop.propose_skill(name, "d", "b")


async def test_unused_skill_goes_stale_then_archived(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    await _live_agent_skill(workspace, usage, audit, clock, alice, "tidy")
    curator = _curator(workspace, usage, audit, clock)
    clock.advance(days=9)
    assert (await curator.run_once()).transitions == ()

    clock.advance(days=2)
    report = await curator.run_once()
    assert [(t.skill_id, t.from_state, t.to_state) for t in report.transitions] == [
        ("tidy_workspace-namespaced", "active", "stale")
    ]
    assert await workspace.exists("alice/skills/tidy/SKILL.md")

    clock.advance(days=20)
    changes: list[str | None] = []
    report = await _curator(workspace, usage, audit, clock, on_change=changes.append).run_once()
    [archived] = report.transitions
    assert (archived.from_state, archived.to_state) == ("stale", "archived")
    assert archived.archived_to is not None and archived.archived_to.startswith("skills/.archive/tidy-")
    assert not await workspace.exists("alice/skills/tidy")
    assert await workspace.exists(f"alice/{archived.archived_to}/SKILL.md")
    record = await usage.for_scope("alice").get("tidy_workspace-namespaced")
    assert record is not None and record.state == "archived"
    assert changes == ["alice"]
    ops = [e.op for e in await audit.query(clock.now.date(), lambda e: e.actor == "curator")]
    assert ops == ["curator.archive"]


async def test_stale_skill_used_again_is_reactivated(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    await _live_agent_skill(workspace, usage, audit, clock, alice, "tidy")
    clock.advance(days=12)
    await _curator(workspace, usage, audit, clock).run_once()
    store = usage.for_scope("alice")
    record = await store.get("tidy_workspace-namespaced")
    assert record is not None and record.state == "stale"
    clock.advance(days=1)
    record = await store.record_use("tidy_workspace-namespaced", clock.now)
    assert record.state == "active" and record.uses == 1


async def test_curator_reactivates_a_stale_record_with_recent_activity(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    await _live_agent_skill(workspace, usage, audit, clock, alice, "tidy")
    store = usage.for_scope("alice")
    await store.update("tidy_workspace-namespaced", lambda u: dataclasses.replace(_known(u), state="stale"))
    report = await _curator(workspace, usage, audit, clock).run_once()
    assert [(t.from_state, t.to_state) for t in report.transitions] == [("stale", "active")]


async def test_pinned_drafts_and_human_skills_are_never_touched(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    await _live_agent_skill(workspace, usage, audit, clock, alice, "pinned-one")
    await usage.for_scope("alice").update(
        "pinned-one_workspace-namespaced", lambda u: dataclasses.replace(_known(u), pinned=True)
    )
    shop = user_workshop(workspace, alice, usage=usage, audit=audit, clock=clock)
    await shop.propose_skill("draft-one", "d", "b")
    await workspace.write_text("skills/human/SKILL.md", "---\nname: human\ndescription: d\n---\n")
    await usage.for_scope(None).record_view("human_workspace", clock.now)
    clock.advance(days=365)
    report = await _curator(workspace, usage, audit, clock).run_once()
    assert report.transitions == ()
    assert report.areas == ("workspace", "users/alice")
    assert await workspace.exists("alice/skills/pinned-one") and await workspace.exists(
        "alice/skills/_drafts/draft-one"
    )


async def test_shared_workspace_skills_are_curated_too(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    shop = SkillWorkshop(
        workspace, context=alice, scope=None, usage=usage.for_scope(None), audit=audit, clock=clock, auto_promote=True
    )
    await shop.propose_skill("team-skill", "d", "b")
    clock.advance(days=40)
    report = await _curator(workspace, usage, audit, clock).run_once()
    assert [(t.scope, t.to_state) for t in report.transitions] == [(None, "archived")]
    assert not await workspace.exists("skills/team-skill")


async def test_dry_run_changes_nothing(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    await _live_agent_skill(workspace, usage, audit, clock, alice, "tidy")
    clock.advance(days=40)
    report = await _curator(workspace, usage, audit, clock).run(dry_run=True)
    assert report.dry_run and [t.to_state for t in report.transitions] == ["archived"]
    assert await workspace.exists("alice/skills/tidy/SKILL.md")
    assert not await workspace.exists("skills/.curator/report.json")
    assert not await workspace.exists("skills/.curator/claim.json")


async def test_runs_are_throttled_across_replicas(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock
) -> None:
    replica_a = _curator(workspace, usage, audit, clock)
    replica_b = _curator(workspace, usage, audit, clock)
    assert (await replica_a.run()).ran
    clock.advance(hours=23)
    second = await replica_b.run()
    assert not second.ran and "throttled" in second.reason
    assert (await replica_b.run_once()).ran
    clock.advance(hours=2)
    assert (await replica_b.run()).ran
    report = json.loads(await workspace.read_text("skills/.curator/report.json"))
    assert report["ran"] and report["areas"] == ["workspace"]


async def test_concurrent_replicas_claim_a_run_once(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock
) -> None:
    results: list[bool] = []

    async def run() -> None:
        results.append((await _curator(workspace, usage, audit, clock).run()).ran)

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(run)
    assert sorted(results) == [False] * 4 + [True]


def test_policy_is_validated() -> None:
    with pytest.raises(ValueError):
        CuratorPolicy(stale_after_days=30, archive_after_days=10)


async def test_promoted_skill_counts_from_its_promotion(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock, alice: RuntimeContext
) -> None:
    shop = user_workshop(workspace, alice, usage=usage, audit=audit, clock=clock)
    await shop.propose_skill("late", "d", "b")
    clock.advance(days=25)
    await Promoter(workspace, usage=usage, audit=audit, clock=clock).promote_skill("late", "carol", context=alice)
    clock.advance(days=5)
    assert (await _curator(workspace, usage, audit, clock).run_once()).transitions == ()

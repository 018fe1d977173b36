"""Usage stores: real-id counting, scopes, compare-and-set under concurrency, a shared MySQL store."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import anyio
import pytest

from filesystems import LocalFilesystem, RemoteFilesystem
from filesystems.stores import MySQLKeyValueStore
from harness.context import RuntimeContext
from harness.learning import ScopedUsageRecorder, SharedUsage, SidecarUsage, SkillUsage, referenced_skills
from tests.support.clock import ManualClock
from tests.support.mysql import STORE_TABLES, drop_tables


async def test_views_and_uses_are_counted_under_the_real_skill_id(
    workspace: LocalFilesystem, usage: SidecarUsage, clock: ManualClock, alice: RuntimeContext
) -> None:
    recorder = ScopedUsageRecorder(usage, clock=clock)
    await recorder.record_view("notes_workspace-namespaced", alice)
    await recorder.record_view("notes_workspace-namespaced", alice)
    await recorder.record_use("notes_workspace-namespaced", alice)
    await recorder.record_view("notes_workspace", alice)
    await recorder.record_use("lint_git-acme-skills", alice)
    mine = await usage.for_scope("alice").all()
    assert list(mine) == ["notes_workspace-namespaced"]
    assert (mine["notes_workspace-namespaced"].views, mine["notes_workspace-namespaced"].uses) == (2, 1)
    assert mine["notes_workspace-namespaced"].last_used == clock.now
    shared = await usage.for_scope(None).all()
    assert (shared["notes_workspace"].views, shared["lint_git-acme-skills"].uses) == (1, 1)
    assert await workspace.exists("alice/skills/.usage.json") and await workspace.exists("skills/.usage.json")


async def test_other_users_counts_stay_apart(usage: SidecarUsage, clock: ManualClock, alice: RuntimeContext) -> None:
    recorder = ScopedUsageRecorder(usage, clock=clock)
    await recorder.record_view("notes_workspace-namespaced", alice)
    await recorder.record_view("notes_workspace-namespaced", RuntimeContext(user_id="bob"))
    for user in ("alice", "bob"):
        record = await usage.for_scope(user).get("notes_workspace-namespaced")
        assert record is not None and record.views == 1


async def test_concurrent_sidecar_updates_are_not_lost(usage: SidecarUsage, clock: ManualClock) -> None:
    store = usage.for_scope("alice")

    async def view(skill: str) -> None:
        await store.record_view(skill, clock.now)

    async with anyio.create_task_group() as group:
        for i in range(40):
            group.start_soon(view, f"s{i % 4}_workspace-namespaced")
    records = await store.all()
    assert {key: r.views for key, r in records.items()} == {f"s{i}_workspace-namespaced": 10 for i in range(4)}


async def test_records_round_trip_every_field(usage: SidecarUsage, clock: ManualClock) -> None:
    record = SkillUsage(
        skill_id="x_workspace",
        name="x",
        created_by="agent",
        state="stale",
        views=3,
        uses=2,
        patches=1,
        pinned=True,
        environments=("dev", "prod"),
        created_at=clock.now,
        last_viewed=clock.now,
        last_used=clock.now,
        last_patched=clock.now,
        state_changed_at=clock.now,
        promoted_at=clock.now,
        promoted_by="carol",
    )
    await usage.for_scope(None).update("x_workspace", lambda _: record)
    assert await usage.for_scope(None).get("x_workspace") == record


async def test_a_change_must_keep_the_skill_id(usage: SidecarUsage) -> None:
    with pytest.raises(ValueError):
        await usage.for_scope(None).update("x_workspace", lambda _: SkillUsage(skill_id="y_workspace"))
    with pytest.raises(ValueError):
        await usage.for_scope(None).update("../x", lambda _: SkillUsage(skill_id="../x"))


def test_referenced_skills_match_whole_files_roots() -> None:
    roots = {"a_workspace": "/ws/skills/a", "ab_workspace": "/ws/skills/ab", "c_git": "/ws/.skills-cache/git/c"}
    assert referenced_skills("python3 /ws/skills/a/scripts/x.py", roots) == ["a_workspace"]
    assert referenced_skills("ls '/ws/skills/ab'; cat /ws/.skills-cache/git/c/README", roots) == [
        "ab_workspace",
        "c_git",
    ]
    assert referenced_skills("ls /ws/skills/abc", roots) == []


@pytest.fixture
async def shared_stores(mysql_dsn: str) -> AsyncIterator[tuple[RemoteFilesystem, RemoteFilesystem]]:
    table = f"learn_kv_{secrets.token_hex(4)}"
    try:
        async with (
            RemoteFilesystem(MySQLKeyValueStore(mysql_dsn, table=table), agent_id="bot") as first,
            RemoteFilesystem(MySQLKeyValueStore(mysql_dsn, table=table), agent_id="bot") as second,
        ):
            yield first, second
    finally:
        await drop_tables(mysql_dsn, table, STORE_TABLES)


async def test_replicas_share_usage_through_a_mysql_store(
    shared_stores: tuple[RemoteFilesystem, RemoteFilesystem], clock: ManualClock, alice: RuntimeContext
) -> None:
    replicas = [ScopedUsageRecorder(SharedUsage(fs), clock=clock) for fs in shared_stores]

    async def use(replica: ScopedUsageRecorder) -> None:
        for _ in range(8):
            await replica.record_use("notes_workspace-namespaced", alice)

    async with anyio.create_task_group() as group:
        for replica in replicas:
            group.start_soon(use, replica)
            group.start_soon(use, replica)
    for fs in shared_stores:
        record = await SharedUsage(fs).for_scope("alice").get("notes_workspace-namespaced")
        assert record is not None and record.uses == 32
    assert await SharedUsage(shared_stores[0]).for_scope(None).all() == {}

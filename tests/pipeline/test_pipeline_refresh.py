"""When the pipeline looks again: frozen layers, watched folders, failing and slow markets,
and what a warm turn costs."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from filesystems import AbstractFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from repositories import GitRepository, MemoryRepository, MySQLRepository
from tests.support.io import IORecorder
from tests.support.pipeline import GitRemote, bundle, echo_script, open_filesystem, put_skill, write_skill
from tests.support.polling import eventually

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")


class StallingRepository(MemoryRepository):
    """A custom market whose change check hangs while ``stalled`` (a server that stopped answering)."""

    stalled = False

    async def _version(self) -> str:
        if self.stalled:
            await anyio.sleep_forever()
        return await super()._version()


def names(plan: TurnPlan) -> set[str]:
    return {s.skill.name for s in plan.skills.values()}


@pytest.mark.parametrize("mode", ["local", "remote"])
async def test_frozen_skills_still_read_each_users_own_layer(mode: str, tmp_path: Path) -> None:
    glob = tmp_path / "global"
    write_skill(glob, "greet")
    market = MemoryRepository([bundle("tool")], name="acme")
    async with open_filesystem(mode, tmp_path / "ws") as fs:
        await put_skill(fs, "notes")
        async with SkillPipeline(
            filesystem=fs, repositories=[market], global_skills_dir=glob, dynamic_skills=False
        ) as pipeline:
            assert names(await pipeline.prepare(ALICE)) == {"greet", "tool", "notes"}
            write_skill(glob, "wave")
            await market.save(bundle("lint"))
            await put_skill(fs, "todo")
            await put_skill(fs.scoped("alice"), "mine")
            await put_skill(fs.scoped("bob"), "bobs")
            await _poll(pipeline, ALICE, "Use for mine tasks.")  # a watched folder: after the debounce
            assert names(await pipeline.prepare(ALICE)) == {"greet", "tool", "notes", "mine"}
            assert names(await pipeline.prepare(BOB)) == {"greet", "tool", "notes", "bobs"}
            await pipeline.refresh()
            assert names(await pipeline.prepare(ALICE)) == {"greet", "wave", "tool", "lint", "notes", "todo", "mine"}


async def _poll(pipeline: SkillPipeline, context: RuntimeContext, wanted: str) -> None:
    """Wait until ``wanted`` shows in the catalog."""
    await eventually(lambda: pipeline.prepare(context), lambda plan: wanted in plan.catalog, what=f"{wanted!r} showing")


async def test_external_edits_show_after_the_watchers_debounce(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "notes", description="first words")
    write_skill(tmp_path / "alice" / "skills", "mine", description="alice first")
    glob = tmp_path / "global"
    write_skill(glob, "greet", description="hello once")
    async with (
        open_filesystem("local-shell", tmp_path) as fs,
        SkillPipeline(filesystem=fs, global_skills_dir=glob) as pipeline,
    ):
        assert "first words" in (await pipeline.prepare(ALICE)).catalog
        write_skill(tmp_path / "skills", "notes", description="second words")
        await _poll(pipeline, ALICE, "second words")
        write_skill(tmp_path / "alice" / "skills", "mine", description="alice again")
        await _poll(pipeline, ALICE, "alice again")
        write_skill(glob, "greet", description="hello twice")
        await _poll(pipeline, ALICE, "hello twice")
        shutil.rmtree(tmp_path / "skills" / "notes")
        await eventually(
            lambda: pipeline.prepare(ALICE),
            lambda plan: "notes_workspace" not in plan.skills,
            what="the deleted workspace skill going",
        )


async def test_a_warm_turn_opens_lists_and_writes_nothing(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "notes")
    write_skill(tmp_path / "alice" / "skills", "mine")
    glob = tmp_path / "global"
    write_skill(glob, "greet")
    market = MemoryRepository([bundle("tool")], name="acme")
    async with (
        open_filesystem("local-shell", tmp_path) as fs,
        SkillPipeline(filesystem=fs, repositories=[market], global_skills_dir=glob) as pipeline,
    ):
        with IORecorder() as cold_events:
            cold = await pipeline.prepare(ALICE)
        with IORecorder() as warm_events:
            warm = await pipeline.prepare(ALICE)
    assert any(event == "os.rename" for event, _ in cold_events)  # the hook does see staging
    assert warm_events == []
    assert warm.catalog == cold.catalog
    assert all(warm.skills[k].skill is v.skill for k, v in cold.skills.items())  # nothing re-parsed
    assert warm.staged is not None and warm.staged.written == 0


async def test_harness_writes_show_at_once_through_invalidate(tmp_path: Path) -> None:
    async with (
        open_filesystem("local", tmp_path) as fs,
        SkillPipeline(filesystem=fs) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        await put_skill(fs.scoped("alice"), "drafted", description="just written")
        pipeline.invalidate("alice")
        assert "just written" in (await pipeline.prepare(ALICE)).catalog
        await put_skill(fs, "shared", description="shared now")
        pipeline.invalidate()
        assert "shared now" in (await pipeline.prepare(ALICE)).catalog


async def test_a_market_whose_remote_vanished_keeps_its_last_good_skills(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("lint", script=echo_script("git-lint"))
    remote.commit()
    async with (
        open_filesystem("local-shell", tmp_path / "ws") as fs,
        GitRepository(remote.url, cache_dir=tmp_path / "gitcache") as git,
        SkillPipeline(filesystem=fs, repositories=[git]) as pipeline,
    ):
        good = await pipeline.prepare(ALICE)
        assert not [d for d in good.diagnostics if d.severity == "error"]
        shutil.rmtree(remote.bare)
        plan = await pipeline.prepare(ALICE)
        root = plan.skills[f"lint_{git.source}"].files_root
        run = await plan.filesystem.run(f"{root}/scripts/run.sh")
    problems = [d for d in plan.diagnostics if d.code == "market-unavailable"]
    assert len(problems) == 1 and git.source in problems[0].message and "last good" in problems[0].message
    assert run.stdout.strip() == "git-lint"


async def test_a_market_that_stops_answering_is_timed_out_and_keeps_its_skills(tmp_path: Path) -> None:
    slow = StallingRepository([bundle("tool")], name="slow")
    other = MemoryRepository([bundle("lint")], name="other")
    async with (
        open_filesystem("local-shell", tmp_path) as fs,
        SkillPipeline(filesystem=fs, repositories=[slow, other], market_timeout=60) as pipeline,
    ):
        await pipeline.prepare(ALICE)  # answered in full, however loaded the machine
        pipeline.market_timeout = 0.3
        slow.stalled = True
        await other.save(bundle("deploy"))
        start = time.monotonic()
        plan = await pipeline.prepare(ALICE)  # the stalled check never ends: only the timeout ends the wait
        elapsed = time.monotonic() - start
    assert elapsed >= 0.3
    assert names(plan) == {"tool", "lint", "deploy"}
    assert (tmp_path / ".skills-cache" / "slow" / "tool" / "SKILL.md").is_file()
    assert any("did not answer within 0.3s" in d.message for d in plan.diagnostics)


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A TCP port that accepts connections and never says a word (a hung database)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_a_hung_mysql_market_times_out_without_holding_up_the_turn(tmp_path: Path, silent_server: int) -> None:
    other = MemoryRepository([bundle("lint")], name="other")
    async with (
        MySQLRepository(f"mysql://root@127.0.0.1:{silent_server}/test", table="skills") as hung,
        open_filesystem("local", tmp_path) as fs,
        SkillPipeline(filesystem=fs, repositories=[hung, other], market_timeout=0.3) as pipeline,
    ):
        start = time.monotonic()
        plan = await pipeline.prepare(ALICE)
        elapsed = time.monotonic() - start
    assert elapsed < 3.0  # well before the 5 s connect timeout
    assert names(plan) == {"lint"}
    assert any(hung.source in d.message and d.code == "market-unavailable" for d in plan.diagnostics)


async def test_concurrent_turns_of_different_users_never_leak(tmp_path: Path) -> None:
    fs: AbstractFilesystem
    async with open_filesystem("local-shell", tmp_path) as fs, SkillPipeline(filesystem=fs) as pipeline:
        users = [RuntimeContext(user_id=f"user{i}") for i in range(8)]
        for ctx in users:
            await put_skill(fs.scoped(ctx.user_id), "mine", description=f"private to {ctx.user_id}.")
        plans = await asyncio.gather(*(pipeline.prepare(ctx) for ctx in users * 3))
    for plan in plans:
        own = f"private to {plan.context.user_id}."
        assert own in plan.catalog
        assert plan.catalog.count("private to") == 1
        assert plan.skills["mine_workspace-namespaced"].files_root == str(
            tmp_path / plan.context.user_id / "skills" / "mine"
        )


async def test_an_edit_through_another_replica_of_the_store_shows_on_the_next_turn(tmp_path: Path) -> None:
    async with open_filesystem("remote", tmp_path) as replica, open_filesystem("remote", tmp_path) as admin:
        await put_skill(admin, "notes", description="first words")
        await put_skill(admin.scoped("alice"), "mine", description="alice first")
        async with SkillPipeline(filesystem=replica) as pipeline:
            assert "first words" in (await pipeline.prepare(ALICE)).catalog
            await put_skill(admin, "notes", description="second words")
            await put_skill(admin.scoped("alice"), "mine", description="alice again")
            plan = await pipeline.prepare(ALICE)
    assert "second words" in plan.catalog and "alice again" in plan.catalog

"""Users cost what they own: a user's view reads through to the skills every user shares, a
catalog is rendered once for views that render alike, and an idle user's resources are released
and come back on their next turn."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline import pipeline as pipeline_module
from harness.pipeline.plan import SkillOverlay
from repositories import MemoryRepository
from tests.support.pipeline import bundle, write_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
CAROL = RuntimeContext(user_id="carol")


def market() -> MemoryRepository:
    return MemoryRepository([bundle("pdf"), bundle("notes"), bundle("lint")], name="acme", writable=False)


async def test_users_without_own_skills_share_the_base_view_whole(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "team")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()]) as pipeline,
    ):
        alice, bob = await pipeline.prepare(ALICE), await pipeline.prepare(BOB)
    assert isinstance(alice.skills, SkillOverlay) and isinstance(bob.skills, SkillOverlay)
    assert alice.skills.base is bob.skills.base
    assert not alice.skills.own and not bob.skills.own
    assert alice.catalog is bob.catalog  # rendered once
    assert sorted(alice.skills) == sorted(bob.skills) and "team_workspace" in alice.skills


async def test_a_first_turn_without_own_skills_waits_for_no_other_users_view(tmp_path: Path) -> None:
    """A new user without skills of their own is handed the shared view at once: their first
    turn does not queue behind the views other users' turns are building."""
    write_skill(tmp_path / "skills", "team")
    write_skill(tmp_path / "carol" / "skills", "diary")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()]) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        release = threading.Event()
        busy = pipeline._worker.submit(release.wait, 30)  # the worker that builds views, held
        carol: list[object] = []

        async def carols_turn() -> None:
            carol.append(await pipeline.prepare(CAROL))

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(carols_turn)  # her own skills: her view waits for the worker
                with anyio.fail_after(10):
                    bob = await pipeline.prepare(BOB)
                assert "team_workspace" in bob.skills
                await anyio.sleep(0.3)
                assert carol == []
                release.set()
        finally:
            release.set()
            busy.result()
        assert len(carol) == 1


async def test_a_user_with_own_skills_holds_only_them_over_the_shared_base(tmp_path: Path) -> None:
    write_skill(tmp_path / "alice" / "skills", "notes", description="alice's own notes")
    write_skill(tmp_path / "alice" / "skills", "diary")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()]) as pipeline,
    ):
        bob = await pipeline.prepare(BOB)
        alice = await pipeline.prepare(ALICE)
    assert isinstance(alice.skills, SkillOverlay) and isinstance(bob.skills, SkillOverlay)
    assert alice.skills.base is bob.skills.base
    assert sorted(alice.skills.own) == ["diary_workspace-namespaced", "notes_workspace-namespaced"]
    notes = [k for k in bob.skills if k.startswith("notes_")]
    assert len(notes) == 1 and notes[0] not in alice.skills  # the market's notes is shadowed for alice
    assert notes[0] in alice.shadowed_skills and notes[0] not in bob.shadowed_skills
    assert alice.skills["notes_workspace-namespaced"].skill.description == "alice's own notes"
    assert "diary" in alice.catalog and "diary" not in bob.catalog
    assert len(alice.skills) == len(bob.skills) + 1


async def test_changing_one_plans_skills_changes_no_other_turn(tmp_path: Path) -> None:
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()]) as pipeline,
    ):
        first = await pipeline.prepare(ALICE)
        skill_id = next(iter(first.skills))
        del first.skills[skill_id]
        assert skill_id not in first.skills
        again, bob = await pipeline.prepare(ALICE), await pipeline.prepare(BOB)
    assert skill_id in again.skills and skill_id in bob.skills


class _Clock:
    """A monotonic clock the test moves by hand: turns on a loaded machine take no time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_an_idle_user_is_released_and_comes_back_on_the_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(pipeline_module, "time", clock)
    write_skill(tmp_path / "alice" / "skills", "diary", description="first words")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], user_idle_after=0.2) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        await pipeline.prepare(BOB)
        assert pipeline.cached_users == 2
        clock.now += 0.3
        write_skill(tmp_path / "alice" / "skills", "diary", description="changed while away")
        await pipeline.prepare(CAROL)  # a turn of anyone releases the idle users
        assert pipeline.cached_users == 1
        back = await pipeline.prepare(ALICE)
        assert pipeline.cached_users == 2
    assert back.skills["diary_workspace-namespaced"].skill.description == "changed while away"
    assert "diary" in back.catalog


async def test_a_user_with_recent_turns_is_kept(tmp_path: Path) -> None:
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], user_idle_after=60) as pipeline,
    ):
        for context in (ALICE, BOB, ALICE, CAROL):
            await pipeline.prepare(context)
        assert pipeline.cached_users == 3


async def test_at_most_max_cached_users_are_held(tmp_path: Path) -> None:
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], max_cached_users=2) as pipeline,
    ):
        for context in (ALICE, BOB, CAROL):
            await pipeline.prepare(context)
        assert pipeline.cached_users == 2


def test_an_idle_timeout_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="user_idle_after"):
        SkillPipeline(filesystem=LocalFilesystem(tmp_path), user_idle_after=0)


def test_the_overlay_reads_through_and_changes_only_itself() -> None:
    base = {"a": 1, "b": 2, "c": 3}
    overlay = SkillOverlay(base, {"b": 20, "d": 4}, {"c"})
    assert list(overlay) == ["a", "b", "d"] and len(overlay) == 3
    assert overlay["b"] == 20 and "c" not in overlay and overlay.get("c") is None
    overlay["c"] = 30
    del overlay["a"]
    assert dict(overlay) == {"b": 20, "c": 30, "d": 4} and len(overlay) == 3
    assert base == {"a": 1, "b": 2, "c": 3}
    copy = overlay.copy()
    del copy["b"]
    assert "b" in overlay and "b" not in copy
    assert SkillOverlay(base) == base and list(SkillOverlay(base).values()) == [1, 2, 3]

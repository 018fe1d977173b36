"""Changed files reach the layers they touch at a cost that does not grow with the users cached:
many users and a burst of changes never freeze the other turns."""

from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline, TreeWatcher, WatchBackend
from harness.pipeline.plan import TurnPlan
from harness.pipeline.watch import ChangeIndex
from tests.support.pipeline import write_skill
from tests.support.polling import eventually, record_stalls

USERS = 1000
# One new skill per user: its user's folder, a skill folder and a file, in a burst.
_WRITE_ONE_SKILL_PER_USER = """
import pathlib, sys
root, users = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for index in range(users):
    folder = root / f"u{index:04d}" / "skills" / "fresh"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\\nname: fresh\\ndescription: for u{index:04d}\\n---\\nNew.\\n")
"""
# Far above a well-behaved handler (a few ms) and far below one that checks every cached layer
# against every path (seconds): a bound on a hang, not a timing. A pause counts the CPU time this
# process spent in it, at most its length: a pause this process did not run in (the machine busy
# with other processes, the tests' other workers) is none of the handler's doing.
STALL_LIMIT = 0.2


def test_a_path_touches_the_folder_it_is_in_below_or_above() -> None:
    index = ChangeIndex[str]()
    index.add(Path("/ws/alice/skills"), "alice")
    index.add(Path("/ws/bob/skills"), "bob")
    index.add(None, "no folder")
    assert index.touched([Path("/ws/alice/skills/notes/SKILL.md")]) == ["alice"]
    assert index.touched([Path("/ws/alice/skills")]) == ["alice"]
    assert index.touched([Path("/ws/alice")]) == ["alice"]  # the user's folder created or removed
    assert sorted(index.touched([Path("/ws")])) == ["alice", "bob"]
    assert index.touched([Path("/ws/alice/skillsx/SKILL.md"), Path("/ws/alice/notes.txt")]) == []
    assert index.touched([]) == []


def test_paths_sharing_parents_touch_each_item_once() -> None:
    index = ChangeIndex[str]()
    index.add(Path("/ws/alice/skills"), "alice")
    index.add(Path("/ws/alice/skills"), "alice again")
    paths = [Path(f"/ws/alice/skills/s{i}/SKILL.md") for i in range(50)] + [Path("/ws/alice")]
    assert sorted(index.touched(paths)) == ["alice", "alice again"]


def test_a_discarded_item_is_no_longer_touched() -> None:
    index = ChangeIndex[str]()
    first, second = "first", "second"
    index.add(Path("/ws/alice/skills"), first)
    index.add(Path("/ws/alice/skills"), second)
    index.discard(Path("/ws/alice/skills"), first)
    assert index.touched([Path("/ws/alice/skills/x")]) == [second]
    index.discard(Path("/ws/alice/skills"), second)
    index.discard(Path("/ws/nobody"), second)
    index.discard(None, second)
    assert index.touched([Path("/ws/alice/skills/x"), Path("/ws")]) == []
    assert len(index) == 0


async def test_a_burst_of_changes_comes_in_slices_that_cover_every_path(tmp_path: Path) -> None:
    slices: list[set[Path]] = []
    written = [tmp_path / f"d{i // 100}" / f"f{i}.md" for i in range(1000)]

    for folder in {path.parent for path in written}:  # a file in a folder created after the
        folder.mkdir()  # watch began can escape inotify: that race is not what this checks

    def write() -> None:
        for path in written:
            path.write_text("x")

    async def reported() -> set[Path]:
        return set().union(*slices)

    watcher = TreeWatcher(tmp_path, slices.append, lambda reason: None)
    async with anyio.create_task_group() as group:
        await group.start(watcher.run)
        try:
            await anyio.to_thread.run_sync(write)
            await eventually(reported, lambda seen: set(written) <= seen, what="every written file reported")
        finally:
            watcher.stop()
    assert max(map(len, slices)) <= 256


async def test_a_failing_change_handler_is_reported_and_the_watch_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[set[Path]] = []
    failures: list[str] = []

    def on_change(paths: set[Path]) -> None:
        calls.append(paths)
        if len(calls) == 1:
            raise ValueError("a bug in the handler")

    async def seen() -> set[Path]:
        return set().union(*calls)

    watcher = TreeWatcher(tmp_path, on_change, failures.append)
    async with anyio.create_task_group() as group:
        await group.start(watcher.run)
        try:
            (tmp_path / "first.md").write_text("x")
            await eventually(lambda: _value(failures), bool, what="the failure reported")
            (tmp_path / "second.md").write_text("x")
            await eventually(seen, lambda paths: tmp_path / "second.md" in paths, what="later changes still handled")
        finally:
            watcher.stop()
    assert failures == ["a bug in the handler"]
    assert any("handling changes below" in r.getMessage() for r in caplog.records)


async def _value(items: list[str]) -> list[str]:
    return items


async def test_a_thousand_changed_paths_at_a_thousand_users_stall_no_turn(tmp_path: Path) -> None:
    users = [RuntimeContext(user_id=f"u{index:04d}") for index in range(USERS)]
    async with LocalFilesystem(tmp_path) as fs, SkillPipeline(filesystem=fs) as pipeline:
        for user in users:
            assert not (await pipeline.prepare(user, stage=False)).skills
        stalls: list[float] = []

        gc.collect()  # a full collection over the thousand users' objects is a pause of its own
        async with anyio.create_task_group() as group:
            group.start_soon(record_stalls, stalls)
            # Another process writes, as a `git pull` would: this one's event loop only handles changes.
            await anyio.run_process([sys.executable, "-c", _WRITE_ONE_SKILL_PER_USER, str(tmp_path), str(USERS)])
            await _new_skill_shows(pipeline, users[-1])  # written last
            group.cancel_scope.cancel()
        assert max(stalls) < STALL_LIMIT, f"the event loop stalled {max(stalls) * 1000:.0f} ms"
        for user in users:
            assert {s.skill.name for s in (await _new_skill_shows(pipeline, user)).skills.values()} == {"fresh"}


@pytest.mark.parametrize("backend", ["auto", "watchfiles"])
async def test_an_evicted_user_who_comes_back_sees_edits_again(tmp_path: Path, backend: WatchBackend) -> None:
    alice, bob = RuntimeContext(user_id="alice"), RuntimeContext(user_id="bob")
    write_skill(tmp_path / "alice" / "skills", "mine", description="first words")
    async with (
        LocalFilesystem(tmp_path) as fs,
        SkillPipeline(filesystem=fs, max_cached_users=1, watch_backend=backend) as pipeline,
    ):
        assert "first words" in (await pipeline.prepare(alice, stage=False)).catalog
        await pipeline.prepare(bob, stage=False)  # alice's layers are dropped
        assert "first words" in (await pipeline.prepare(alice, stage=False)).catalog
        write_skill(tmp_path / "alice" / "skills", "mine", description="second words")
        await eventually(
            lambda: pipeline.prepare(alice, stage=False),
            lambda plan: "second words" in plan.catalog,
            what="alice's edit showing",
        )


async def _new_skill_shows(pipeline: SkillPipeline, user: RuntimeContext) -> TurnPlan:
    return await eventually(
        lambda: pipeline.prepare(user, stage=False),
        lambda plan: f"for {user.user_id}" in plan.catalog,
        what=f"{user.user_id}'s new skill showing",
    )


async def test_a_watch_over_folders_that_come_and_go_is_renewed_and_misses_nothing(tmp_path: Path) -> None:
    """watchfiles keeps what it knew of removed folders; after ``renew_after`` removed paths the
    watch is set up afresh, and changes made around the renewal are all seen."""
    seen: set[Path] = set()
    watcher = TreeWatcher(tmp_path, seen.update, lambda reason: None, backend="watchfiles")
    watcher.renew_after = 20
    churned = [tmp_path / f"churn-{index}" for index in range(30)]
    (tmp_path / "kept").mkdir()
    async with anyio.create_task_group() as group:
        await group.start(watcher.run)
        try:
            for folder in churned:
                folder.mkdir()
                (folder / "SKILL.md").write_text("x")
                await anyio.sleep(0.01)
                shutil.rmtree(folder)
            await eventually(lambda: _renewals(watcher), lambda count: count >= 1, what="the watch renewed")
            late = tmp_path / "kept" / "SKILL.md"  # a folder the renewed watch found in place
            late.write_text("x")
            edited = [tmp_path / f"edit-{index}.md" for index in range(5)]
            for path in edited:
                path.write_text("y")
            await eventually(lambda: _copy(seen), lambda paths: {late, *edited} <= paths, what="changes after renewal")
        finally:
            watcher.stop()
    assert set(churned) <= seen
    # A tenant's churn buys at most one renewal (one walk of the tree) per ``renew_after`` removed
    # paths: 30 folders removed with their SKILL.md are 60.
    assert watcher.renewals <= 60 // watcher.renew_after


async def _renewals(watcher: TreeWatcher) -> int:
    return watcher.renewals


async def _copy(paths: set[Path]) -> set[Path]:
    return set(paths)


async def test_an_unknown_watch_backend_is_refused_by_name(tmp_path: Path) -> None:
    async with LocalFilesystem(tmp_path) as fs:
        with pytest.raises(ValueError, match="watch_backend: 'fsevents' is not one of auto, inotify, watchfiles"):
            SkillPipeline(filesystem=fs, watch_backend="fsevents")  # type: ignore[arg-type]

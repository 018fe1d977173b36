"""The Linux watch keeps only the folders that exist, sees what is written in a folder the moment
it is made, and sets up a large tree without holding the event loop."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from harness.pipeline import TreeWatcher
from harness.pipeline.inotify import Inotify, inotify_available
from harness.pipeline.watch import WorkspaceWatcher
from tests.support.polling import eventually, record_stalls

pytestmark = pytest.mark.skipif(not inotify_available(), reason="inotify is Linux's")

SKIP = (".skills-cache", ".harness", ".git", "__pycache__")
# A bound on a hang, not a timing (see test_change_handling.STALL_LIMIT): a pause counts the CPU
# time this process spent in it, at most its length.
STALL_LIMIT = 0.2


def _drain(watch: Inotify) -> set[str]:
    """What the watch reports once the kernel has queued it (events are queued synchronously)."""
    return watch.read()


def test_folders_that_come_and_go_leave_nothing_behind(tmp_path: Path) -> None:
    for name in ("a", "b/c"):
        (tmp_path / name).mkdir(parents=True)
    watch = Inotify([str(tmp_path)], recursive=True, skip=SKIP)
    try:
        before = dict(watch.folders)
        assert sorted(before.values()) == sorted(str(tmp_path / name) for name in ("", "a", "b", "b/c"))
        reported: set[str] = set()
        for index in range(300):
            folder = tmp_path / "b" / f"churn-{index}" / "scripts"
            folder.mkdir(parents=True)
            (folder / "run.py").write_text("x")
            reported |= _drain(watch)
            shutil.rmtree(folder.parent)
        reported |= _drain(watch)
        # The kernel dropped each removed folder's watch, and the table its entry.
        assert watch.folders == before
        assert {str(tmp_path / "b" / f"churn-{index}" / "scripts" / "run.py") for index in range(300)} <= reported
    finally:
        watch.close()


def test_a_file_written_the_moment_its_folder_is_made_is_reported(tmp_path: Path) -> None:
    watch = Inotify([str(tmp_path)], recursive=True, skip=SKIP)
    try:
        written = []
        for index in range(100):
            folder = tmp_path / f"user-{index}" / "skills" / "new"
            folder.mkdir(parents=True)  # the file lands before any watch on these folders exists
            (folder / "SKILL.md").write_text("x")
            written.append(str(folder / "SKILL.md"))
        reported = _drain(watch)
        assert set(written) <= reported
        later = tmp_path / "user-99" / "skills" / "new" / "SKILL.md"
        later.write_text("y")  # and the new folders are watched from then on
        assert str(later) in _drain(watch)
    finally:
        watch.close()


def test_a_folder_moved_away_is_no_longer_reported_and_one_moved_in_is(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "skills" / "old" / "scripts").mkdir(parents=True)
    outside.mkdir()
    watch = Inotify([str(tree)], recursive=True, skip=SKIP)
    try:
        os.rename(tree / "skills" / "old", outside / "old")
        assert str(tree / "skills" / "old") in _drain(watch)
        assert not any(folder.startswith(str(outside)) or "/old" in folder for folder in watch.folders.values())
        (outside / "old" / "scripts" / "run.py").write_text("x")
        assert _drain(watch) == set()  # outside the tree: not reported under its old path
        os.rename(outside / "old", tree / "skills" / "back")
        assert str(tree / "skills" / "back" / "scripts" / "run.py") in _drain(watch)
        (tree / "skills" / "back" / "scripts" / "run.py").write_text("y")
        assert _drain(watch) == {str(tree / "skills" / "back" / "scripts" / "run.py")}
    finally:
        watch.close()


def test_machine_folders_and_git_are_never_watched(tmp_path: Path) -> None:
    for name in (".skills-cache/s/scripts", ".harness", "skills/x/.git/objects", "skills/x/__pycache__", "skills/x/ok"):
        (tmp_path / name).mkdir(parents=True)
    watch = Inotify([str(tmp_path)], recursive=True, skip=SKIP)
    try:
        assert sorted(Path(folder).relative_to(tmp_path).as_posix() for folder in watch.folders.values()) == [
            ".",
            "skills",
            "skills/x",
            "skills/x/ok",
        ]
        (tmp_path / "skills" / "x" / ".git" / "new").mkdir()  # created later: not watched either
        _drain(watch)
        assert len(watch.folders) == 4
    finally:
        watch.close()


def test_lost_events_report_the_roots_and_watch_what_appeared(tmp_path: Path) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 50_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to write to overflow it")
    watch = Inotify([str(tmp_path)], recursive=True, skip=SKIP)
    try:
        flood = tmp_path / "flood"
        flood.mkdir()
        _drain(watch)
        for index in range(limit + 10):  # more events than the kernel queues: some are lost
            (flood / f"f{index}").touch()
        (tmp_path / "late" / "deep").mkdir(parents=True)
        assert str(tmp_path) in _drain(watch)  # the root: everything below it may have changed
        (tmp_path / "late" / "deep" / "SKILL.md").write_text("x")
        assert str(tmp_path / "late" / "deep" / "SKILL.md") in _drain(watch)
    finally:
        watch.close()


def test_a_missing_root_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot watch .*nowhere"):
        Inotify([str(tmp_path / "nowhere")], recursive=True)


async def test_a_watcher_over_a_missing_root_reports_a_failure(tmp_path: Path) -> None:
    failures: list[str] = []
    watcher = TreeWatcher(tmp_path / "nowhere", lambda paths: None, failures.append, backend="inotify")
    async with anyio.create_task_group() as group:
        await group.start(watcher.run)
    assert failures and "nowhere" in failures[0]


async def test_a_large_tree_is_watched_while_other_tasks_run(tmp_path: Path) -> None:
    """Watching 20,000 folders walks them all; the walk runs in a worker thread, so the event
    loop is never held for it."""
    for user in range(4000):
        for skill in range(4):
            (tmp_path / f"user-{user:04d}" / "skills" / f"s{skill}").mkdir(parents=True)
    stalls: list[float] = []

    seen: set[Path] = set()
    watcher = WorkspaceWatcher(tmp_path, seen.update, lambda reason: None, backend="inotify")
    async with anyio.create_task_group() as group:
        group.start_soon(record_stalls, stalls)
        await anyio.sleep(0.05)
        await group.start(watcher.run)
        written = tmp_path / "user-3999" / "skills" / "s3" / "SKILL.md"
        written.write_text("x")
        await eventually(lambda: _copy(seen), lambda paths: written in paths, what="a change in the last folder")
        watcher.stop()
        group.cancel_scope.cancel()
    assert max(stalls) < STALL_LIMIT, f"the event loop stalled {max(stalls) * 1000:.0f} ms"


async def _copy(paths: set[Path]) -> set[Path]:
    return set(paths)


def test_a_tenants_link_to_a_folder_outside_is_never_followed(tmp_path: Path) -> None:
    """A user with a shell links their area to another folder (another tenant's, the host's):
    nothing below the link is watched, at the start or when the link appears later."""
    tree, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (tree / "mallory" / "skills").mkdir(parents=True)
    (elsewhere / "secrets" / "deep").mkdir(parents=True)
    (tree / "mallory" / "skills" / "early").symlink_to(elsewhere)
    watch = Inotify([str(tree)], recursive=True, skip=SKIP)
    try:
        (tree / "mallory" / "skills" / "late").symlink_to(elsewhere / "secrets")
        reported = _drain(watch)
        assert str(tree / "mallory" / "skills" / "late") in reported  # the link itself is a change
        assert all(folder.startswith(str(tree)) for folder in watch.folders.values())
        (elsewhere / "secrets" / "deep" / "key").write_text("x")
        assert _drain(watch) == set()
    finally:
        watch.close()


def test_a_root_swapped_for_another_folder_is_watched_again(tmp_path: Path) -> None:
    """A deploy renames the old folder away and the new one into its place: what is at the
    root's path now is watched, and everything in it reported."""
    root = tmp_path / "skills"
    (root / "old").mkdir(parents=True)
    (tmp_path / "next" / "fresh").mkdir(parents=True)
    (tmp_path / "next" / "fresh" / "SKILL.md").write_text("x")
    watch = Inotify([str(root)], recursive=True, skip=SKIP)
    try:
        os.rename(root, tmp_path / "previous")
        os.rename(tmp_path / "next", root)
        assert {str(root), str(root / "fresh" / "SKILL.md")} <= _drain(watch)
        (tmp_path / "previous" / "old" / "gone.md").write_text("x")  # the old tree: no longer reported
        (root / "fresh" / "SKILL.md").write_text("y")
        assert _drain(watch) == {str(root / "fresh" / "SKILL.md")}
    finally:
        watch.close()


async def test_a_root_removed_for_good_ends_the_watch_with_a_failure(tmp_path: Path) -> None:
    """With nothing at the root's path the watch cannot go on: the pipeline is told, and re-reads
    those skills every turn rather than serving what it read last."""
    root = tmp_path / "skills"
    (root / "one").mkdir(parents=True)
    failures: list[str] = []
    watcher = TreeWatcher(root, lambda paths: None, failures.append, backend="inotify")
    async with anyio.create_task_group() as group:
        await group.start(watcher.run)
        shutil.rmtree(root)
        await eventually(lambda: _copy_list(failures), bool, what="the failure reported")
    assert "no longer watched" in failures[0]


async def _copy_list(items: list[str]) -> list[str]:
    return list(items)

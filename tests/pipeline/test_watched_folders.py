"""What the pipeline watches: the workspace's folders that exist (and those that appear later),
never the staging cache the harness writes itself. Watches are read from the kernel's own
record of this process's inotify watches (``/proc/self/fdinfo``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import MemoryRepository
from tests.support.pipeline import bundle, write_skill
from tests.support.polling import eventually
from tests.support.sizing import sized

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify watches are read from /proc")

DAVE = RuntimeContext(user_id="dave")


def watched_inodes() -> set[int]:
    """The inodes of every folder this process has an inotify watch on."""
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("inotify wd:"):
                field = next(part for part in line.split() if part.startswith("ino:"))
                inodes.add(int(field[4:], 16))
    return inodes


def folder_inodes(root: Path) -> set[int]:
    return {root.stat().st_ino, *(p.stat().st_ino for p in root.rglob("*") if p.is_dir())}


async def test_nothing_under_the_staging_cache_is_watched(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "team")
    market = MemoryRepository([bundle(f"tool-{i}") for i in range(20)], name="acme", writable=False)
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market]) as pipeline,
    ):
        plan = await pipeline.prepare(DAVE)
        assert plan.staged is not None and plan.staged.written > 0
        cache = folder_inodes(tmp_path / ".skills-cache")
        watched = watched_inodes()
        assert (tmp_path / "skills" / "team").stat().st_ino in watched
        assert not cache & watched


async def test_a_folder_that_appears_later_is_watched_and_its_edits_are_seen(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "team")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs) as pipeline,
    ):
        first = await pipeline.prepare(DAVE)
        assert "diary_workspace-namespaced" not in first.skills
        assert not (tmp_path / "dave").exists()
        folder = write_skill(tmp_path / "dave" / "skills", "diary", description="first words")

        async def watched() -> bool:
            return folder.stat().st_ino in watched_inodes()

        await eventually(watched, what="a watch on the new user's skill folder")

        async def description() -> str:
            plan = await pipeline.prepare(DAVE)
            found = plan.skills.get("diary_workspace-namespaced")
            return found.skill.description if found is not None else ""

        await eventually(description, lambda d: d == "first words", what="the new skill")
        write_skill(tmp_path / "dave" / "skills", "diary", description="second words")
        await eventually(description, lambda d: d == "second words", what="the edit in the new folder")


async def test_a_missing_folder_is_not_watched_until_it_exists(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "team")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs) as pipeline,
    ):
        await pipeline.prepare(DAVE)
        watched = watched_inodes()
        assert tmp_path.stat().st_ino in watched  # the workspace's own entries: where a folder appears
        assert (tmp_path / "skills").stat().st_ino in watched
        assert not (tmp_path / "dave").exists()


def inotify_instances() -> int:
    """How many inotify instances this process holds (one per watch set up)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue
    return count


async def test_users_arriving_one_by_one_are_each_watched_by_a_bounded_number_of_watches(tmp_path: Path) -> None:
    """Each new user's area is watched without watching every other area again (which would
    hold the GIL for a walk of the whole workspace per new user); the watches are merged, so
    their number stays bounded however many users arrive."""
    write_skill(tmp_path / "skills", "team")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs) as pipeline,
    ):
        await pipeline.prepare(DAVE)
        before = inotify_instances()
        folders = []
        for index in range(sized(12, full=48)):  # a dozen arrivals merge the watches several times
            folders.append(write_skill(tmp_path / f"user{index:02d}" / "skills", "diary"))

            async def watched(folder: Path = folders[-1]) -> bool:
                return folder.stat().st_ino in watched_inodes()

            await eventually(watched, what=f"a watch on user{index:02d}'s skill folder")
        assert all(folder.stat().st_ino in watched_inodes() for folder in folders)  # none lost by a merge
        assert inotify_instances() <= before + 6
        late = RuntimeContext(user_id="user00")
        write_skill(tmp_path / "user00" / "skills", "diary", description="edited after the merges")

        async def description() -> str:
            found = (await pipeline.prepare(late)).skills.get("diary_workspace-namespaced")
            return found.skill.description if found is not None else ""

        await eventually(description, lambda d: d == "edited after the merges", what="an edit in the first user's area")

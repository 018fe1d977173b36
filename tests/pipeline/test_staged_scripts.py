"""Staged scripts run as ``./x`` from every market, and running them leaves the shared cache as
the market has it: no ``__pycache__``, no outputs (local shell: removed by the next check;
sandbox: refused as a read-only file system)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxFilesystem
from harness.context import RuntimeContext
from harness.pipeline import ResolvedSkill, SkillPipeline, TurnPlan
from repositories import GitRepository, SkillRepository
from tests.support.nobody import run_as_nobody
from tests.support.pipeline import GitRemote, shared_dir
from tests.support.reliability import tree_state
from tests.support.skills import make_skill, skill_md

ALICE = RuntimeContext(user_id="alice")
WRITER = """\
import os
import helper

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "out.txt"), "w") as handle:
    handle.write(helper.GREETING)
print(helper.GREETING)
"""


@pytest.fixture(params=["local-shell", "sandbox"])
def shell(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The mode and a workspace folder its shell can reach."""
    if request.param == "sandbox":
        request.getfixturevalue("bwrap")
        with shared_dir("staged-scripts-") as path:
            yield request.param, path
    else:
        yield request.param, tmp_path / "ws"


@asynccontextmanager
async def planned(mode: str, workspace: Path, market: SkillRepository) -> AsyncIterator[TurnPlan]:
    """Alice's plan over ``market`` in a local-shell or sandbox workspace."""
    fs: AbstractFilesystem = (
        SandboxFilesystem(workspace) if mode == "sandbox" else LocalFilesystem(workspace, shell=True)
    )
    async with fs, SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline:
        yield await pipeline.prepare(ALICE)


def git_market(base: Path, files: dict[str, str]) -> GitRepository:
    """A git market whose skill ``tool`` holds ``files``, all committed ``100644``."""
    remote = GitRemote(base / "remote")
    make_skill(remote.work / "skills", "tool", text=skill_md("tool"), files=files)
    remote.commit()
    assert "100755" not in remote.git("ls-tree", "-r", "HEAD")
    return GitRepository(remote.url, cache_dir=base / "git-cache")


async def run_in(plan: TurnPlan, skill: ResolvedSkill, command: str) -> tuple[int, str, str]:
    """``command`` in the skill's files-root, after the plan's check of that skill."""
    if plan.before_run is not None:
        await plan.before_run(skill)
    result = await plan.filesystem.run(f"cd {skill.files_root} && {command}")
    return result.exit_code, result.stdout, result.stderr


async def test_git_scripts_stored_without_exec_bits_run_as_dot_slash(shell: tuple[str, Path], tmp_path: Path) -> None:
    mode, workspace = shell
    market = git_market(
        tmp_path, {"scripts/run": "#!/bin/sh\necho ran\n", "scripts/hello.py": "#!/usr/bin/env python3\nprint('py')\n"}
    )
    async with planned(mode, workspace, market) as plan:
        tool = plan.find("tool")
        assert tool is not None
        assert await run_in(plan, tool, "./scripts/run && ./scripts/hello.py") == (0, "ran\npy\n", "")


async def test_staged_files_and_folders_are_read_only(tmp_path: Path) -> None:
    market = git_market(tmp_path, {"scripts/run.sh": "echo hi\n", "references/notes.md": "notes\n"})
    async with planned("local-shell", tmp_path / "ws", market):
        pass
    folder = tmp_path / "ws" / ".skills-cache" / market.source / "tool"
    modes = {p.relative_to(folder).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in folder.rglob("*")}
    assert modes == {
        "SKILL.md": 0o444,
        "scripts": 0o555,
        "scripts/run.sh": 0o555,
        "references": 0o555,
        "references/notes.md": 0o444,
    }
    assert stat.S_IMODE(folder.stat().st_mode) == 0o555


async def test_a_script_writing_next_to_itself_leaves_nothing_in_the_cache_after_the_check(tmp_path: Path) -> None:
    market = git_market(tmp_path, {"scripts/main.py": WRITER, "scripts/helper.py": "GREETING = 'hello'\n"})
    cache = tmp_path / "ws" / ".skills-cache"
    async with planned("local-shell", tmp_path / "ws", market) as plan:
        tool = plan.find("tool")
        assert tool is not None
        staged = tree_state(cache / market.source)
        # Root ignores the read-only bits: the write lands, and the check removes it.
        assert await run_in(plan, tool, "python3 scripts/main.py") == (0, "hello\n", "")
        written = cache / market.source / "tool" / "scripts"
        assert (written / "out.txt").read_text() == "hello"
        assert not (written / "__pycache__").exists()
        assert plan.before_run is not None
        await plan.before_run(tool)
        assert tree_state(cache / market.source) == staged


async def test_a_script_writing_next_to_itself_in_the_sandbox_fails_and_writes_nothing(
    bwrap: str, tmp_path: Path
) -> None:
    market = git_market(tmp_path, {"scripts/main.py": WRITER, "scripts/helper.py": "GREETING = 'hello'\n"})
    with shared_dir("staged-scripts-") as workspace:
        async with planned("sandbox", workspace, market) as plan:
            tool = plan.find("tool")
            assert tool is not None
            staged = tree_state(workspace / ".skills-cache" / market.source)
            code, _, stderr = await run_in(plan, tool, "python3 scripts/main.py")
            assert code != 0 and "Read-only file system" in stderr
            assert tree_state(workspace / ".skills-cache" / market.source) == staged


def test_an_unprivileged_stager_updates_its_read_only_cache_and_restores_it(tmp_path: Path) -> None:
    """As ``nobody`` the read-only modes bind: the shell cannot write the cache, while the stager
    still updates it (opening each folder for its own pass) and the check restores it."""
    with shared_dir("sealed-cache-") as base:
        market, workspace = base / "market", base / "ws"
        make_skill(
            market, "tool", text=skill_md("tool"), files={"scripts/run.sh": "#!/bin/sh\necho v1\n", "old.txt": "o"}
        )
        make_skill(market, "gone", text=skill_md("gone"))
        workspace.mkdir()
        subprocess.run(["chown", "-R", "65534:65534", str(market), str(workspace)], check=True)
        done = run_as_nobody(
            sys.executable,
            str(Path(__file__).with_name("sealed_cache_driver.py")),
            str(workspace),
            str(market),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["first"] == [] and report["update"] == []
        assert report["direct"].count("Permission denied") == 2
        assert report["forced"] is True
        assert report["run"] == "v2\n"
        staged = workspace / ".skills-cache" / report["source"]
        assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*")) == [
            "tool",
            "tool/SKILL.md",
            "tool/new",
            "tool/new/deep",
            "tool/new/deep/x.txt",
            "tool/scripts",
            "tool/scripts/run.sh",
        ]
        assert {stat.S_IMODE(p.stat().st_mode) for p in staged.rglob("*") if p.is_dir()} == {0o555}

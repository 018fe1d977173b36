"""Two real processes × 8 concurrent turns for 4 users each (50 turns for 10 users with
--large) on one workspace (local shell, sandbox) and on one MySQL store (remote): staged files
are never torn or missing, and no user sees another's skills, drafts, history or files through the catalog, the
load tool, the file tools — nor, in a sandbox, through the shell."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from turn_driver import COMMON, TURNS, USERS, common_script, marker
from turn_driver import market as turn_market

from filesystems import AbstractFilesystem, LocalFilesystem, MySQLKeyValueStore, RemoteFilesystem, SandboxFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.tools.skills import load_skill_file
from tests.support.cli import python_command
from tests.support.filesystems import shared_dir
from tests.support.mysql import STORE_TABLES, drop_tables
from tests.support.reliability import CACHE, cache_problems

HERE = Path(__file__).parent
GROUPS = ([f"p0u{i}" for i in range(USERS)], [f"p1u{i}" for i in range(USERS)])
TURNS_PER_USER = TURNS // USERS + 1  # the concurrent ones and the one that reads the history


async def _seed(fs: AbstractFilesystem) -> None:
    """Each user's own skill, draft and note, all carrying the user's marker."""
    for user in [*GROUPS[0], *GROUPS[1]]:
        area = fs.scoped(user)
        tag = marker(user)
        await area.write_text(
            f"skills/{user}-skill/SKILL.md",
            f"---\nname: {user}-skill\ndescription: Private tool of {tag}.\n---\n{tag}\n",
        )
        await area.write_text(
            f"skills/_drafts/{user}-draft/SKILL.md", f"---\nname: {user}-draft\ndescription: Draft {tag}.\n---\n{tag}\n"
        )
        await area.write_text("note.txt", f"note of {tag}\n")


def _run_pair(mode: str, where: str, table: str = "-") -> list[dict[str, object]]:
    # Two processes of their own, forked with the harness already imported: what they share is
    # the workspace, as two bots would (tests/support/cli.py).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    children = [
        subprocess.Popen(
            [
                *python_command(HERE / "turn_driver.py"),
                mode,
                where,
                table,
                ",".join(mine),
                ",".join(theirs),
                f"p{index}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for index, (mine, theirs) in enumerate((GROUPS, GROUPS[::-1]))
    ]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=240)
        assert child.returncode == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def _assert_clean(reports: list[dict[str, object]]) -> None:
    for report in reports:
        assert report["violations"] == []
        assert report["turns"] == TURNS + USERS


def _assert_staged(ws: Path) -> None:
    assert cache_problems(ws) == []
    acme = ws / CACHE / "acme"
    for i in range(COMMON):
        assert (acme / f"common-{i}" / "scripts" / "run.sh").read_bytes() == common_script(i)
    # Each process's own skill survives the other's clean-up (leases).
    assert (acme / "only-p0" / "SKILL.md").is_file() and (acme / "only-p1" / "SKILL.md").is_file()


def _assert_own_writes(ws: Path) -> None:
    for user in [*GROUPS[0], *GROUPS[1]]:
        written = sorted((ws / user / "turns").iterdir())
        assert len(written) == TURNS_PER_USER and all(p.read_text() == marker(user) for p in written), user


@pytest.mark.slow
async def test_two_processes_on_one_local_shell_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    async with LocalFilesystem(ws) as fs:
        await _seed(fs)
    _assert_clean(_run_pair("local-shell", str(ws)))
    _assert_staged(ws)
    _assert_own_writes(ws)


@pytest.mark.slow
async def test_two_processes_on_one_sandboxed_workspace(bwrap: str) -> None:
    with shared_dir("reliability-sandbox-") as base:
        ws = base / "ws"
        async with SandboxFilesystem(ws, bwrap=bwrap) as fs:
            await _seed(fs)
        _assert_clean(_run_pair("sandbox", str(ws)))
        _assert_staged(ws)
        _assert_own_writes(ws)


@pytest.mark.slow
async def test_two_processes_on_one_mysql_store(mysql_dsn: str) -> None:
    table = f"reliso_{secrets.token_hex(4)}"
    try:
        async with RemoteFilesystem(MySQLKeyValueStore(mysql_dsn, table=table), agent_id="agent") as fs:
            await _seed(fs)
            _assert_clean(_run_pair("remote", mysql_dsn, table))
            for user in [*GROUPS[0], *GROUPS[1]]:
                area = fs.scoped(user)
                written = await area.read_many([s.path for s in await area.walk("turns")])
                assert len(written) == TURNS_PER_USER and set(written.values()) == {marker(user).encode()}, user
    finally:
        await drop_tables(mysql_dsn, table, STORE_TABLES)


async def test_a_sandboxed_shell_cannot_plant_links_to_others_or_tamper_with_shared_files(bwrap: str) -> None:
    with shared_dir("reliability-sandbox-") as base:
        ws = base / "ws"
        market = turn_market("p0")
        async with (
            SandboxFilesystem(ws, bwrap=bwrap) as fs,
            SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
        ):
            await _seed(fs)
            alice = await pipeline.prepare(RuntimeContext(user_id="p0u0"))
            staged = ws / CACHE / "acme" / "common-0" / "scripts" / "run.sh"
            shared_skill = ws / "skills" / "team" / "SKILL.md"
            await fs.write_text("skills/team/SKILL.md", "---\nname: team\ndescription: Team skill.\n---\n")
            bob_note = ws / "p1u0" / "note.txt"
            result = await alice.filesystem.run(
                f"ln -s {bob_note} /workspace/stolen; ln -s ../../../p1u0/note.txt /workspace/skills/p0u0-skill/ref.md; "
                f"echo evil > {alice.skills['common-0_acme'].files_root}/scripts/run.sh; "
                "echo evil > /workspace/skills/team/SKILL.md; echo evil > /workspace/.skills-cache/planted; "
                "cat /workspace/stolen /workspace/skills/p0u0-skill/ref.md; true"
            )
            assert marker("p1u0") not in result.stdout
            assert "Read-only file system" in result.stderr
            assert staged.read_bytes() == common_script(0)
            assert shared_skill.read_text().startswith("---\nname: team")
            assert not (ws / CACHE / "planted").exists()
            with pytest.raises(PermissionError):
                await alice.filesystem.read_bytes("stolen")
            again = await pipeline.prepare(RuntimeContext(user_id="p0u0"))
            assert "ref.md" not in again.skills["p0u0-skill_workspace-namespaced"].skill.files
            with pytest.raises(FileNotFoundError):
                await load_skill_file(again, "p0u0-skill", "ref.md")
            assert bob_note.read_text() == f"note of {marker('p1u0')}\n"
            assert cache_problems(ws) == []

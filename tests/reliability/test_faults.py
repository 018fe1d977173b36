"""Real faults: a git remote that disappears, a MySQL server stopped mid-run, a full disk
during staging, a process killed mid-stage. Each time the last good skills are served, a
diagnostic says what failed, the next turn heals ``.skills-cache`` to match its manifest, and
nothing a user wrote is lost."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from stage_driver import main as stage_again

from filesystems import LocalFilesystem, MySQLKeyValueStore, RemoteFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from harness.tools.skills import load_skill_file
from repositories import FileContents, GitRepository, MemoryRepository, MySQLRepository, SkillBundleContents
from tests.support.polling import eventually
from tests.support.reliability import (
    CACHE,
    GitRemote,
    PrivateMariaDB,
    cache_problems,
    private_mariadb,
    skill_md,
    write_skill,
)
from tests.support.skills import make_bundle

ALICE = RuntimeContext(user_id="alice")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
HERE = Path(__file__).parent


def _errors(plan: TurnPlan, code: str) -> list[str]:
    return [d.message for d in plan.diagnostics if d.code == code and d.severity == "error"]


async def _user_writes(plan: TurnPlan) -> None:
    await plan.filesystem.write_text("notes/today.md", "written by alice\n")


async def _user_note(plan: TurnPlan) -> str:
    return await plan.filesystem.read_text("notes/today.md")


async def _assert_healed(pipeline: SkillPipeline, ws: Path, skill_id: str, command: str) -> None:
    """The turn after the market came back: no market error, ``command`` (``{root}`` is the
    skill's files root) runs the new v2 script, the cache matches its manifest and the user's
    note survived."""
    healed = await pipeline.prepare(ALICE)
    assert not _errors(healed, "market-unavailable")
    run = await healed.filesystem.run(command.format(root=healed.skills[skill_id].files_root))
    assert run.stdout == "v2\n"
    assert cache_problems(ws) == []
    assert await _user_note(healed) == "written by alice\n"


# -- git ---------------------------------------------------------------------------------------


@asynccontextmanager
async def _team_pipeline(ws: Path, remote: GitRemote, cache_dir: Path) -> AsyncIterator[SkillPipeline]:
    """A pipeline over ``ws`` with ``remote`` as the git market ``team``, cloned into ``cache_dir``."""
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        GitRepository(remote.url, cache_dir=cache_dir, source="team") as repo,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        yield pipeline


async def test_git_remote_deleted_serves_last_good_then_heals(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("deploy", files={"scripts/run.sh": b"#!/bin/sh\necho v1\n"})
    remote.commit("v1", force=True)
    ws = tmp_path / "ws"
    cache_dir = tmp_path / "clones"
    async with _team_pipeline(ws, remote, cache_dir) as pipeline:
        first = await pipeline.prepare(ALICE)
        await _user_writes(first)
        assert not _errors(first, "market-unavailable")
        shutil.rmtree(remote.bare)

        gone = await pipeline.prepare(ALICE)
        assert "deploy_team" in gone.skills and "deploy" in gone.catalog
        assert any("last good" in m for m in _errors(gone, "market-unavailable"))
        run = await gone.filesystem.run(f"sh {gone.skills['deploy_team'].files_root}/scripts/run.sh")
        assert run.stdout == "v1\n"
        assert cache_problems(ws) == []

        remote.create_bare()
        remote.skill("deploy", files={"scripts/run.sh": b"#!/bin/sh\necho v2\n"})
        remote.commit("v2", force=True)
        await _assert_healed(pipeline, ws, "deploy_team", "sh {root}/scripts/run.sh")


async def test_git_remote_gone_before_a_restart_serves_the_cached_clone(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("deploy")
    remote.commit("v1", force=True)
    ws = tmp_path / "ws"
    cache_dir = tmp_path / "clones"
    async with _team_pipeline(ws, remote, cache_dir) as pipeline:
        await pipeline.prepare(ALICE)
    shutil.rmtree(remote.bare)
    async with _team_pipeline(ws, remote, cache_dir) as pipeline:
        restarted = await pipeline.prepare(ALICE)
    assert "deploy_team" in restarted.skills
    assert _errors(restarted, "market-unavailable")
    assert cache_problems(ws) == []


# -- MySQL -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mariadb() -> Iterator[PrivateMariaDB]:
    try:
        with private_mariadb() as server:
            yield server
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        if IN_CI:
            pytest.fail(f"a private mariadbd is required in CI: {exc}", pytrace=False)
        pytest.skip(f"cannot start a private mariadbd: {exc}")


def _bundle(name: str, tag: str) -> SkillBundleContents:
    return make_bundle(name, text=skill_md(name), files={"scripts/run.sh": (f"#!/bin/sh\necho {tag}\n", 0o755)})


async def test_mysql_market_stopped_mid_run_serves_last_good_then_heals(
    mariadb: PrivateMariaDB, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    table = f"rel_{secrets.token_hex(4)}"
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        MySQLRepository(mariadb.dsn, table=table, writable=True, create_if_missing=True, connect_timeout=2) as repo,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False, market_timeout=5) as pipeline,
    ):
        await repo.save(_bundle("report", "v1"))
        first = await pipeline.prepare(ALICE)
        await _user_writes(first)
        assert "report_" + repo.source in first.skills
        mariadb.stop()
        try:
            down = await pipeline.prepare(ALICE)
            assert {s.skill.name for s in down.skills.values()} == {"report"}
            assert _errors(down, "market-unavailable")
            assert (await load_skill_file(down, "report")).startswith("---\nname: report")
            assert cache_problems(ws) == []
        finally:
            mariadb.start()
        await repo.save(_bundle("report", "v2"))
        await _assert_healed(pipeline, ws, "report_" + repo.source, "{root}/scripts/run.sh")


async def test_mysql_store_stopped_mid_run_serves_last_good_user_skills_then_heals(mariadb: PrivateMariaDB) -> None:
    table = f"relkv_{secrets.token_hex(4)}"
    store = MySQLKeyValueStore(mariadb.dsn, table=table, pool_size=2)
    async with RemoteFilesystem(store, agent_id="agent") as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        alice = fs.scoped("alice")
        await alice.write_bytes("skills/mine/SKILL.md", skill_md("mine"))
        await fs.write_bytes("skills/shared/SKILL.md", skill_md("shared"))
        first = await pipeline.prepare(ALICE)
        assert set(first.skills) == {"mine_workspace-namespaced", "shared_workspace"}
        await _user_writes(first)
        mariadb.stop()
        try:
            down = await pipeline.prepare(ALICE)
            assert set(down.skills) == {"mine_workspace-namespaced", "shared_workspace"}
            assert _errors(down, "layer-unavailable")
            assert (await load_skill_file(down, "mine")).startswith("---\nname: mine")
        finally:
            mariadb.start()
        await alice.write_bytes("skills/second/SKILL.md", skill_md("second"))
        healed = await pipeline.prepare(ALICE)
        assert not _errors(healed, "layer-unavailable")
        assert set(healed.skills) == {"mine_workspace-namespaced", "second_workspace-namespaced", "shared_workspace"}
        assert await _user_note(healed) == "written by alice\n"


# -- disk full ---------------------------------------------------------------------------------


@pytest.fixture
def tiny_cache(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose ``.skills-cache`` is a 1 MiB tmpfs."""
    ws = tmp_path / "ws"
    cache = ws / CACHE
    cache.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(cache)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        probe = cache / "probe"
        try:
            probe.write_bytes(b"\0" * (2 << 20))
            pytest.fail("a 1 MiB tmpfs accepted 2 MiB: the disk-full test would prove nothing", pytrace=False)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        probe.unlink()
        yield ws
    finally:
        subprocess.run(["umount", "-l", str(cache)], check=False)


async def test_disk_full_during_staging_keeps_last_good_and_heals(tiny_cache: Path) -> None:
    ws = tiny_cache
    small = [_bundle(f"tool-{i}", "v1") for i in range(3)]
    market = MemoryRepository(small, name="acme")
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
    ):
        first = await pipeline.prepare(ALICE)
        await _user_writes(first)
        assert first.staged is not None and first.staged.written == 6
        big = os.urandom(400 * 1024)
        for i in range(3):
            await market.save(
                SkillBundleContents(
                    folder=f"tool-{i}",
                    skill_md=skill_md(f"tool-{i}"),
                    files=(
                        FileContents(path="scripts/run.sh", data=b"#!/bin/sh\necho v2\n", mode=0o755),
                        FileContents(path="assets/blob.bin", data=big),
                    ),
                )
            )
        full = await pipeline.prepare(ALICE)
        assert {s.skill.name for s in full.skills.values()} == {"tool-0", "tool-1", "tool-2"}
        failures = _errors(full, "stage-write-failed")
        assert failures and any("No space left" in m for m in failures), full.diagnostics
        assert await _user_note(full) == "written by alice\n"

        filler = ws / CACHE / "filler"
        _fill(filler)
        for i in range(3):
            await market.save(_bundle(f"tool-{i}", "v3"))
        no_room = await pipeline.prepare(ALICE)
        assert {s.skill.name for s in no_room.skills.values()} == {"tool-0", "tool-1", "tool-2"}
        assert any("No space left" in d.message for d in no_room.diagnostics if d.severity == "error"), (
            no_room.diagnostics
        )

        filler.unlink()
        # A disk the kernel remounted read-only after errors: not even the manifest can be written.
        subprocess.run(["mount", "-o", "remount,ro", str(ws / CACHE)], check=True)
        try:
            await market.save(_bundle("tool-0", "v4"))
            read_only = await pipeline.prepare(ALICE)
            assert {s.skill.name for s in read_only.skills.values()} == {"tool-0", "tool-1", "tool-2"}
            assert any("Read-only" in d.message for d in read_only.diagnostics if d.severity == "error"), (
                read_only.diagnostics
            )
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(ws / CACHE)], check=True)
        await market.save(_bundle("tool-0", "v3"))
        healed = await pipeline.prepare(ALICE)
        assert not _errors(healed, "stage-write-failed")
        assert cache_problems(ws) == []
        for i in range(3):
            run = await healed.filesystem.run(f"{healed.skills[f'tool-{i}_acme'].files_root}/scripts/run.sh")
            assert run.stdout == "v3\n"
        assert await _user_note(healed) == "written by alice\n"


async def test_a_skill_half_staged_by_a_failed_write_is_cleaned_up_by_the_next_pass(tmp_path: Path) -> None:
    """One file of a new version cannot be written while another new file lands: the next
    version, without that file, leaves no stray file in the cache (the manifest records what the
    failed pass did write)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    market = MemoryRepository([_bundle("tool", "v1")], name="acme")
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        blocker = ws / CACHE / "acme" / "tool" / "data"  # a folder where the new version has a file
        (blocker / "inside").mkdir(parents=True)
        await market.save(
            make_bundle(
                "tool",
                text=skill_md("tool"),
                files={"scripts/run.sh": ("#!/bin/sh\necho v2\n", 0o755), "assets/new.bin": "new", "data": "x"},
            )
        )
        half = await pipeline.prepare(ALICE)
        assert _errors(half, "stage-write-failed"), half.diagnostics
        assert (ws / CACHE / "acme" / "tool" / "assets" / "new.bin").is_file()  # landed before the failure

        shutil.rmtree(blocker)
        await market.save(_bundle("tool", "v3"))
        healed = await pipeline.prepare(ALICE)
        assert not _errors(healed, "stage-write-failed")
        assert cache_problems(ws) == []
        assert not (ws / CACHE / "acme" / "tool" / "assets" / "new.bin").exists()
        run = await healed.filesystem.run(f"{healed.skills['tool_acme'].files_root}/scripts/run.sh")
        assert run.stdout == "v3\n"


def _fill(path: Path) -> None:
    """Take every free byte of the file system holding ``path``."""
    with open(path, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


# -- killed mid-stage --------------------------------------------------------------------------


@pytest.mark.slow
async def test_process_killed_mid_stage_heals_on_the_next_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = tmp_path / "market"
    for i in range(150):
        write_skill(
            market,
            f"skill-{i:03d}",
            files={f"references/part-{j}.md": os.urandom(2048).hex().encode() for j in range(12)},
        )
    ws = tmp_path / "ws"
    write_skill(ws / "alice" / "skills", "mine")
    (ws / "alice" / "notes.md").parent.mkdir(parents=True, exist_ok=True)
    (ws / "alice" / "notes.md").write_text("mine\n")
    staged = ws / CACHE / "big"
    child = subprocess.Popen(
        [sys.executable, str(HERE / "stage_driver.py"), str(ws), str(market)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )

    async def finished_or_staging() -> bool:
        return child.poll() is not None or (
            staged.is_dir() and any(p.is_file() for p in staged.rglob("*"))
        )  # a file landed, not just a folder

    await eventually(finished_or_staging, within=60, every=0.002, what="the child staging its first files")
    assert child.poll() is None, f"the child finished before it could be killed: {child.communicate()}"
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    landed = sum(1 for p in staged.rglob("*") if p.is_file())
    assert 0 < landed < 150 * 13, landed

    await stage_again(ws, market)  # the next turn, here in this process: the leftovers are on disk
    assert capsys.readouterr().out.split()[0] == "staged"
    assert cache_problems(ws) == []
    assert sum(1 for p in staged.iterdir()) == 150
    assert (ws / "alice" / "notes.md").read_text() == "mine\n"
    assert (ws / "alice" / "skills" / "mine" / "SKILL.md").is_file()

"""What staging removes and what it never touches: configuration changes, upstream deletions,
concurrent users, other pipelines and processes sharing the workspace (on this host or another),
folders a command runs in, repairs by verify."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.leases import DEFAULT_LEASE_GRACE
from repositories import DirectoryRepository, FileContents, GitRepository, MemoryRepository, SkillBundleContents
from tests.support.pipeline import GitRemote, bundle, echo_script, local_pipeline, make_bundle, skill_text, write_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
PEER = Path(__file__).with_name("stage_peer.py")


def cached(ws: Path) -> set[str]:
    """``<source>/<folder>`` of every staged folder."""
    root = ws / ".skills-cache"
    if not root.is_dir():
        return set()
    return {
        f"{source.name}/{folder.name}"
        for source in root.iterdir()
        if source.is_dir() and not source.name.startswith(".")
        for folder in source.iterdir()
    }


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Bytes, mode and mtime of every file below ``root`` outside ``.skills-cache``."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] != ".skills-cache":
            st = path.stat()
            found[rel.as_posix()] = (path.read_bytes(), st.st_mode, st.st_mtime_ns)
    return found


async def test_removing_a_market_from_the_configuration_removes_its_folder(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    beta = MemoryRepository([bundle("deploy")], name="beta")
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with SkillPipeline(filesystem=fs, repositories=[acme, beta]) as pipeline:
            await pipeline.prepare(ALICE)
        assert cached(tmp_path) == {"acme/tool", "acme/lint", "beta/deploy"}
        async with SkillPipeline(filesystem=fs, repositories=[beta]) as pipeline:
            plan = await pipeline.prepare(ALICE)
    assert cached(tmp_path) == {"beta/deploy"}
    assert not (tmp_path / ".skills-cache" / "acme").exists()
    assert plan.staged is not None and plan.staged.removed == 4


async def test_deleting_a_skill_upstream_removes_its_folder(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        await pipeline.prepare(ALICE)
        await acme.delete("lint")
        plan = await pipeline.prepare(ALICE)
    assert cached(tmp_path) == {"acme/tool"}
    assert "lint_acme" not in plan.skills
    assert plan.staged is not None and (plan.staged.written, plan.staged.removed) == (0, 2)


async def test_a_file_dropped_upstream_is_removed_from_the_staged_folder(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        await pipeline.prepare(ALICE)
        await acme.save(SkillBundleContents(folder="tool", skill_md=bundle("tool").skill_md))
        await pipeline.prepare(ALICE)
    assert not (tmp_path / ".skills-cache" / "acme" / "tool" / "scripts" / "run.sh").exists()
    assert (tmp_path / ".skills-cache" / "acme" / "tool" / "SKILL.md").is_file()


async def test_removing_the_last_market_empties_the_cache(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with SkillPipeline(filesystem=fs, repositories=[acme]) as pipeline:
            await pipeline.prepare(ALICE)
        async with SkillPipeline(filesystem=fs, repositories=[]) as pipeline:
            plan = await pipeline.prepare(ALICE)
    assert cached(tmp_path) == set()
    assert plan.staged is not None and plan.staged.removed == 2


async def test_a_users_own_files_are_never_touched(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "tool", description="workspace tool", script=echo_script("ws"))
    write_skill(tmp_path / "alice" / "skills", "lint", script=echo_script("alice"))
    (tmp_path / "alice" / "notes.txt").write_text("mine")
    (tmp_path / "AGENTS.md").write_text("# agents")
    before = snapshot(tmp_path)
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with SkillPipeline(filesystem=fs, repositories=[acme]) as pipeline:
            await pipeline.prepare(ALICE)
            await pipeline.stage(verify=True)
        async with SkillPipeline(filesystem=fs, repositories=[]) as pipeline:
            await pipeline.prepare(ALICE)
    assert snapshot(tmp_path) == before


async def test_a_symlink_planted_in_the_cache_never_leads_outside(tmp_path: Path) -> None:
    victim = tmp_path / "alice" / "skills" / "tool"
    victim.mkdir(parents=True)
    (victim / "notes.md").write_text("alice's")
    (tmp_path / ".skills-cache" / "acme").mkdir(parents=True)
    (tmp_path / ".skills-cache" / "acme" / "tool").symlink_to(victim)
    (tmp_path / ".skills-cache" / "beta").symlink_to(tmp_path / "alice")
    acme = MemoryRepository([bundle("tool")], name="acme")
    beta = MemoryRepository([bundle("skills")], name="beta")
    async with local_pipeline(tmp_path, acme, beta) as pipeline:
        plan = await pipeline.prepare(ALICE)
        verified = await pipeline.stage(verify=True)
    assert [p.name for p in victim.iterdir()] == ["notes.md"]
    assert sorted(p.name for p in (tmp_path / "alice").iterdir()) == ["skills"]
    assert plan.staged is not None and plan.staged.written == 4
    assert (verified.written, verified.removed) == (0, 0)
    for key in ("acme/tool", "beta/skills"):
        staged = tmp_path / ".skills-cache" / key
        assert not staged.is_symlink() and not staged.parent.is_symlink()
        assert (staged / "scripts" / "run.sh").is_file()


async def test_a_linked_subfolder_never_loses_files_when_upstream_drops_them(tmp_path: Path) -> None:
    victim = tmp_path / "alice" / "keep"
    victim.mkdir(parents=True)
    (victim / "old.sh").write_text("alice's")
    files = (
        FileContents(path="scripts/run.sh", data=b"echo 1\n"),
        FileContents(path="scripts/old.sh", data=b"echo 2\n"),
    )
    acme = MemoryRepository(
        [SkillBundleContents(folder="tool", skill_md=bundle("tool").skill_md, files=files)], name="acme"
    )
    async with local_pipeline(tmp_path, acme) as pipeline:
        await pipeline.prepare(ALICE)
        scripts = tmp_path / ".skills-cache" / "acme" / "tool" / "scripts"
        for path in scripts.iterdir():
            path.unlink()
        scripts.rmdir()
        scripts.symlink_to(victim)
        await acme.save(SkillBundleContents(folder="tool", skill_md=bundle("tool").skill_md, files=files[:1]))
        await pipeline.prepare(ALICE)
        await pipeline.stage(verify=True)
    assert [p.name for p in victim.iterdir()] == ["old.sh"]
    assert (victim / "old.sh").read_text() == "alice's"


async def test_two_users_with_different_overrides_staging_concurrently_keep_every_folder(tmp_path: Path) -> None:
    write_skill(tmp_path / "alice" / "skills", "tool", description="alice tool")
    write_skill(tmp_path / "bob" / "skills", "lint", description="bob lint")
    acme = MemoryRepository([bundle("tool"), bundle("lint"), bundle("deploy")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        for round_ in range(5):
            await acme.save(bundle("deploy", description=f"round {round_}"))
            alice, bob = await asyncio.gather(pipeline.prepare(ALICE), pipeline.prepare(BOB))
            assert cached(tmp_path) == {"acme/tool", "acme/lint", "acme/deploy"}
            assert alice.skills["tool_workspace-namespaced"].skill.description == "alice tool"
            assert bob.skills["lint_workspace-namespaced"].skill.description == "bob lint"
            for plan, market_skill in ((alice, "lint_acme"), (bob, "tool_acme")):
                root = plan.skills[market_skill].files_root
                assert root is not None and Path(root, "scripts", "run.sh").is_file()
    assert (tmp_path / "alice" / "skills" / "tool" / "SKILL.md").is_file()
    assert (tmp_path / "bob" / "skills" / "lint" / "SKILL.md").is_file()


async def test_two_pipelines_sharing_a_workspace_keep_what_the_other_serves(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool")], name="acme")
    beta = MemoryRepository([bundle("deploy")], name="beta")
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with (
            SkillPipeline(filesystem=fs, repositories=[acme]) as first,
            SkillPipeline(filesystem=fs, repositories=[beta]) as second,
        ):
            await first.prepare(ALICE)
            await second.prepare(BOB)
            await second.stage(verify=True)
            assert cached(tmp_path) == {"acme/tool", "beta/deploy"}
            await first.stage(verify=True)
            assert cached(tmp_path) == {"acme/tool", "beta/deploy"}
        async with SkillPipeline(filesystem=fs, repositories=[beta]) as third:
            await third.prepare(BOB)
    assert cached(tmp_path) == {"beta/deploy"}  # once its only server closed, acme/tool may go


async def _start_peer(ws: Path, market: Path) -> asyncio.subprocess.Process:
    peer = await asyncio.create_subprocess_exec(
        sys.executable, str(PEER), str(ws), str(market), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert peer.stdout is not None
    line = await asyncio.wait_for(peer.stdout.readline(), timeout=30)
    assert line.decode().startswith("staged "), line
    return peer


async def test_another_process_keeps_its_folders_while_it_lives(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(tmp_path / "peer-market", "deploy", script=echo_script("peer"))
    peer = await _start_peer(ws, tmp_path / "peer-market")
    acme = MemoryRepository([bundle("tool")], name="acme")
    try:
        async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, repositories=[acme]) as pipeline:
            await pipeline.prepare(ALICE)
            await pipeline.stage(verify=True)
            assert cached(ws) == {"acme/tool", "dir-peer-market/deploy"}
            assert peer.stdin is not None
            peer.stdin.write(b"done\n")
            await peer.stdin.drain()
            assert await asyncio.wait_for(peer.wait(), timeout=30) == 0
            result = await pipeline.stage(verify=True)
            assert cached(ws) == {"acme/tool"}
            assert result.removed == 2
    finally:
        if peer.returncode is None:
            peer.kill()
            await peer.wait()


async def test_a_killed_process_lease_does_not_keep_folders_forever(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(tmp_path / "peer-market", "deploy")
    peer = await _start_peer(ws, tmp_path / "peer-market")
    os.kill(peer.pid, signal.SIGKILL)
    await peer.wait()
    leases = list((ws / ".skills-cache" / ".leases").iterdir())
    assert leases, "the killed peer left its lease behind"
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, repositories=[acme]) as pipeline:
        await pipeline.prepare(ALICE)
    assert cached(ws) == {"acme/tool"}
    assert not any(p.exists() for p in leases)


async def test_verify_repairs_files_changed_or_deleted_behind_the_stagers_back(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        await pipeline.prepare(ALICE)
        tool = tmp_path / ".skills-cache" / "acme" / "tool"
        (tool / "scripts" / "run.sh").write_text("#!/bin/sh\necho tampered\n")
        (tmp_path / ".skills-cache" / "acme" / "lint" / "SKILL.md").unlink()
        (tool / "scripts" / "extra.sh").write_text("stray")
        os.chmod(tool / "SKILL.md", 0o600)
        warm = await pipeline.prepare(ALICE)
        assert warm.staged is not None and warm.staged.written == 0  # the manifest is trusted
        repaired = await pipeline.stage(verify=True)
        again = await pipeline.stage(verify=True)
    assert (repaired.written, repaired.removed) == (3, 1)
    assert (again.written, again.removed) == (0, 0)
    assert (tool / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho market-tool\n"
    assert (tool / "SKILL.md").stat().st_mode & 0o777 == 0o444
    assert (tmp_path / ".skills-cache" / "acme" / "lint" / "SKILL.md").is_file()
    assert not (tool / "scripts" / "extra.sh").exists()


class ReadLog(MemoryRepository):
    """A market that notes, at each read, whether the first skill's tampered script is repaired."""

    def __init__(self, bundles: list[SkillBundleContents], watched: Path) -> None:
        super().__init__(bundles, name="acme")
        self.watched = watched
        self.reads: list[tuple[str, bool]] = []

    async def read_files(self, folder: str, paths: Sequence[str]) -> dict[str, bytes]:
        repaired = self.watched.is_file() and self.watched.read_text() == "#!/bin/sh\necho market-skill-00\n"
        self.reads.append((folder, repaired))
        return await super().read_files(folder, paths)


async def test_a_verify_pass_over_a_large_market_reads_and_writes_it_a_part_at_a_time(tmp_path: Path) -> None:
    """A verify reads every skill: in parts of about half a MiB, each written before the next
    is read, so its memory does not grow with the markets. It still repairs and counts as one pass."""
    filler = "x" * (150 << 10)  # 16 skills of 150 KiB: several parts
    bundles = [
        make_bundle(
            f"skill-{n:02d}",
            text=skill_text(f"skill-{n:02d}"),
            files={"scripts/run.sh": f"#!/bin/sh\necho market-skill-{n:02d}\n", "data.txt": filler},
        )
        for n in range(16)
    ]
    cache = tmp_path / ".skills-cache" / "acme"
    acme = ReadLog(bundles, cache / "skill-00" / "scripts" / "run.sh")
    async with local_pipeline(tmp_path, acme) as pipeline:
        first = await pipeline.stage()
        for n in (0, 15):
            target = cache / f"skill-{n:02d}" / "scripts" / "run.sh"
            os.chmod(target.parent, 0o755)
            target.unlink()
            target.write_text("#!/bin/sh\necho tampered\n")
        (cache / "skill-07" / "data.txt").unlink()
        acme.reads.clear()
        repaired = await pipeline.stage(verify=True)
        again = await pipeline.stage(verify=True)
    assert first.written == 48
    assert (repaired.written, repaired.unchanged, repaired.removed) == (3, 45, 0)
    assert (again.written, again.unchanged, again.removed) == (0, 48, 0)
    assert (cache / "skill-15" / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho market-skill-15\n"
    assert (cache / "skill-07" / "data.txt").read_text() == filler
    # skill-00 was read before it was repaired, the last skill after: reading all then writing all would not.
    by_folder = dict(acme.reads[: len(bundles)])
    assert not by_folder["skill-00"] and by_folder["skill-15"]
    assert {folder for folder, _ in acme.reads} == {f"skill-{n:02d}" for n in range(16)}


async def test_the_periodic_verify_runs_without_being_asked(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, acme, verify_interval=0.0) as pipeline:
        await pipeline.prepare(ALICE)
        (tmp_path / ".skills-cache" / "acme" / "tool" / "SKILL.md").unlink()
        plan = await pipeline.prepare(ALICE)
    assert plan.staged is not None and plan.staged.written == 1
    assert (tmp_path / ".skills-cache" / "acme" / "tool" / "SKILL.md").is_file()


async def test_unsafe_market_paths_are_refused_per_file(tmp_path: Path) -> None:
    market = tmp_path / "market"
    write_skill(market, "tool", script=echo_script("ok"))
    os.symlink("/etc/passwd", market / "tool" / "scripts" / "passwd")
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        DirectoryRepository(market) as repo,
        SkillPipeline(filesystem=fs, repositories=[repo]) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    staged = tmp_path / "ws" / ".skills-cache" / repo.source / "tool"
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()) == [
        "SKILL.md",
        "scripts/run.sh",
    ]
    assert any("symlink" in d.message for d in plan.diagnostics)


async def test_nested_global_skills_sharing_a_folder_name_never_share_a_staged_folder(tmp_path: Path) -> None:
    glob = tmp_path / "global"
    for team in ("team-a", "team-b"):
        folder = write_skill(glob / team, "tool", script=echo_script(team))
        (folder / "SKILL.md").write_text(f"---\nname: {team}-tool\ndescription: The tool of {team}.\n---\n")
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, global_skills_dir=glob) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        root = plan.skills["team-a-tool_global"].files_root
        run = await plan.filesystem.run(f"sh {root}/scripts/run.sh")
        verified = await pipeline.stage(verify=True)
    assert run.stdout.strip() == "team-a"
    assert "team-b-tool_global" not in plan.skills
    assert any(d.code == "duplicate-folder" and "team-b/tool" in d.message for d in plan.diagnostics)
    assert (verified.written, verified.unchanged) == (0, 2)


async def test_a_git_market_whose_remote_is_gone_keeps_its_staged_folders_on_a_new_replica(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "remote")
    remote.skill("deploy", script=echo_script("deploy"))
    remote.commit()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with LocalFilesystem(ws, shell=True) as fs:
        first = GitRepository(remote.url, cache_dir=tmp_path / "replica-1")
        async with first, SkillPipeline(filesystem=fs, repositories=[first], watch=False) as pipeline:
            await pipeline.prepare(ALICE)
        staged = cached(ws)
        shutil.rmtree(remote.bare)
        # A second replica on the shared workspace: no clone cache and the remote gone.
        second = GitRepository(remote.url, cache_dir=tmp_path / "replica-2")
        async with second, SkillPipeline(filesystem=fs, repositories=[second], watch=False) as pipeline:
            plan = await pipeline.prepare(ALICE)
    assert staged == {f"{second.source}/deploy"} and cached(ws) == staged
    assert (ws / ".skills-cache" / second.source / "deploy" / "scripts" / "run.sh").read_text() == echo_script("deploy")
    assert plan.staged is not None and plan.staged.removed == 0
    codes = {d.code: d for d in plan.diagnostics}
    assert codes["market-unavailable"].location == second.source
    assert codes["stage-kept"].message.startswith(f"kept 1 staged folder(s) of {second.source}")


async def test_a_market_that_answers_without_a_folder_still_has_it_removed(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with SkillPipeline(filesystem=fs, repositories=[acme]) as pipeline:
            await pipeline.prepare(ALICE)
            await acme.delete("lint")
            await pipeline.refresh()
            plan = await pipeline.prepare(ALICE)
    assert cached(tmp_path) == {"acme/tool"}
    assert not any(d.code == "stage-kept" for d in plan.diagnostics)


async def test_pipeline_stage_reports_the_layer_diagnostics_of_a_market_that_is_down(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "remote")
    shutil.rmtree(remote.bare)
    repo = GitRepository(remote.url, cache_dir=tmp_path / "cache")
    async with LocalFilesystem(tmp_path / "ws", shell=True) as fs:
        async with repo, SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline:
            result = await pipeline.stage()
    assert [d.location for d in result.diagnostics if d.code == "market-unavailable"] == [repo.source]


async def test_a_folder_only_another_hosts_process_served_goes_only_after_its_leases_grace(
    tmp_path: Path, bwrap: str
) -> None:
    ws = tmp_path / "ws"
    write_skill(tmp_path / "peer-market", "deploy")
    # A replica on another host sharing the workspace: its host name is all that differs.
    peer = await asyncio.create_subprocess_exec(
        *(bwrap, "--dev-bind", "/", "/", "--unshare-uts", "--hostname", "replica-b", "--die-with-parent", "--"),
        *(sys.executable, str(PEER), str(ws), str(tmp_path / "peer-market")),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert peer.stdout is not None
    line = await asyncio.wait_for(peer.stdout.readline(), timeout=60)
    assert line.decode().startswith("staged "), line
    peer.kill()  # gone without a word: its pid means nothing on this host
    await peer.wait()
    [lease] = list((ws / ".skills-cache" / ".leases").glob("*.json"))
    assert json.loads(lease.read_text())["host"] == "replica-b"
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(ws, acme) as pipeline:
        await pipeline.prepare(ALICE)
        assert cached(ws) == {"acme/tool", "dir-peer-market/deploy"}  # within the grace
        written = json.loads(lease.read_text())
        lease.write_text(json.dumps({**written, "time": written["time"] - DEFAULT_LEASE_GRACE - 60}))
        result = await pipeline.stage(verify=True)
    assert cached(ws) == {"acme/tool"} and result.removed == 1
    assert not lease.exists()


async def test_a_folder_a_command_runs_in_stays_until_the_command_ends(tmp_path: Path) -> None:
    acme = MemoryRepository([bundle("tool"), bundle("lint")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        plan = await pipeline.prepare(ALICE)
        assert plan.running is not None
        async with plan.running([plan.skills["lint_acme"]]):
            await acme.delete("lint")
            during = await pipeline.prepare(ALICE)
            assert "lint_acme" not in during.skills and cached(tmp_path) == {"acme/tool", "acme/lint"}
            [lease] = list((tmp_path / ".skills-cache" / ".leases").glob("*.json"))
            assert "acme/lint" in json.loads(lease.read_text())["keys"]  # other processes keep it too
        after = await pipeline.prepare(ALICE)
    assert cached(tmp_path) == {"acme/tool"}
    assert after.staged is not None and after.staged.removed == 2


async def test_what_a_removal_cut_short_left_in_the_trash_goes_with_the_next_pass(tmp_path: Path) -> None:
    trash = tmp_path / ".skills-cache" / ".trash"
    (trash / "0a1b2c3d" / "scripts").mkdir(parents=True)
    (trash / "0a1b2c3d" / "scripts" / "run.sh").write_text("echo left\n")
    (trash / "0a1b2c3d").chmod(0o555)
    (tmp_path / "outside").mkdir()
    (trash / "planted").symlink_to(tmp_path / "outside")
    acme = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, acme) as pipeline:
        await pipeline.prepare(ALICE)
    assert list(trash.iterdir()) == [] and (tmp_path / "outside").is_dir()
    assert cached(tmp_path) == {"acme/tool"}

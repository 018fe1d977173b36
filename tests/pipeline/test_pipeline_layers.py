"""All four layers at once — global dir, git + MySQL + directory + package markets, workspace, two users —
checked in every filesystem mode: winners, skill ids, files-roots, staged scripts run through the
shell tool, per-user isolation, and an idempotent second stage."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from filesystems import AbstractFilesystem
from harness.context import RuntimeContext
from harness.errors import SkillNotFound
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from harness.tools.skills import LOAD_TOOL, SHELL_TOOL, skill_tools
from repositories import DirectoryRepository, GitRepository, MySQLRepository, PackageRepository, SkillRepository
from tests.support.catalog import read_catalog
from tests.support.pipeline import (
    MODES,
    GitRemote,
    bundle,
    echo_script,
    mysql_market,
    open_filesystem,
    put_skill,
    shared_dir,
    write_skill,
    zipped_skill_package,
)

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")


@dataclass
class World:
    mode: str
    ws: Path
    fs: AbstractFilesystem
    repositories: list[SkillRepository]
    global_dir: Path
    git: str
    mysql: str
    directory: str
    package: str

    def pipeline(self) -> SkillPipeline:
        # Entered by each test itself: its watchers' task group must close in the task that opened it.
        return SkillPipeline(filesystem=self.fs, repositories=self.repositories, global_skills_dir=self.global_dir)

    def root(self, source: str, name: str) -> str | None:
        """The files-root of a staged (market or global) skill in this mode."""
        if self.mode in ("local", "remote"):
            return None
        base = "/workspace" if self.mode == "sandbox" else str(self.ws)
        return f"{base}/.skills-cache/{source}/{name}"


@dataclass(frozen=True)
class Sources:
    """What the global folder and the git, MySQL, directory and package markets serve, and the git
    market's clone cache: no test changes them, so the module shares them."""

    global_dir: Path
    git_url: str
    git_cache: Path
    market_dir: Path
    package: str
    mysql_table: str


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, mysql_dsn: str) -> Iterator[Sources]:
    base = tmp_path_factory.mktemp("sources")
    glob = base / "global"
    write_skill(glob, "greet", script=echo_script("global-greet"))
    write_skill(glob, "lint", description="global lint", script=echo_script("global-lint"))
    remote = GitRemote(base / "git")
    remote.skill("lint", description="git lint", script=echo_script("git-lint"))
    remote.skill("report", description="git report", script=echo_script("git-report"))
    remote.skill("shared", description="git shared", script=echo_script("git-shared"))
    remote.commit()
    market_dir = base / "dirmarket"
    write_skill(market_dir, "deploy", description="dir deploy", script=echo_script("dir-deploy"))
    write_skill(market_dir, "shared", description="dir shared", script=echo_script("dir-shared"))
    mysql = mysql_market(
        mysql_dsn,
        [
            bundle("report", description="mysql report", script="#!/bin/sh\necho mysql-report\n"),
            bundle("deploy", description="mysql deploy"),
            bundle("shared", description="mysql shared"),
        ],
    )
    with (
        zipped_skill_package(base / "pkg", {"pack": "pkg-pack", "shared": "pkg-shared"}) as package,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(mysql) as filled,
    ):
        yield Sources(glob, remote.url, base / "gitcache", market_dir, package, filled.table)


@pytest.fixture(params=MODES)
async def world(
    request: pytest.FixtureRequest, tmp_path: Path, mysql_dsn: str, sources: Sources
) -> AsyncIterator[World]:
    mode: str = request.param
    bwrap = request.getfixturevalue("bwrap") if mode == "sandbox" else None
    with ExitStack() as dirs:
        ws = (dirs.enter_context(shared_dir()) if mode == "sandbox" else tmp_path) / "ws"
        async with AsyncExitStack() as stack:
            git = await stack.enter_async_context(GitRepository(sources.git_url, cache_dir=sources.git_cache))
            mysql = await stack.enter_async_context(MySQLRepository(mysql_dsn, table=sources.mysql_table))
            directory = await stack.enter_async_context(DirectoryRepository(sources.market_dir))
            package = await stack.enter_async_context(PackageRepository(sources.package))
            fs = await stack.enter_async_context(open_filesystem(mode, ws, bwrap=bwrap))
            await put_skill(fs, "shared", description="workspace shared", script=echo_script("ws-shared"))
            await put_skill(fs, "notes", description="workspace notes")
            await put_skill(
                fs.scoped("alice"), "shared", description="alice shared", script=echo_script("alice-shared")
            )
            await put_skill(fs.scoped("alice"), "secret", description="alice secret")
            await put_skill(fs.scoped("bob"), "bobby", description="bob only")
            yield World(
                mode=mode,
                ws=ws,
                fs=fs,
                repositories=[git, mysql, directory, package],
                global_dir=sources.global_dir,
                git=git.source,
                mysql=mysql.source,
                directory=directory.source,
                package=package.source,
            )


async def _shell(plan: TurnPlan, command: str) -> str:
    tools = {t.name: t for t in skill_tools(plan)}
    return await tools[SHELL_TOOL].call({"command": command})


async def test_the_highest_layer_wins_with_its_own_skill_id(world: World) -> None:
    async with world.pipeline() as pipeline:
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
        common = {
            "greet_global",
            f"lint_{world.git}",
            f"report_{world.mysql}",
            f"deploy_{world.directory}",
            f"pack_{world.package}",
            "notes_workspace",
        }
        assert set(alice.skills) == common | {"shared_workspace-namespaced", "secret_workspace-namespaced"}
        assert set(bob.skills) == common | {"shared_workspace", "bobby_workspace-namespaced"}
        described = {s.skill.name: s.skill.description for s in alice.skills.values()}
        assert described["lint"] == "git lint"  # a market beats the global dir
        assert described["report"] == "mysql report"  # a later market beats an earlier one
        assert described["deploy"] == "dir deploy"
        assert described["shared"] == "alice shared"
        assert bob.skills["shared_workspace"].skill.description == "workspace shared"
        losers = {(s.name, s.loser.skill.source) for s in alice.shadowed}
        assert {
            ("lint", "global"),
            ("report", world.git),
            ("shared", "workspace"),
            ("shared", world.package),
            ("shared", world.directory),
        } <= losers


async def test_files_roots_follow_the_mode(world: World) -> None:
    async with world.pipeline() as pipeline:
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
        roots = {k: v.files_root for k, v in alice.skills.items()}
        assert roots["greet_global"] == world.root("global", "greet")
        assert roots[f"lint_{world.git}"] == world.root(world.git, "lint")
        assert roots[f"report_{world.mysql}"] == world.root(world.mysql, "report")
        assert roots[f"deploy_{world.directory}"] == world.root(world.directory, "deploy")
        assert roots[f"pack_{world.package}"] == world.root(world.package, "pack")
        expected_user = {
            "local": None,
            "remote": None,
            "local-shell": f"{world.ws}/alice/skills/shared",
            "sandbox": "/workspace/skills/shared",
        }[world.mode]
        expected_ws = {
            "local": None,
            "remote": None,
            "local-shell": f"{world.ws}/skills/notes",
            "sandbox": "/workspace/skills/notes",
        }[world.mode]
        assert roots["shared_workspace-namespaced"] == expected_user
        assert roots["notes_workspace"] == expected_ws
        if expected_ws is None:
            assert "root=" not in alice.catalog and SHELL_TOOL not in alice.catalog
        for plan in (alice, bob):
            # Every entry's id and files-root, derived from its group as the header says, are the plan's.
            shown = read_catalog(plan.catalog).skills
            assert len(shown) == len([s for s in plan.skills.values() if not s.skill.hidden])
            for entry in shown:
                found = plan.find(entry.skill_id)
                assert found is not None and found.skill.name == entry.name
                assert entry.files_root == found.files_root


async def test_staged_scripts_run_through_the_shell_tool(world: World) -> None:
    async with world.pipeline() as pipeline:
        if world.mode in ("local", "remote"):
            plan = await pipeline.prepare(ALICE)
            assert [t.name for t in skill_tools(plan)] == [LOAD_TOOL]
            assert plan.staged is None and pipeline.stager is None
            assert not (world.ws / ".skills-cache").exists()
            return
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
        expected = {
            "greet_global": "global-greet",
            f"lint_{world.git}": "git-lint",
            f"report_{world.mysql}": "mysql-report",
            f"deploy_{world.directory}": "dir-deploy",
            f"pack_{world.package}": "pkg-pack",
        }
        for skill_id, output in expected.items():
            root = alice.skills[skill_id].files_root
            assert await _shell(alice, f"{root}/scripts/run.sh") == f"exit code: 0\nstdout:\n{output}"
        alice_root = alice.skills["shared_workspace-namespaced"].files_root
        bob_root = bob.skills["shared_workspace"].files_root
        assert "alice-shared" in await _shell(alice, f"sh {alice_root}/scripts/run.sh")
        assert "ws-shared" in await _shell(bob, f"sh {bob_root}/scripts/run.sh")


async def test_alices_override_is_invisible_to_bob(world: World) -> None:
    async with world.pipeline() as pipeline:
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
        assert "alice shared" in alice.catalog and "alice secret" in alice.catalog
        assert "alice shared" not in bob.catalog and "alice secret" not in bob.catalog
        bob_load = {t.name: t for t in skill_tools(bob)}[LOAD_TOOL]
        with pytest.raises(SkillNotFound):
            await bob_load.call({"skillId": "secret_workspace-namespaced"})
        with pytest.raises(SkillNotFound):
            await bob_load.call({"skillId": "shared_workspace-namespaced"})
        assert "workspace shared" in await bob_load.call({"skillId": "shared"})
        alice_load = {t.name: t for t in skill_tools(alice)}[LOAD_TOOL]
        assert "alice shared" in await alice_load.call({"skillId": "shared"})
        assert "echo alice-shared" in await alice_load.call({"skillId": "shared", "path": "scripts/run.sh"})


async def test_a_second_stage_writes_nothing(world: World) -> None:
    async with world.pipeline() as pipeline:
        first = await pipeline.prepare(ALICE)
        if pipeline.stager is None:
            assert first.staged is None
            return
        # The union of layers 1–2, shadowed skills included: 12 skills × (SKILL.md + script).
        assert first.staged is not None and first.staged.written == 24
        second = await pipeline.prepare(BOB)
        forced = await pipeline.stage()
        verified = await pipeline.stage(verify=True)
        assert second.staged is not None and (second.staged.written, second.staged.removed) == (0, 0)
        assert (forced.written, verified.written, verified.removed) == (0, 0, 0)
        assert verified.unchanged == 24

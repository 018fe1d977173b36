"""Odd and hostile tree layouts: every layer and market applies the same discovery rules, a bad
entry costs at most its own skill with a diagnostic naming it, and the turn succeeds for everyone.

Layouts taken from real collections and from other skill loaders' test fixtures: skills in
dot-folders, dot-files and ``_`` helpers inside skills, ignore files, undecodable names,
unreadable files (checked as an unprivileged user), links, a SKILL.md at the top, odd
``--global-dir`` values and sandbox folder merges.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, MemoryKeyValueStore, RemoteFilesystem, SandboxFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.layers import SkillLayer
from harness.pipeline.plan import TurnPlan
from harness.skills.skill import Layer
from harness.skills.validation import discover_skill_dirs
from harness.tools.skills import load_skill_file
from repositories import (
    DirectoryRepository,
    FileContents,
    GitRepository,
    InvalidBundle,
    MySQLRepository,
    PackageRepository,
    SkillBundleContents,
    SkillRepository,
)
from tests.support.filesystems import shared_dir
from tests.support.mysql import drop_tables
from tests.support.nobody import run_as_nobody
from tests.support.packages import zipped_package
from tests.support.reliability import GitRemote, skill_md, write_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
HERE = Path(__file__).parent

# A curated collection: skills inside a dot-folder, helpers whose names start with "_" or ".",
# an ignore file, and a drafts folder at the top that is machine-owned.
CURATED: dict[str, bytes] = {
    ".curated/alpha/SKILL.md": skill_md("alpha"),
    ".curated/alpha/assets/.env.example": b"TOKEN=\n",
    ".curated/alpha/scripts/_common.py": b"HELPER = 1\n",
    ".curated/alpha/scripts/__init__.py": b"",
    ".curated/alpha/_templates/page.txt": b"page\n",
    ".curated/alpha/.gitignore": b"venv/\n",
    ".curated/alpha/venv/lib.py": b"ignored\n",
    "beta/SKILL.md": skill_md("beta"),
    "_drafts/draft/SKILL.md": skill_md("draft"),
}
ALPHA_FILES = [".gitignore", "_templates/page.txt", "assets/.env.example", "scripts/__init__.py", "scripts/_common.py"]


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


def write_bytes_at(path: bytes, data: bytes) -> None:
    """Write a file whose name is not valid UTF-8 (``Path`` only takes text)."""
    with open(path, "wb") as handle:
        handle.write(data)


def messages(plan: TurnPlan) -> str:
    return "\n".join(d.message for d in plan.diagnostics)


@asynccontextmanager
async def tree_market(kind: str, tmp_path: Path, files: dict[str, bytes]) -> AsyncIterator[SkillRepository]:
    """A market of ``kind`` holding the tree ``files``."""
    if kind == "directory":
        write_tree(tmp_path / "market", files)
        async with DirectoryRepository(tmp_path / "market") as repo:
            yield repo
    elif kind == "git":
        remote = GitRemote(tmp_path / "git")
        write_tree(remote.work / "skills", files)
        remote.git("add", "-f", ".")  # commit what a .gitignore excludes, as a careless publisher would
        remote.commit()
        async with GitRepository(remote.url, cache_dir=tmp_path / "cache") as repo:
            yield repo
    else:
        with zipped_package(tmp_path, {f"skills/{p}": d for p, d in files.items()}, prefix="layout_pkg") as package:
            async with PackageRepository(package) as repo:
                yield repo


# -- markets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "git", "package"])
async def test_markets_serve_skills_in_dot_folders_with_their_dot_and_underscore_files(
    kind: str, tmp_path: Path
) -> None:
    async with tree_market(kind, tmp_path, CURATED) as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["alpha", "beta"]
        alpha = snap.bundle("alpha")
        assert alpha is not None
        assert [f.path for f in alpha.files] == ALPHA_FILES
        assert await repo.read_file("alpha", "assets/.env.example") == b"TOKEN=\n"


@pytest.mark.parametrize("kind", ["directory", "git", "package"])
async def test_markets_never_serve_reserved_top_level_folders(kind: str, tmp_path: Path) -> None:
    async with tree_market(kind, tmp_path, CURATED) as repo:
        snap = await repo.snapshot()
    assert "draft" not in [b.folder for b in snap.bundles]
    assert not any("_drafts" in p for p in snap.problems)


@pytest.mark.parametrize("kind", ["directory", "git", "package"])
async def test_market_skill_md_at_the_top_does_not_hide_the_skills_below(kind: str, tmp_path: Path) -> None:
    files = {"SKILL.md": skill_md("top"), "alpha/SKILL.md": skill_md("alpha"), "notes.md": b"# notes\n"}
    async with tree_market(kind, tmp_path, files) as repo:
        snap = await repo.snapshot()
    assert [b.folder for b in snap.bundles] == ["alpha"]
    assert any(p.startswith("SKILL.md at the top of the tree is not a skill") for p in snap.problems)
    assert any("loose file notes.md" in p for p in snap.problems)


async def test_mysql_market_serves_dot_and_underscore_files_and_refuses_reserved_folders(
    mysql_dsn: str, tmp_path: Path
) -> None:
    files = (
        FileContents(path="assets/.env.example", data=b"TOKEN=\n"),
        FileContents(path="scripts/_common.py", data=b"x\n"),
    )
    table = f"layout_{secrets.token_hex(5)}"
    try:
        async with MySQLRepository(mysql_dsn, table=table, writable=True, create_if_missing=True) as repo:
            await repo.save(SkillBundleContents(folder="alpha", skill_md=skill_md("alpha"), files=files))
            (bundle,) = (await repo.snapshot()).bundles
            assert [f.path for f in bundle.files] == ["assets/.env.example", "scripts/_common.py"]
            assert await repo.read_file("alpha", "assets/.env.example") == b"TOKEN=\n"
    finally:
        await drop_tables(mysql_dsn, table)
    with pytest.raises(InvalidBundle, match="reserved"):
        SkillBundleContents(folder="_drafts", skill_md=skill_md("draft"))


async def test_directory_market_names_undecodable_entries_and_keeps_their_siblings(tmp_path: Path) -> None:
    market = tmp_path / "market"
    write_skill(market, "alpha")
    write_skill(market, "beta")
    write_bytes_at(os.fsencode(market / "alpha") + b"/bad\xff.txt", b"x")
    os.mkdir(os.fsencode(market) + b"/gam\xfema")
    async with DirectoryRepository(market) as repo:
        snap = await repo.snapshot()
    assert [b.folder for b in snap.bundles] == ["alpha", "beta"]
    assert snap.bundle("alpha").files == ()  # type: ignore[union-attr]
    assert "name is not valid UTF-8, skipped: alpha/bad\\xff.txt" in snap.problems
    assert "name is not valid UTF-8, skipped: gam\\xfema" in snap.problems


# -- folder layers ---------------------------------------------------------------------------


async def test_workspace_loads_dot_folder_skills_and_delivers_every_file_of_a_skill(tmp_path: Path) -> None:
    write_tree(tmp_path / "skills", CURATED)
    async with LocalFilesystem(tmp_path) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        assert sorted(plan.skills) == ["alpha_workspace", "beta_workspace"]
        assert list(await plan.skills["alpha_workspace"].list_files()) == ALPHA_FILES
        assert await load_skill_file(plan, "alpha", "assets/.env.example") == "TOKEN=\n"


async def test_global_layer_stages_underscore_helpers_a_script_imports(tmp_path: Path) -> None:
    write_skill(
        tmp_path / "global",
        "tool",
        files={
            "scripts/run.py": b"import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nfrom _common import HELPER\nprint(HELPER)\n",
            "scripts/_common.py": b"HELPER = 'helper-ok'\n",
        },
    )
    ws = tmp_path / "ws"
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, global_skills_dir=tmp_path / "global", watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        root = plan.skills["tool_global"].files_root
        run = await plan.filesystem.run(f"python3 {root}/scripts/run.py")
    assert run.stdout.strip() == "helper-ok", run.stderr


async def test_undecodable_names_in_a_skill_never_fail_the_turn(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha", files={"ok.txt": b"ok\n"})
    write_skill(skills, "beta")
    write_bytes_at(os.fsencode(skills / "alpha") + b"/caf\xe9.txt", b"latin-1 name")
    async with LocalFilesystem(tmp_path, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
    for plan in (alice, bob):
        assert sorted(plan.skills) == ["alpha_workspace", "beta_workspace"]
        assert plan.skills["alpha_workspace"].skill.files == ("ok.txt",)
    assert "workspace: name is not valid UTF-8, skipped: alpha/caf\\xe9.txt" in messages(alice)
    assert any(d.location == str(skills) for d in alice.diagnostics if "UTF-8" in d.message)


async def test_skill_md_at_the_layer_root_and_loose_files_are_reported_not_hiding_skills(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "alpha")
    (skills / "SKILL.md").write_bytes(skill_md("root"))
    (skills / "notes.md").write_text("# notes\n")
    (skills / "gamma" / "SKILL.md").mkdir(parents=True)
    async with LocalFilesystem(tmp_path) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert sorted(plan.skills) == ["alpha_workspace"]
    text = messages(plan)
    assert "workspace: SKILL.md at the top of the tree is not a skill" in text
    assert "workspace: loose file notes.md at the top of the tree is not a skill" in text
    assert "workspace: gamma/SKILL.md is a folder, not a file: ignored" in text


async def test_ignored_folders_are_neither_loaded_nor_listed(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(
        skills,
        "alpha",
        files={".gitignore": b"venv/\n*.log\n", "venv/bin/python": b"x", "run.log": b"x", "keep.py": b"x"},
    )
    write_skill(skills / "venv", "inside")
    (skills / ".ignore").write_text("venv/\n")
    async with LocalFilesystem(tmp_path) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert sorted(plan.skills) == ["alpha_workspace"]
    assert plan.skills["alpha_workspace"].skill.files == (".gitignore", "keep.py")


async def test_workspace_follows_a_linked_skill_folder_once_and_reports_it_as_a_link(tmp_path: Path) -> None:
    source = write_skill(tmp_path / "src", "mine", files={"scripts/run.sh": b"echo mine\n"})
    skills = tmp_path / "ws" / "skills"
    skills.mkdir(parents=True)
    (skills / "mine").symlink_to(source, target_is_directory=True)
    (skills / "mirror").symlink_to(source, target_is_directory=True)
    (source / "escape").symlink_to("/etc/passwd")
    async with LocalFilesystem(tmp_path / "ws") as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        assert list(plan.skills) == ["mine_workspace"]
        resolved = plan.skills["mine_workspace"]
        assert resolved.entry.link == str(source)
        assert await resolved.list_files() == ("scripts/run.sh",)
        assert await load_skill_file(plan, "mine", "scripts/run.sh") == "echo mine\n"
    text = messages(plan)
    assert "workspace: link mirror leads to a folder already loaded: skipped" in text
    assert "symlink skipped: mine/escape" in text


async def test_links_in_a_users_area_are_never_followed_and_each_is_named(tmp_path: Path) -> None:
    source = write_skill(tmp_path / "src", "mine")
    area = tmp_path / "ws" / "alice" / "skills"
    write_skill(area, "own")
    (area / "mine").symlink_to(source, target_is_directory=True)
    (area / "own" / "passwd").symlink_to("/etc/passwd")
    async with LocalFilesystem(tmp_path / "ws") as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert sorted(plan.skills) == ["own_workspace-namespaced"]
    assert plan.skills["own_workspace-namespaced"].skill.files == ()
    text = messages(plan)
    assert "workspace-namespaced: symlink skipped: mine" in text
    assert "workspace-namespaced: symlink skipped: own/passwd" in text


async def test_missing_global_dir_is_a_warning_and_the_turn_goes_on(tmp_path: Path) -> None:
    write_skill(tmp_path / "ws" / "skills", "alpha")
    async with (
        LocalFilesystem(tmp_path / "ws") as fs,
        SkillPipeline(filesystem=fs, global_skills_dir=tmp_path / "glbal", watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    assert list(plan.skills) == ["alpha_workspace"]
    (problem,) = [d for d in plan.diagnostics if d.code == "global-dir-missing"]
    assert problem.severity == "warning" and str(tmp_path / "glbal") in problem.message
    assert not (tmp_path / "glbal").exists()


async def test_global_dir_that_is_one_skill_folder_loads_that_skill(tmp_path: Path) -> None:
    single = write_skill(tmp_path, "solo", files={"scripts/run.sh": b"echo solo\n"})
    write_skill(tmp_path, "sibling")  # next to it, not part of the global layer
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, global_skills_dir=single, watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        assert list(plan.skills) == ["solo_global"]
        run = await plan.filesystem.run(f"sh {plan.skills['solo_global'].files_root}/scripts/run.sh")
    assert run.stdout.strip() == "solo"


# -- unreadable entries, as an unprivileged user ---------------------------------------------


def unreadable_tree(root: Path, tag: str = "") -> None:
    """alpha is fine; beta's SKILL.md and a folder inside gamma cannot be read."""
    write_skill(root, f"{tag}alpha")
    write_skill(root, f"{tag}beta").joinpath("SKILL.md").chmod(0)
    gamma = write_skill(root, f"{tag}gamma", files={"private/key.txt": b"k"})
    (gamma / "private").chmod(0)
    write_skill(root / "team" / ".hidden-dir", "delta")
    (root / "team" / ".hidden-dir").chmod(0)


def test_unreadable_entries_cost_only_their_own_skill_in_layers_and_markets() -> None:
    with shared_dir("hostile-layout-") as base:
        unreadable_tree(base / "ws" / "skills")
        unreadable_tree(base / "market", "m-")
        done = run_as_nobody(
            sys.executable, str(HERE / "layout_driver.py"), str(base / "ws"), str(base / "market"), "alice,bob"
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for user in ("alice", "bob"):
        # A folder layer lists a skill's folders on first use: gamma loads, and its unreadable
        # folder fails its listing (the load tool reports it) instead of the load.
        assert result[user]["skills"] == ["alpha_workspace", "gamma_workspace", "m-alpha_dir-market"]
        assert list(result[user]["unlisted"]) == ["gamma_workspace"]
        assert "skill gamma cannot be listed: part of it cannot be read" in result[user]["unlisted"]["gamma_workspace"]
        text = "\n".join(result[user]["diagnostics"])
        assert "workspace: cannot read skills/beta/SKILL.md, skill skipped" in text
        assert "workspace: cannot read folder team/.hidden-dir" in text
        assert "cannot read m-beta/SKILL.md, skill skipped" in text  # the market's own problems
        assert "skill m-gamma skipped: part of it cannot be read" in text


def test_validate_continues_past_unreadable_files_like_the_runtime() -> None:
    with shared_dir("hostile-validate-") as base:
        unreadable_tree(base / "skills")
        done = run_as_nobody(sys.executable, "-m", "harness", "skills", "validate", "--json", str(base / "skills"))
    reports = {Path(r["path"]).name: r for r in json.loads(done.stdout)}
    assert reports["alpha"]["errors"] == []
    assert "cannot read" in reports["skills"]["errors"][0]
    assert any("skill gamma skipped" in e for e in reports["skills"]["errors"])
    assert set(reports) == {"skills", "alpha", "beta"}  # beta's SKILL.md exists but is unreadable
    assert any("cannot read" in e for e in reports["beta"]["errors"])
    assert done.returncode == 1


# -- validate agrees with the runtime --------------------------------------------------------


async def test_validate_finds_the_skill_folders_the_runtime_loads(tmp_path: Path) -> None:
    skills = tmp_path / "ws" / "skills"
    write_tree(skills, CURATED)
    write_skill(skills / "team", "nested")
    source = write_skill(tmp_path / "src", "linked")
    (skills / "linked").symlink_to(source, target_is_directory=True)
    (skills / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkdir(os.fsencode(skills) + b"/odd\xff")
    found = discover_skill_dirs(skills)
    async with LocalFilesystem(tmp_path / "ws") as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    runtime = sorted(r.entry.path.removeprefix("skills/") for r in plan.skills.values())
    assert (
        sorted(str(p.relative_to(skills)) for p in found.folders)
        == runtime
        == [".curated/alpha", "beta", "linked", "team/nested"]
    )
    assert [f"workspace: {p}" for p in found.problems] == [
        d.message for d in plan.diagnostics if d.message.startswith("workspace: ")
    ]


# -- sandbox ---------------------------------------------------------------------------------


async def test_a_users_top_level_folder_hides_nested_workspace_skills_from_that_user_only(bwrap: str) -> None:
    with shared_dir("hostile-sandbox-") as ws:
        write_skill(ws / "skills" / "team", "alpha")
        (ws / "alice" / "skills" / "team").mkdir(parents=True)
        (ws / "alice" / "skills" / "team" / "notes.txt").write_text("alice's notes\n")
        async with SandboxFilesystem(ws, bwrap=bwrap) as fs, SkillPipeline(filesystem=fs) as pipeline:
            alice = await pipeline.prepare(ALICE)
            bob = await pipeline.prepare(BOB)
            root = bob.skills["alpha_workspace"].files_root
            assert root == "/workspace/skills/team/alpha"
            shown = await bob.filesystem.run(f"cat {root}/SKILL.md")
    assert alice.skills["alpha_workspace"].files_root is None
    (hidden,) = [d for d in alice.diagnostics if d.code == "files-root-hidden"]
    assert hidden.message.startswith("alpha_workspace: its folder is covered") and hidden.location == "alice"
    assert "/workspace/skills/team/alpha" not in alice.catalog
    assert shown.stdout.startswith("---\nname: alpha")


async def test_a_linked_workspace_skill_gets_no_files_root_a_sandbox_cannot_show(bwrap: str) -> None:
    with shared_dir("hostile-sandbox-") as base:
        source = write_skill(base / "src", "mine")
        (base / "ws" / "skills" / "team").mkdir(parents=True)
        (base / "ws" / "skills" / "team" / "mine").symlink_to(source, target_is_directory=True)
        async with SandboxFilesystem(base / "ws", bwrap=bwrap) as fs, SkillPipeline(filesystem=fs) as pipeline:
            plan = await pipeline.prepare(BOB)
    assert plan.skills["mine_workspace"].files_root is None
    assert any(d.code == "files-root-hidden" and str(source) in d.message for d in plan.diagnostics)


async def test_a_users_skills_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    write_skill(tmp_path / "ws" / "bob" / "skills", "bobs-secret")
    (tmp_path / "ws" / "alice").mkdir(parents=True)
    (tmp_path / "ws" / "alice" / "skills").symlink_to(tmp_path / "ws" / "bob" / "skills", target_is_directory=True)
    async with LocalFilesystem(tmp_path / "ws") as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert not plan.skills
    assert "workspace-namespaced: symlink skipped: skills (this folder is a link" in messages(plan)


async def test_a_store_without_host_files_applies_the_same_rules(tmp_path: Path) -> None:
    async with RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent") as fs:
        for path, data in CURATED.items():
            await fs.write_bytes(f"skills/{path}", data)
        async with SkillPipeline(filesystem=fs, watch=False) as pipeline:
            plan = await pipeline.prepare(ALICE)
    assert sorted(plan.skills) == ["alpha_workspace", "beta_workspace"]
    assert list(plan.skills["alpha_workspace"].skill.files) == ALPHA_FILES


async def test_a_folder_layer_at_the_root_of_its_filesystem_loads_without_following_links(tmp_path: Path) -> None:
    write_skill(tmp_path / "tree", "alpha")
    (tmp_path / "tree" / "linked").symlink_to(write_skill(tmp_path / "src", "beta"), target_is_directory=True)
    repository = DirectoryRepository(tmp_path / "tree", source="user", nested=True)
    result = await SkillLayer(repository, layer=Layer.USER).load()
    assert [e.skill.name for e in result.entries] == ["alpha"]
    assert [d.message for d in result.diagnostics] == ["user: symlink skipped: linked"]

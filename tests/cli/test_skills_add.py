"""``harness skills add SOURCE NAME``: copies a market skill into skills/, validated, never over an existing one;
from an MCP server, the real files, verified (a dynamic skill's marked unverified); from hostile sources (a
crafted git tree, a well-known site's archive, a plugin marketplace, a folder of links) nothing outside the
target folder is written and no link is followed or copied."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from tests.skills_compat.layouts import BINARY, public_skill
from tests.support.cli import run_harness
from tests.support.git import GitRemote
from tests.support.reliability import tree_state
from tests.support.skills import make_skill
from tests.support.skills_server import SkillsServer
from tests.support.wellknown import Site, serve, tar_gz


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args)


@pytest.fixture
def git_market(tmp_path: Path) -> str:
    remote = GitRemote(tmp_path / "git")
    public_skill(remote.work / "collection" / "reporting", "report")
    make_skill(remote.work / "collection", "broken", name="Not_A_Valid_Name")
    remote.commit("skills")
    return f"git+{remote.url}"


def test_add_copies_a_git_skill_with_its_modes_into_the_workspace(tmp_path: Path, git_market: str) -> None:
    ws = tmp_path / "ws"
    result = _cli("skills", "add", git_market, "report", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    folder = ws / "skills" / "report"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        ".gitignore",
        "SKILL.md",
        "assets/logo.bin",
        "scripts/lib/helpers.py",
        "scripts/report.py",
        "scripts/run.sh",
    ]
    assert (folder / "assets" / "logo.bin").read_bytes() == BINARY
    assert stat.S_IMODE((folder / "scripts" / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "scripts" / "report.py").stat().st_mode) == 0o755  # a script, stored 100644
    assert stat.S_IMODE((folder / "assets" / "logo.bin").stat().st_mode) == 0o644


def test_an_added_skill_is_listed_and_its_python_script_runs(tmp_path: Path, git_market: str) -> None:
    ws = tmp_path / "ws"
    assert _cli("skills", "add", git_market, "report", "--workspace", str(ws)).returncode == 0
    assert "report" in _cli("skills", "list", "--workspace", str(ws)).stdout
    shell = LocalFilesystem(ws, shell=True)
    ran = anyio.run(lambda: shell.run("./scripts/run.sh", cwd="skills/report"))
    assert ran.stdout == "report from report.py 3\n", ran.stderr


def test_add_with_user_writes_into_the_users_skills(tmp_path: Path) -> None:
    ws, market = tmp_path / "ws", tmp_path / "market"
    public_skill(market, "report")
    result = _cli("skills", "add", f"dir:{market}", "report", "--workspace", str(ws), "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert (ws / "alice" / "skills" / "report" / "scripts" / "report.py").is_file()
    assert not (ws / "skills").exists()


def test_an_invalid_skill_is_refused_and_nothing_is_written(tmp_path: Path, git_market: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    result = _cli("skills", "add", git_market, "broken", "--workspace", str(ws))
    assert result.returncode == 1
    assert "not valid" in result.stderr and "broken" in result.stderr
    assert tree_state(ws) == {}


def test_an_existing_skill_is_refused_without_force(tmp_path: Path) -> None:
    ws, market = tmp_path / "ws", tmp_path / "market"
    public_skill(market, "report", description="From the market.")
    make_skill(ws / "skills", "report", description="Our own.")
    before = tree_state(ws)
    result = _cli("skills", "add", f"dir:{market}", "report", "--workspace", str(ws))
    assert result.returncode == 1 and "--force" in result.stderr
    assert tree_state(ws) == before


def test_force_replaces_the_existing_skill_whole(tmp_path: Path) -> None:
    ws, market = tmp_path / "ws", tmp_path / "market"
    public_skill(market, "report", description="From the market.")
    make_skill(ws / "skills", "report", description="Our own.", files={"old.txt": "stale"})
    result = _cli("skills", "add", f"dir:{market}", "report", "--workspace", str(ws), "--force")
    assert result.returncode == 0, result.stderr
    assert "From the market." in (ws / "skills" / "report" / "SKILL.md").read_text()
    assert not (ws / "skills" / "report" / "old.txt").exists()


def test_an_unknown_skill_is_refused_naming_what_the_market_offers(tmp_path: Path, git_market: str) -> None:
    result = _cli("skills", "add", git_market, "nope", "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 1 and "nope" in result.stderr and "report" in result.stderr


def test_a_linked_skill_folder_is_not_copied(tmp_path: Path) -> None:
    ws, market, elsewhere = tmp_path / "ws", tmp_path / "market", tmp_path / "elsewhere"
    public_skill(elsewhere, "secret")
    market.mkdir()
    os.symlink(elsewhere / "secret", market / "secret")
    result = _cli("skills", "add", f"dir:{market}", "secret", "--workspace", str(ws))
    assert result.returncode == 1
    assert not (ws / "skills" / "secret").exists()


@pytest.mark.parametrize("name", ["../escape", "a/../b", "a//b", ".hidden", "team/.git"])
def test_a_name_that_is_not_a_path_of_folder_names_is_refused(tmp_path: Path, git_market: str, name: str) -> None:
    result = _cli("skills", "add", git_market, name, "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 1 and "one folder name" in result.stderr
    assert not (tmp_path / "ws").exists()


def test_same_named_mcp_skills_are_refused_by_name_and_added_by_path(tmp_path: Path) -> None:
    server, ws = SkillsServer(tmp_path / "server"), tmp_path / "ws"
    for team in ("team-a", "team-b"):
        server.add(f"{team}/dupe", {"SKILL.md": f"---\nname: dupe\ndescription: From {team}.\n---\nBody of {team}.\n"})
    ambiguous = _cli("skills", "add", _mcp_market(server), "dupe", "--workspace", str(ws))
    assert ambiguous.returncode == 1
    assert "2 skills named 'dupe' (team-a/dupe, team-b/dupe)" in ambiguous.stderr
    assert not (ws / "skills").exists()
    chosen = _cli("skills", "add", _mcp_market(server), "team-b/dupe", "--workspace", str(ws))
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.startswith("added dupe to ")
    assert "Body of team-b." in (ws / "skills" / "dupe" / "SKILL.md").read_text()


def _mcp_market(server: SkillsServer) -> str:
    return "mcp+stdio:" + shlex.join(server.command) + "#source=srv&timeout=120"


def _mcp_server(tmp_path: Path) -> SkillsServer:
    server = SkillsServer(tmp_path / "server")
    server.add("verified", {"SKILL.md": _MCP_SKILL, "scripts/run.sh": "#!/bin/sh\necho verified ran\n"})
    server.add("daily", {"SKILL.md": _MCP_SKILL.replace("verified", "daily"), "notes/today.md": "Made fresh.\n"})
    server.configure(dynamic=["daily"])
    return server


_MCP_SKILL = "---\nname: verified\ndescription: Served over MCP.\n---\n# Steps\nRun scripts/run.sh.\n"


def test_add_from_an_mcp_market_writes_the_real_verified_files(tmp_path: Path) -> None:
    server, ws = _mcp_server(tmp_path), tmp_path / "ws"
    result = _cli("skills", "add", _mcp_market(server), "verified", "--workspace", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    added = json.loads(result.stdout)
    assert added["files"] == ["SKILL.md", "scripts/run.sh"] and added["unverified"] is None
    folder = ws / "skills" / "verified"
    assert (folder / "SKILL.md").read_text() == _MCP_SKILL  # the real one, not the listing's stand-in
    assert stat.S_IMODE((folder / "scripts" / "run.sh").stat().st_mode) == 0o755
    assert sorted(server.reads()) == ["skill://verified/SKILL.md", "skill://verified/scripts/run.sh"]


def test_add_from_an_mcp_market_refuses_a_file_that_does_not_match_its_listing(tmp_path: Path) -> None:
    server, ws = _mcp_server(tmp_path), tmp_path / "ws"
    ws.mkdir()
    listed = "sha256:" + hashlib.sha256(b"#!/bin/sh\necho verified ran\n").hexdigest()
    server.add("verified", {"SKILL.md": _MCP_SKILL, "scripts/run.sh": "#!/bin/sh\necho tampered\n"})
    server.configure(dynamic=["daily"], lies={"skill://verified/scripts/run.sh": listed})
    result = _cli("skills", "add", _mcp_market(server), "verified", "--workspace", str(ws))
    assert result.returncode == 1
    assert "'scripts/run.sh'" in result.stderr and listed in result.stderr and "refused" in result.stderr
    assert tree_state(ws) == {}


def test_add_of_a_dynamic_mcp_skill_copies_what_the_directory_reads_find_marked_unverified(tmp_path: Path) -> None:
    server, ws = _mcp_server(tmp_path), tmp_path / "ws"
    result = _cli("skills", "add", _mcp_market(server), "daily", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    folder = ws / "skills" / "daily"
    assert (folder / "notes" / "today.md").read_text() == "Made fresh.\n"
    assert "Run scripts/run.sh." in (folder / "SKILL.md").read_text()
    first, second = result.stdout.splitlines()
    assert first.startswith("added daily to ")
    assert second.startswith("unverified: 'daily' is a dynamic skill of 'srv'") and "2 file(s)" in second
    assert server.count("resources/directory/read") > 0


# Hostile sources: what `skills add` writes stays inside the skill's target folder, links are
# never followed or copied, and nothing outside the workspace is touched.


def _files(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` by relative path: ``link``, ``dir`` or ``file``."""
    return {
        p.relative_to(folder).as_posix(): "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
        for p in sorted(folder.rglob("*"))
    }


def _md(name: str) -> bytes:
    return f"---\nname: {name}\ndescription: Use for {name} tasks.\n---\nDo {name}.\n".encode()


def _crafted_git_market(remote: GitRemote, *, backslash: bool) -> str:
    """A skill ``tool`` whose git tree holds what no checkout could: a ``..`` folder, ``.git``, a
    symlink out, a submodule and (with ``backslash``) a name with backslashes."""

    def git(*args: str, data: bytes = b"") -> str:
        done = subprocess.run(["git", *args], cwd=remote.work, env=remote.env, input=data, capture_output=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode().strip()

    def tree(*entries: tuple[str, str, str, str]) -> str:
        listing = "".join(f"{mode} {kind} {oid}\t{name}\n" for mode, kind, oid, name in sorted(entries, key=_git_order))
        return git("mktree", data=listing.encode())

    def blob(data: bytes) -> str:
        return git("hash-object", "-w", "--stdin", data=data)

    evil = blob(b"#!/bin/sh\necho pwned\n")
    up = tree(("100755", "blob", evil, "escape.sh"))
    scripts = tree(
        ("100755", "blob", blob(b"#!/bin/sh\necho ok\n"), "run.sh"),
        ("120000", "blob", blob(b"/etc/passwd"), "passwd"),
        ("120000", "blob", blob(b"../../../.."), "root"),
    )
    entries = [
        ("100644", "blob", blob(_md("tool")), "SKILL.md"),
        ("040000", "tree", up, ".."),
        ("040000", "tree", up, ".git"),
        ("040000", "tree", scripts, "scripts"),
        ("160000", "commit", "0" * 40, "vendored"),
    ]
    if backslash:
        entries.append(("100755", "blob", evil, "..\\..\\escape.sh"))
    commit = git("commit-tree", tree(("040000", "tree", tree(*entries), "tool")), "-m", "crafted")
    git("push", "--quiet", "--force", "origin", f"{commit}:refs/heads/main")
    return f"git+{remote.url}"


def _git_order(entry: tuple[str, str, str, str]) -> bytes:
    return entry[3].encode() + (b"/" if entry[1] == "tree" else b"")


def test_add_from_a_crafted_git_tree_writes_only_the_skills_clean_files(tmp_path: Path) -> None:
    market = _crafted_git_market(GitRemote(tmp_path / "git"), backslash=False)
    ws = tmp_path / "ws"
    result = _cli("skills", "add", market, "tool", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    assert _files(ws) == {
        "skills": "dir",
        "skills/tool": "dir",
        "skills/tool/SKILL.md": "file",
        "skills/tool/scripts": "dir",
        "skills/tool/scripts/run.sh": "file",
    }
    assert not list(tmp_path.rglob("escape.sh"))


def test_add_of_a_crafted_git_skill_listing_an_unsafe_path_is_refused_whole(tmp_path: Path) -> None:
    market = _crafted_git_market(GitRemote(tmp_path / "git"), backslash=True)
    ws = tmp_path / "ws"
    result = _cli("skills", "add", market, "tool", "--workspace", str(ws))
    assert result.returncode == 1
    assert "skill 'tool'" in result.stderr and "..\\\\..\\\\escape.sh" in result.stderr, result.stderr
    assert "not added" in result.stderr
    assert not ws.exists() and not list(tmp_path.rglob("escape.sh"))


def test_add_from_a_folder_copies_no_link_and_follows_none(tmp_path: Path) -> None:
    ws, market, outside = tmp_path / "ws", tmp_path / "market", tmp_path / "outside"
    make_skill(market, "tool", files={"scripts/run.sh": "echo ok\n"})
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (market / "tool" / "scripts" / "secret.txt").symlink_to(outside / "secret.txt")
    (market / "tool" / "data").symlink_to(outside)
    (market / "tool" / "dangling").symlink_to(tmp_path / "nowhere")
    result = _cli("skills", "add", f"dir:{market}", "tool", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    assert _files(ws / "skills" / "tool") == {"SKILL.md": "file", "scripts": "dir", "scripts/run.sh": "file"}


@pytest.mark.parametrize("force", [False, True])
def test_add_never_writes_through_a_link_in_the_target(tmp_path: Path, force: bool) -> None:
    ws, market, outside = tmp_path / "ws", tmp_path / "market", tmp_path / "outside"
    make_skill(market, "tool", files={"scripts/run.sh": "echo ok\n"})
    make_skill(market, "new")
    make_skill(outside, "tool", description="Not the workspace's.", files={"keep.txt": "keep"})
    (ws / "skills").mkdir(parents=True)
    (ws / "skills" / "tool").symlink_to(outside / "tool")  # the target is a link out
    (ws / "skills" / "new").symlink_to(outside / "new")  # a dangling link out
    before = tree_state(outside)
    flags = ["--force"] if force else []
    for name in ("tool", "new"):  # refused, --force or not: neither is the workspace's to replace
        result = _cli("skills", "add", f"dir:{market}", name, "--workspace", str(ws), *flags)
        assert result.returncode == 1 and "outside the filesystem root" in result.stderr, result.stderr
    assert tree_state(outside) == before and not (outside / "new").exists()
    assert (ws / "skills" / "tool").is_symlink() and (ws / "skills" / "new").is_symlink()


def test_add_into_a_skills_folder_that_links_out_is_refused(tmp_path: Path) -> None:
    ws, market, outside = tmp_path / "ws", tmp_path / "market", tmp_path / "outside"
    make_skill(market, "tool")
    outside.mkdir()
    ws.mkdir()
    (ws / "skills").symlink_to(outside)
    result = _cli("skills", "add", f"dir:{market}", "tool", "--workspace", str(ws))
    assert result.returncode == 1 and "outside" in result.stderr
    assert tree_state(outside) == {}


def test_add_from_a_well_known_site_skips_hostile_archive_entries(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    archive = tar_gz(
        {
            "SKILL.md": _md("tool"),
            "scripts/run.sh": (b"echo ok\n", 0o755),
            "../../escape.sh": b"x",
            "/abs.sh": b"x",
            ".env": b"TOKEN=1\n",
        },
        links={"scripts/passwd": "/etc/passwd"},
    )
    site.add("tool", archive, kind="archive")
    ws = tmp_path / "ws"
    with serve(site.root) as base:
        result = _cli("skills", "add", base, "tool", "--workspace", str(ws))
    assert result.returncode == 0, result.stderr
    assert _files(ws / "skills" / "tool") == {"SKILL.md": "file", "scripts": "dir", "scripts/run.sh": "file"}
    assert not list(tmp_path.rglob("escape.sh")) and not list(tmp_path.rglob("abs.sh"))


def test_add_from_a_plugin_marketplace_cannot_reach_past_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_skill(outside / "skills", "secret")
    market = tmp_path / "market"
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(
            {
                "plugins": [
                    {"name": "up", "source": "../outside"},
                    {"name": "abs", "source": str(outside)},
                    {"name": "host", "source": {"source": "url", "url": outside.as_uri()}},
                    {"name": "linked", "source": "./linked"},
                ]
            }
        )
    )
    (market / "linked").symlink_to(outside)
    ws = tmp_path / "ws"
    result = _cli("skills", "add", f"claude-plugins+dir:{market}", "secret", "--workspace", str(ws))
    assert result.returncode == 1 and "no skill 'secret'" in result.stderr
    assert not (ws / "skills").exists()

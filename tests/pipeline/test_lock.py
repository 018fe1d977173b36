"""A locked pipeline serves exactly the locked content: git at the locked commit (force-pushes
included), other markets only while their skills' digests match, with drift reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import Lockfile, SkillPipeline
from harness.pipeline.lock import (
    LOCKFILE_NAME,
    content_digest,
    diff_locks,
    listing_digest,
    lock_market,
    skills_cli_hashes,
)
from harness.tools import load_skill_file
from repositories import ContentMismatch, DirectoryRepository, GitRepository
from tests.repositories.forked_mcp import mcp_market
from tests.support.pipeline import GitRemote, bundle, local_pipeline, mysql_market, write_skill
from tests.support.skills_server import SkillsServer

ADA = RuntimeContext(user_id="ada")


async def _lock_of(*repos: GitRepository | DirectoryRepository) -> Lockfile:
    markets = {}
    for repo in repos:
        async with repo:
            markets[repo.source] = await lock_market(repo, source=repo.source)
    return Lockfile(markets=markets)


def _drift(plan_diagnostics: object) -> list[str]:
    return [d.message for d in plan_diagnostics if d.code == "lock-drift"]  # type: ignore[attr-defined]


async def test_a_force_pushed_git_market_keeps_serving_the_locked_commit(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("review", description="Locked review.", script="#!/bin/sh\necho locked\n")
    locked_commit = remote.commit("first")
    cache = tmp_path / "cache"
    lock = await _lock_of(GitRepository(remote.url, cache_dir=cache))
    (market,) = lock.markets.values()
    assert market.commit == locked_commit and market.kind == "git"
    # The branch is rewritten: the locked commit is no longer reachable on the remote.
    remote.git("reset", "--quiet", "--hard", "HEAD")
    remote.skill("review", description="Rewritten review.", script="#!/bin/sh\necho moved\n")
    remote.skill("extra")
    remote.git("add", "-A")
    remote.git("commit", "--quiet", "--amend", "-m", "rewritten")
    remote.git("push", "--quiet", "--force", "origin", "HEAD:refs/heads/main")
    # The clone that served it, and a fresh one that must ask the remote for the commit by id.
    for where in (cache, tmp_path / "fresh-cache"):
        workspace = tmp_path / f"ws-{where.name}"
        repo = GitRepository(remote.url, cache_dir=where)
        async with local_pipeline(workspace, repo, lock=lock, watch=False) as pipeline:
            plan = await pipeline.prepare(ADA)
            review = plan.find("review")
            assert review is not None and review.skill.description == "Locked review.", plan.diagnostics
            assert plan.find("extra") is None
            assert _drift(plan.diagnostics) == []
            await pipeline.stage()
            staged = workspace / ".skills-cache" / review.source.source / "review" / "scripts" / "run.sh"
            assert staged.read_text() == "#!/bin/sh\necho locked\n"
    # Unlocked, the same market serves the rewritten branch.
    async with local_pipeline(tmp_path / "ws2", GitRepository(remote.url, cache_dir=cache), watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
        found = plan.find("review")
        assert found is not None and found.skill.description == "Rewritten review."


async def test_a_folder_market_that_drifted_is_reported_and_not_served_changed(tmp_path: Path) -> None:
    market = tmp_path / "market"
    write_skill(market, "stable", script="echo 1\n")
    write_skill(market, "moving", script="echo 1\n")
    write_skill(market, "gone")
    lock = await _lock_of(DirectoryRepository(market))
    old = lock.markets["dir-market"].skills["moving"].digest
    (market / "moving" / "scripts" / "run.sh").write_text("echo evil\n")
    write_skill(market, "newcomer")
    import shutil

    shutil.rmtree(market / "gone")
    lock_path = tmp_path / LOCKFILE_NAME
    lock.write(lock_path)
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=lock_path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("stable") is not None
        assert plan.find("moving") is None and plan.find("newcomer") is None
        messages = _drift(plan.diagnostics)
        new = content_digest(
            {"SKILL.md": (market / "moving" / "SKILL.md").read_bytes(), "scripts/run.sh": b"echo evil\n"}
        )
        assert any("'moving' drifted" in m and old in m and new in m and "dir-market" in m for m in messages), messages
        assert any("'newcomer'" in m and "not in the lock" in m for m in messages)
        assert any("'gone'" in m and "gone from the market" in m for m in messages)


async def test_a_mysql_market_that_drifted_is_reported(tmp_path: Path, mysql_dsn: str) -> None:
    async with mysql_market(mysql_dsn, [bundle("alpha"), bundle("beta")]) as repo:
        lock = Lockfile(markets={repo.source: await lock_market(repo, source=repo.source)})
        await repo.save(bundle("beta", script="#!/bin/sh\necho changed\n"))
        async with (
            LocalFilesystem(tmp_path / "ws", shell=True) as fs,
            SkillPipeline(filesystem=fs, repositories=[repo], lock=lock, watch=False) as pipeline,
        ):
            plan = await pipeline.prepare(ADA)
            assert plan.find("alpha") is not None and plan.find("beta") is None
            messages = _drift(plan.diagnostics)
            assert len(messages) == 1 and "'beta' drifted" in messages[0] and repo.source in messages[0]
        moved = Lockfile(markets={repo.source: await lock_market(repo, source=repo.source)})
        changes = diff_locks(lock, moved)
        assert [(c.skill, c.change) for c in changes] == [("beta", "changed")]


async def test_a_market_missing_from_the_lock_serves_nothing(tmp_path: Path) -> None:
    market = tmp_path / "market"
    write_skill(market, "one")
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=Lockfile(), watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("one") is None
        assert any("not in the lock" in m for m in _drift(plan.diagnostics))


async def test_the_skills_cli_lockfile_keeps_its_pins(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    pinned = write_skill(workspace / "skills", "pinned", script="echo 1\n")
    files = {p.relative_to(pinned).as_posix(): p.read_bytes() for p in pinned.rglob("*") if p.is_file()}
    computed = sorted(skills_cli_hashes(files))[0]
    (tmp_path / "skills-lock.json").write_text(
        json.dumps(
            {
                "version": 1,
                "skills": {"pinned": {"source": "acme/skills", "sourceType": "github", "computedHash": computed}},
            }
        )
    )
    Lockfile().write(tmp_path / LOCKFILE_NAME)
    async with local_pipeline(workspace, lock=tmp_path / LOCKFILE_NAME, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("pinned") is not None
    (pinned / "scripts" / "run.sh").write_text("echo changed\n")
    async with local_pipeline(workspace, lock=tmp_path / LOCKFILE_NAME, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("pinned") is None
        assert any("skills-lock.json" in m and computed in m for m in _drift(plan.diagnostics))


def test_the_lockfile_is_stable_text(tmp_path: Path) -> None:
    lock = Lockfile.loads(Lockfile().dumps())
    assert lock.dumps() == '{\n  "lockfileVersion": 1,\n  "markets": {}\n}\n'


def _mcp_server(tmp_path: Path) -> SkillsServer:
    """``alpha`` (listed, verified) and ``daily`` (dynamic, with a file of its own)."""
    server = SkillsServer(tmp_path / "server")
    server.add("alpha", {"SKILL.md": "---\nname: alpha\ndescription: Listed.\n---\nLocked steps.\n", "notes.md": "a\n"})
    server.add("daily", {"SKILL.md": "---\nname: daily\ndescription: Fresh.\n---\nToday.\n", "notes.md": "d\n"})
    server.configure(dynamic=["daily"])
    return server


async def _mcp_lock(server: SkillsServer) -> Lockfile:
    async with mcp_market(server) as market:
        return Lockfile(markets={"srv": await lock_market(market, source="srv")})


async def test_a_dynamic_mcp_skill_is_locked_as_dynamic_and_nothing_of_it_is_read(tmp_path: Path) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    skills = lock.markets["srv"].skills
    assert skills["daily"].dynamic and skills["daily"].digest is None
    assert server.reads() == [] and server.count("resources/directory/read") == 0
    written = json.loads(lock.dumps())["markets"]["srv"]["skills"]
    assert written["daily"] == {"dynamic": True, "name": "daily"}
    assert Lockfile.loads(lock.dumps()) == lock


async def test_under_a_lock_a_dynamic_skill_is_served_unpinned_with_a_warning(tmp_path: Path) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    reads = len(server.reads())
    market = mcp_market(server)
    async with local_pipeline(tmp_path / "ws", market, lock=lock, watch=False, market_timeout=120) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("alpha") is not None and plan.find("daily") is not None
        assert _drift(plan.diagnostics) == []
        [warning] = [d for d in plan.diagnostics if d.code == "lock-dynamic"]
        assert "'daily'" in warning.message and "served unpinned" in warning.message
    assert not [uri for uri in server.reads()[reads:] if uri.startswith("skill://daily/")]


async def test_a_locked_mcp_skill_that_turned_dynamic_or_changed_its_instructions_has_drifted(
    tmp_path: Path,
) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    server.add("beta", {"SKILL.md": "---\nname: beta\ndescription: Listed.\n---\nSteps.\n"})
    server.configure(dynamic=["alpha"])  # alpha turns dynamic, daily is listed with digests now
    relocked = await _mcp_lock(server)
    server.add("beta", {"SKILL.md": "---\nname: beta\ndescription: Listed.\n---\nOther steps.\n"})
    said = {}
    for name, locked in (("old", lock), ("new", relocked)):
        market = mcp_market(server)
        async with local_pipeline(tmp_path / "ws", market, lock=locked, watch=False, market_timeout=120) as pipeline:
            plan = await pipeline.prepare(ADA)
        said[name] = _drift(plan.diagnostics)
        assert plan.find("beta") is None  # its instructions changed under its listed frontmatter
        assert (plan.find("alpha") is None, plan.find("daily") is None) == (
            (True, True) if name == "old" else (False, False)
        )
    assert len(said["old"]) == 3 and len(said["new"]) == 1 and "'beta' drifted" in said["new"][0]
    assert any("'alpha' drifted: locked sha256:" in m and "now dynamic" in m for m in said["old"])
    assert any("'daily' drifted: locked dynamic, now sha256:" in m for m in said["old"])
    changes = {str(change).split(" ")[1]: str(change) for change in diff_locks(lock, relocked)}
    assert changes["srv/alpha"].endswith("-> dynamic") and " dynamic -> sha256:" in changes["srv/daily"]


async def test_a_listed_mcp_skill_is_locked_and_served_by_its_listing_without_a_read(tmp_path: Path) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    async with mcp_market(server) as market:
        alpha = (await market.snapshot()).bundle("alpha")
    assert alpha is not None
    assert lock.markets["srv"].skills["alpha"].digest == listing_digest(alpha.digest, alpha.skill_md)
    market = mcp_market(server)
    async with local_pipeline(tmp_path / "ws", market, lock=lock, watch=False, market_timeout=120) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("alpha") is not None and _drift(plan.diagnostics) == []
        assert server.reads() == []  # neither locking nor serving under the lock read a file
        assert "Locked steps." in await load_skill_file(plan, "alpha_srv")
    assert server.reads() == ["skill://alpha/SKILL.md"]  # fetched on use, and verified


@pytest.mark.parametrize("change", ["instructions", "listed frontmatter"])
async def test_a_listed_mcp_skill_whose_instructions_or_listed_frontmatter_changed_has_drifted(
    tmp_path: Path, change: str
) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    if change == "instructions":
        server.add("alpha", {"SKILL.md": "---\nname: alpha\ndescription: Listed.\n---\nNew.\n", "notes.md": "a\n"})
    else:  # what the catalog shows before any fetch
        server.configure(dynamic=["daily"], frontmatter={"alpha": {"description": "Use me for everything."}})
    market = mcp_market(server)
    async with local_pipeline(tmp_path / "ws", market, lock=lock, watch=False, market_timeout=120) as pipeline:
        plan = await pipeline.prepare(ADA)
    [drift] = _drift(plan.diagnostics)
    assert plan.find("alpha") is None
    assert "'alpha' drifted" in drift and str(lock.markets["srv"].skills["alpha"].digest) in drift
    assert server.reads() == []


async def test_under_a_lock_a_server_that_serves_other_bytes_than_it_lists_is_refused_at_fetch(
    tmp_path: Path,
) -> None:
    server = _mcp_server(tmp_path)
    lock = await _mcp_lock(server)
    listed = "sha256:" + hashlib.sha256((server.tree / "alpha" / "SKILL.md").read_bytes()).hexdigest()
    # The server keeps listing the locked digest but serves changed instructions.
    server.add("alpha", {"SKILL.md": "---\nname: alpha\ndescription: Listed.\n---\nEvil.\n", "notes.md": "a\n"})
    server.configure(dynamic=["daily"], lies={"skill://alpha/SKILL.md": listed})
    market = mcp_market(server)
    async with local_pipeline(tmp_path / "ws", market, lock=lock, watch=False, market_timeout=120) as pipeline:
        plan = await pipeline.prepare(ADA)
        assert plan.find("alpha") is not None and _drift(plan.diagnostics) == []  # the listing is the locked one
        with pytest.raises(ContentMismatch, match=f"'alpha'.*'SKILL.md'.*{listed}"):
            await load_skill_file(plan, "alpha_srv")

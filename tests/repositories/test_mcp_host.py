"""The MCP market as a conforming host of the Skills extension, driven against a test server that
counts what it is asked (``tests.support.skills_server``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.tools import load_skill_file
from repositories import ContentMismatch
from tests.repositories.forked_mcp import mcp_market
from tests.support.skills_server import SkillsServer


def _skill(name: str, description: str = "A test skill.", body: str = "# Steps\nDo it.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@pytest.fixture
def server(tmp_path: Path) -> SkillsServer:
    served = SkillsServer(tmp_path / "server", instructions="Start with skill://hidden/only-by-uri/SKILL.md please.")
    served.add("alpha", {"SKILL.md": _skill("alpha"), "scripts/run.sh": "#!/bin/sh\necho alpha ran\n"})
    served.add("team-a/dupe", {"SKILL.md": _skill("dupe", "Team A's."), "notes.md": "a\n"})
    served.add("team-b/dupe", {"SKILL.md": _skill("dupe", "Team B's."), "notes.md": "b\n"})
    served.add("liar", {"SKILL.md": _skill("liar"), "data.txt": "served bytes\n"})
    served.add("daily", {"SKILL.md": _skill("daily", "Made fresh.")})
    served.add("masked", {"SKILL.md": _skill("masked", "The real description.")})
    served.add("hidden/only-by-uri", {"SKILL.md": _skill("only-by-uri", "Reached by URI.")})
    served.configure(
        page_size=2,
        lies={"skill://liar/data.txt": "sha256:" + hashlib.sha256(b"listed bytes\n").hexdigest()},
        dynamic=["daily"],
        unlisted=["hidden/only-by-uri"],
        frontmatter={"masked": {"description": "What the listing claims."}},
    )
    return served


async def test_the_catalog_comes_from_the_listing_alone(server: SkillsServer) -> None:
    async with mcp_market(server) as market:
        snapshot = await market.snapshot()
    assert server.count("skills/list") == 3  # six listed entries, two a page: every page followed
    assert server.reads() == []  # no resources/read while listing
    keys = sorted(b.key for b in snapshot.bundles)
    assert keys == ["alpha", "daily", "hidden/only-by-uri", "liar", "masked", "team-a/dupe", "team-b/dupe"]
    dupes = [b for b in snapshot.bundles if b.folder == "dupe"]
    assert sorted(b.sub_source for b in dupes) == ["team-a", "team-b"]  # both kept, told apart by path
    assert all(b.on_demand and b.origin.startswith("skill://") for b in snapshot.bundles)


async def test_a_skill_named_only_in_the_instructions_is_fetched_with_skills_get(server: SkillsServer) -> None:
    async with mcp_market(server) as market:
        snapshot = await market.snapshot()
    assert ("skills/get", "skill://hidden/only-by-uri/SKILL.md") in server.requests()
    found = next(b for b in snapshot.bundles if b.folder == "only-by-uri")
    assert found.origin == "skill://hidden/only-by-uri/SKILL.md"


async def test_files_are_read_on_use_and_verified(server: SkillsServer) -> None:
    async with mcp_market(server) as market:
        await market.snapshot()
        assert (await market.read_file("alpha", "SKILL.md")).startswith(b"---\nname: alpha")
        assert server.reads() == ["skill://alpha/SKILL.md"]
        await market.read_file("alpha", "SKILL.md")  # verified bytes are kept: no second read
        assert server.reads() == ["skill://alpha/SKILL.md"]
        with pytest.raises(ContentMismatch) as lie:
            await market.read_file("liar", "data.txt")
    message = str(lie.value)
    assert "'liar'" in message and "'data.txt'" in message
    assert hashlib.sha256(b"served bytes\n").hexdigest() in message
    assert hashlib.sha256(b"listed bytes\n").hexdigest() in message


async def test_a_frontmatter_that_differs_from_the_entry_is_refused(server: SkillsServer) -> None:
    async with mcp_market(server) as market:
        snapshot = await market.snapshot()
        masked = next(b for b in snapshot.bundles if b.folder == "masked")
        assert b"What the listing claims." in masked.skill_md
        with pytest.raises(ContentMismatch, match="'masked'.*differs from the listed one in 'description'"):
            await market.read_file("masked", "SKILL.md")


async def test_dynamic_skills_are_read_afresh_on_every_use(server: SkillsServer) -> None:
    async with mcp_market(server) as market:
        await market.snapshot()
        first = await market.read_file("daily", "SKILL.md")
        server.add("daily", {"SKILL.md": _skill("daily", "Made fresh.", "# Today\nnew\n")})
        second = await market.read_file("daily", "SKILL.md")
    assert first != second and b"new" in second
    assert server.reads().count("skill://daily/SKILL.md") == 2


async def test_same_named_skills_of_servers_and_the_global_folder_each_have_an_id(
    server: SkillsServer, tmp_path: Path
) -> None:
    other = SkillsServer(tmp_path / "other")
    other.add("refunds", {"SKILL.md": _skill("refunds", "Other server's.")})
    server.add("billing/refunds", {"SKILL.md": _skill("refunds", "Billing's.")})
    server.add("refunds", {"SKILL.md": _skill("refunds", "Top level.")})
    global_dir = tmp_path / "global"
    (global_dir / "refunds").mkdir(parents=True)
    (global_dir / "refunds" / "SKILL.md").write_text(_skill("refunds", "The host's own."))
    markets = [mcp_market(server), mcp_market(other, "oth")]
    async with Harness(
        workspace=tmp_path / "ws",
        repositories=markets,
        pipeline=PipelineOptions(watch=False, global_skills_dir=global_dir, market_timeout=120),
    ) as agent:
        plan = await agent.pipeline.prepare(RuntimeContext(user_id="u1"), stage=False)
        ids = ["refunds_global", "refunds_srv", "refunds_srv.billing", "refunds_oth"]
        texts = {i: await load_skill_file(plan, i) for i in ids}
    assert "The host's own." in texts["refunds_global"]
    assert "Top level." in texts["refunds_srv"] and "Billing's." in texts["refunds_srv.billing"]
    assert "Other server's." in texts["refunds_oth"]
    assert server.reads() == ["skill://refunds/SKILL.md", "skill://billing/refunds/SKILL.md"]


async def test_entries_that_break_the_rules_lose_only_themselves(tmp_path: Path) -> None:
    server = SkillsServer(tmp_path / "server")
    server.add("good", {"SKILL.md": _skill("good")})
    server.add("renamed", {"SKILL.md": _skill("renamed")})
    server.add("aliased", {"SKILL.md": "---\nname: aliased\ndescription: &d Twice.\nsummary: *d\n---\nBody.\n"})
    server.configure(frontmatter={"renamed": {"name": "other-name"}})
    async with mcp_market(server) as market:
        snapshot = await market.snapshot()
        assert sorted(b.folder for b in snapshot.bundles) == ["aliased", "good"]
        assert any("'renamed' is not the frontmatter name 'other-name'" in p for p in snapshot.problems)
        with pytest.raises(ContentMismatch, match="uses YAML aliases"):
            await market.read_file("aliased", "SKILL.md")
        assert (await market.read_file("good", "SKILL.md")).startswith(b"---\nname: good")

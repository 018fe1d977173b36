"""The MCP market as a conforming host of the Skills extension, driven against a test server that
counts what it is asked (``tests.support.skills_server``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.tools import load_skill_file, render_skill_file
from repositories import ContentMismatch
from tests.repositories.forked_mcp import mcp_market
from tests.support.polling import eventually
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
    served.add(
        "daily",
        {
            "SKILL.md": _skill("daily", "Made fresh.", "# Steps\nRead references/sources.md, run scripts/report.sh.\n"),
            "references/sources.md": "The feeds of today.\n",
            "scripts/report.sh": "#!/bin/sh\necho report\n",
        },
    )
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


def _directory_reads(server: SkillsServer) -> list[str]:
    return [uri for method, uri in server.requests() if method == "resources/directory/read"]


async def test_a_dynamic_skills_files_are_found_by_directory_reads_and_read_on_use(
    server: SkillsServer, tmp_path: Path
) -> None:
    market = mcp_market(server)
    async with Harness(
        workspace=tmp_path / "ws", repositories=[market], pipeline=PipelineOptions(watch=False, market_timeout=120)
    ) as agent:
        plan = await agent.pipeline.prepare(RuntimeContext(user_id="u1"), stage=False)
        assert server.reads() == [] and _directory_reads(server) == []  # nothing ahead of use
        text = await render_skill_file(plan, "daily_srv", shell=False)
        assert "Read references/sources.md" in text and "a dynamic skill): it has no digest" in text
        assert server.reads() == ["skill://daily/SKILL.md"] and _directory_reads(server) == []
        sources = await load_skill_file(plan, "daily_srv", "references/sources.md")
        # The root and each folder, every page followed (two children a page; the root has three).
        walked = ["skill://daily", "skill://daily", "skill://daily/scripts", "skill://daily/references"]
        assert "The feeds of today." in sources and _directory_reads(server) == walked
        assert server.reads() == ["skill://daily/SKILL.md", "skill://daily/references/sources.md"]
        assert "echo report" in await load_skill_file(plan, "daily_srv", "scripts/report.sh")
        await load_skill_file(plan, "daily_srv", "references/sources.md")  # read afresh, the folders are not
        assert _directory_reads(server) == walked
        assert server.reads()[2:] == ["skill://daily/scripts/report.sh", "skill://daily/references/sources.md"]
        with pytest.raises(FileNotFoundError, match="references/sources.md, scripts/report.sh"):
            await load_skill_file(plan, "daily_srv", "references/missing.md")
        problems = [d.message for d in plan.diagnostics if "skill://daily/SKILL.md" in d.message]
    assert len(problems) == 1 and "publishes no digests, so nothing of it is verified" in problems[0]


async def test_skill_environments_never_read_a_dynamic_skill_ahead_of_use(server: SkillsServer, tmp_path: Path) -> None:
    async with Harness(
        workspace=tmp_path / "ws",
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120, environments=True),
    ) as agent:
        await agent.pipeline.prepare(RuntimeContext(user_id="u1"))
        environments = agent.pipeline.environments
        assert environments is not None

        async def idle() -> bool:
            return environments.idle

        await eventually(idle, within=120, what="the environments worker to go idle")
    assert _directory_reads(server) == []
    assert "skill://daily/SKILL.md" not in server.reads()


async def test_without_directory_reads_only_a_dynamic_skills_skill_md_is_reached(tmp_path: Path) -> None:
    server = SkillsServer(tmp_path / "server")
    server.add("daily", {"SKILL.md": _skill("daily"), "notes.md": "hidden from the host\n"})
    server.configure(dynamic=["daily"], directory_read=False)
    async with mcp_market(server) as market:
        snapshot = await market.snapshot()
        assert (await market.list_files("daily")).files == ()
        assert (await market.read_file("daily", "SKILL.md")).startswith(b"---\nname: daily")
    assert any("does not declare directoryRead" in p for p in snapshot.problems)
    assert _directory_reads(server) == []  # never asked of a server that did not declare it


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


async def test_a_refused_file_is_a_content_mismatch_without_a_kept_connection(server: SkillsServer) -> None:
    market = mcp_market(server)  # not entered: a connection per call
    await market.snapshot()
    with pytest.raises(ContentMismatch, match="'liar'.*'data.txt'"):
        await market.read_file("liar", "data.txt")

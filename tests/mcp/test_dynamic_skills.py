"""A skill that reached the harness as another MCP server's dynamic skill, served again by the
harness's own catalog: still dynamic, nothing read to list it, its files reached by directory reads."""

from __future__ import annotations

from pathlib import Path

from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.mcp import SkillCatalog
from repositories.mcp import McpRepository
from tests.support.skills_server import SkillsServer


async def test_a_dynamic_skill_is_served_as_dynamic_and_its_files_stay_reachable(tmp_path: Path) -> None:
    upstream = SkillsServer(tmp_path / "upstream")
    upstream.add(
        "daily",
        {
            "SKILL.md": "---\nname: daily\ndescription: Made fresh.\n---\nRead references/today.md.\n",
            "references/today.md": "Today's numbers.\n",
        },
    )
    upstream.add("steady", {"SKILL.md": "---\nname: steady\ndescription: Listed.\n---\nSteps.\n"})
    upstream.configure(dynamic=["daily"])
    catalog = SkillCatalog()
    async with Harness(
        workspace=tmp_path / "ws",
        repositories=[McpRepository(command=upstream.command, source="up")],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
    ) as agent:
        plan = await agent.pipeline.prepare(RuntimeContext(user_id="u1"), stage=False)
        listing = await catalog.listing(plan)
        entries = {entry["frontmatter"]["name"]: entry for entry in listing.skills}
        assert entries["daily"]["resources"] == "dynamic"
        assert [r["uri"] for r in entries["steady"]["resources"]] == ["skill://steady/SKILL.md"]
        assert upstream.reads() == ["skill://steady/SKILL.md"]  # hashed for its manifest; daily not read
        assert upstream.count("resources/directory/read") == 0
        children = await catalog.directory(plan, "skill://daily")
        assert [(c["name"], c["mimeType"]) for c in children] == [
            ("SKILL.md", "text/markdown"),
            ("references", "inode/directory"),
        ]
        data, _ = await catalog.read(plan, "skill://daily/references/today.md")
    assert data == b"Today's numbers.\n"
    assert upstream.reads()[-1] == "skill://daily/references/today.md"

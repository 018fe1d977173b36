"""Attacks through a dynamic MCP skill, whose files the host finds by reading the server's
directories: children that climb out, belong to another skill, hide VCS metadata or flood the
listing, and a scripted model that tries to run the skill's script."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent import Harness, PipelineOptions
from harness.approval import ToolRequest
from harness.context import RuntimeContext
from harness.models import Message, ScriptedModel
from harness.tools import load_skill_file
from repositories import InvalidBundle, mcp
from tests.agent.test_mcp_activation import ALICE, LOAD, SHELL, call, results_by_id
from tests.repositories.forked_mcp import mcp_agent, mcp_market
from tests.support.skills_server import SkillsServer

SKILL_ID = "daily_srv"


def _server(tmp_path: Path, **config: object) -> SkillsServer:
    server = SkillsServer(tmp_path / "server")
    server.add(
        "daily",
        {
            "SKILL.md": "---\nname: daily\ndescription: Made fresh.\n---\nRun scripts/report.sh.\n",
            "scripts/report.sh": '#!/bin/sh\necho ran > "$OUTPUT_DIR/ran"\n',
        },
    )
    server.add("alpha", {"SKILL.md": "---\nname: alpha\ndescription: Another.\n---\nSecret steps.\n"})
    server.configure(dynamic=["daily"], **config)
    return server


async def test_directory_children_outside_the_skill_are_never_listed_or_read(tmp_path: Path) -> None:
    hostile = [
        {"uri": "skill://daily/../alpha/SKILL.md", "name": "SKILL.md"},
        {"uri": "skill://alpha/SKILL.md", "name": "SKILL.md"},
        {"uri": "skill://daily/.", "name": ".", "mimeType": "inode/directory"},
        {"uri": "skill://daily/.git", "name": ".git", "mimeType": "inode/directory"},
        {"uri": "skill://daily/a/b.md", "name": "b.md"},
        {"uri": "skill://daily/bad\\name.md", "name": "bad\\name.md"},
        "not an object",
    ]
    server = _server(tmp_path, children={"skill://daily": hostile}, page_size=50)
    async with Harness(
        workspace=tmp_path / "ws",
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
    ) as agent:
        plan = await agent.pipeline.prepare(RuntimeContext(user_id="u1"), stage=False)
        assert "echo ran" in await load_skill_file(plan, SKILL_ID, "scripts/report.sh")
        for path in ("../alpha/SKILL.md", "a/b.md", ".git/config", "alpha/SKILL.md"):
            with pytest.raises((FileNotFoundError, PermissionError)):
                await load_skill_file(plan, SKILL_ID, path)
    directories = [uri for method, uri in server.requests() if method == "resources/directory/read"]
    assert directories == ["skill://daily", "skill://daily/scripts"]  # no hostile folder entered
    assert server.reads() == ["skill://daily/scripts/report.sh"]


async def test_a_flood_of_directory_children_is_refused_at_the_extensions_limit(tmp_path: Path) -> None:
    flood = [{"uri": f"skill://daily/f{i}.md", "name": f"f{i}.md", "size": 1} for i in range(600)]
    server = _server(tmp_path, children={"skill://daily": flood}, page_size=1000)
    async with mcp_market(server) as market:
        await market.snapshot()
        with pytest.raises(InvalidBundle, match="more than the extension's limit of 512 files"):
            await market.list_files("daily")
    assert server.reads() == []


async def test_a_directory_that_never_ends_is_refused_after_a_bounded_number_of_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bound is the extension's file limit (512 pages, one request each); a smaller one here
    # walks the same code in a fraction of the requests.
    assert mcp.MAX_FILES == 512
    monkeypatch.setattr(mcp, "MAX_FILES", 24)
    # Each page names a folder one level deeper: the walk would never end.
    deeper = {
        f"skill://daily{'/d' * depth}": [
            {"uri": f"skill://daily{'/d' * (depth + 1)}", "name": "d", "mimeType": "inode/directory"}
        ]
        for depth in range(40)
    }
    server = _server(tmp_path, children=deeper)
    for depth in range(1, 41):
        (server.tree / "daily" / "/".join(["d"] * depth)).mkdir(exist_ok=True)
    async with mcp_market(server) as market:
        await market.snapshot()
        with pytest.raises(InvalidBundle, match="more than 24 pages"):
            await market.list_files("daily")
    assert server.count("resources/directory/read") == 24


async def test_a_hostile_model_cannot_run_a_dynamic_skills_script(tmp_path: Path) -> None:
    server = _server(tmp_path)
    asked: list[ToolRequest] = []

    async def approver(request: ToolRequest) -> bool:
        asked.append(request)
        return True  # a user who approves anything: still nothing can bind to dynamic content

    attempts = [
        {"command": "sh scripts/report.sh", "skill": SKILL_ID},
        {"command": "sh report.sh", "skill": SKILL_ID, "cwd": "scripts"},
    ]
    script: list[Message | str] = [call(LOAD, "load", skillId=SKILL_ID)]
    script += [call(LOAD, "read", skillId=SKILL_ID, path="scripts/report.sh")]
    script += [call(SHELL, f"a{i}", **arguments) for i, arguments in enumerate(attempts)]
    script.append("gave up")
    async with mcp_agent(server, ScriptedModel(script), workspace=tmp_path / "ws", approver=approver) as agent:
        result = await agent.run("run the report any way you can", context=ALICE)
    results = results_by_id(result.events)
    assert "echo ran" in results["read"].content  # the script is reachable as text
    for index in range(len(attempts)):
        assert results[f"a{index}"].error, attempts[index]
    assert not (tmp_path / "ws" / "alice" / "ran").exists()
    assert not (tmp_path / "ws" / ".skills-cache" / "srv" / "daily").exists()  # never staged

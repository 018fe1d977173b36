"""A request that finds nothing changed reads no file: the pipeline's warm path and the manifest cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from harness.mcp import SkillServer
from harness.pipeline import SkillPipeline
from tests.support.filesystems import open_filesystem
from tests.support.io import IORecorder
from tests.support.mcp import call
from tests.support.skills import make_skill


async def test_a_warm_request_opens_lists_and_writes_nothing(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "shared")
    make_skill(tmp_path / "alice" / "skills", "mine", files={"notes/a.md": "a\n"})
    async with (
        open_filesystem("local-shell", tmp_path) as fs,
        SkillPipeline(filesystem=fs) as pipeline,
    ):
        server = SkillServer(pipeline)
        server.bind_user("alice")
        async with Client(server.server, cache=None) as client:
            cold = await call(client, "skills/list")
            with IORecorder() as warm_events:
                warm = await call(client, "skills/list")
                await call(client, "skills/get", {"uri": "skill://mine/SKILL.md"})
                await client.list_prompts()
    assert warm_events == []
    assert warm["skills"] == cold["skills"]


async def test_without_a_principal_nothing_is_served(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "shared")
    async with (
        open_filesystem("local", tmp_path) as fs,
        SkillPipeline(filesystem=fs, watch=False) as pipeline,
    ):
        server = SkillServer(pipeline)  # neither bound to a user nor behind a token check
        async with Client(server.server, cache=None) as client:
            assert (await call(client, "skills/list"))["skills"] == []
            assert (await client.list_resources()).resources == []
            assert (await client.list_tools()).tools == [] and (await client.list_prompts()).prompts == []
            with pytest.raises(MCPError, match="without an authenticated user"):
                await client.read_resource("skill://shared/SKILL.md")


async def test_skills_list_pages_follow_the_cursor(tmp_path: Path) -> None:
    for name in ("a-one", "b-two", "c-three"):
        make_skill(tmp_path / "skills", name)
    async with (
        open_filesystem("local", tmp_path) as fs,
        SkillPipeline(filesystem=fs, watch=False) as pipeline,
    ):
        server = SkillServer(pipeline, page_size=2)
        server.bind_user("alice")
        async with Client(server.server, cache=None) as client:
            first = await call(client, "skills/list")
            second = await call(client, "skills/list", {"cursor": first["nextCursor"]})
            with pytest.raises(MCPError, match="was not given by this server"):
                await call(client, "skills/list", {"cursor": "../x"})
    assert [s["frontmatter"]["name"] for s in first["skills"]] == ["a-one", "b-two"]
    assert [s["frontmatter"]["name"] for s in second["skills"]] == ["c-three"] and "nextCursor" not in second

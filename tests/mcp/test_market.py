"""``McpRepository``: a market reading skills from ``harness mcp serve`` (a second real process)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.tools import load_skill_file
from repositories import ContentMismatch, InvalidRepositoryConfig, RepositoryUnavailable, open_repository
from repositories.mcp import McpRepository
from tests.mcp.test_serve import TOKENS, _workspace
from tests.support.cli import python_command
from tests.support.io import started_subprocesses
from tests.support.mcp import HttpServer, free_port, serve_command
from tests.support.polling import eventually

HOSTILE = Path(__file__).with_name("hostile_server.py")


async def test_http_market_serves_the_users_skills_and_files_on_demand(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {TOKENS['alice']}\n")
    async with HttpServer(ws, tokens) as server:
        async with McpRepository(url=server.url, token=TOKENS["alice"]) as market:
            assert market.source == f"mcp-127.0.0.1-{server.port}"
            snapshot = await market.snapshot()
            assert [b.folder for b in snapshot.bundles] == ["alpha", "shared"]
            alpha = snapshot.bundle("alpha")
            assert alpha is not None and alpha.location == f"{server.url} skill://alpha/SKILL.md"
            assert [f.path for f in alpha.files] == ["references/guide.md", "scripts/run.sh"]
            assert await market.read_file("alpha", "references/guide.md") == b"# Guide\nstep one\n"
            assert await market.version() == snapshot.version  # the listing's digests: unchanged

            (ws / "alice" / "skills" / "alpha" / "references" / "guide.md").write_text("# Guide\nstep two\n")
            edited = await eventually(market.snapshot, lambda s: s.version != snapshot.version, what="a new version")
            assert edited.bundle("alpha") != alpha
            assert await market.read_file("alpha", "references/guide.md") == b"# Guide\nstep two\n"

            server.stop()
            offline = await market.snapshot()
            assert offline.error is not None and [b.folder for b in offline.bundles] == ["alpha", "shared"]

            async with HttpServer(ws, tokens, port=server.port):  # back again: the market reconnects
                back = await eventually(market.snapshot, lambda s: s.error is None, what="the market reconnecting")
                assert back.version == edited.version


async def test_stdio_market_feeds_another_harness_through_the_registry(tmp_path: Path) -> None:
    served = _workspace(tmp_path / "served")
    url = "mcp+stdio:" + shlex.join(serve_command(served, "--user", "alice"))
    async with Harness(
        workspace=tmp_path / "other", repositories=[open_repository(url)], pipeline=PipelineOptions(watch=False)
    ) as agent:
        plan = await agent.pipeline.prepare(RuntimeContext(user_id="carol"), stage=False)
        alpha = plan.find("alpha")
        assert alpha is not None and alpha.skill.skill_id == "alpha_mcp-harness"
        assert alpha.skill.layer.value == "market"
        text = await load_skill_file(plan, "alpha", "references/guide.md")
        assert "step one" in text


async def test_an_open_stdio_market_starts_its_server_once(tmp_path: Path) -> None:
    served = _workspace(tmp_path)
    with started_subprocesses() as started:
        async with McpRepository(command=serve_command(served, "--user", "alice")) as market:
            first = await market.snapshot()
            assert await market.version() == first.version
            assert await market.read_file("alpha", "references/guide.md") == b"# Guide\nstep one\n"
            assert await market.read_file("alpha", "scripts/run.sh") == b"#!/bin/sh\necho run\n"
    assert [argv[1:3] for argv in started] == [["mcp", "serve"]]


async def test_a_hostile_server_loses_only_what_is_wrong() -> None:
    async with McpRepository(command=python_command(HOSTILE)) as market:
        snapshot = await market.snapshot()
        # A dynamic skill is listed (its files are read afresh on use); a liar only fails when read.
        assert [b.folder for b in snapshot.bundles] == ["dyn", "good", "liar"]
        good = snapshot.bundle("good")
        assert good is not None and [f.path for f in good.files] == ["ok.txt", "tampered.txt"]
        problems = "\n".join(snapshot.problems)
        for refused in ("escape.txt", ".git/config", ".hidden", "skill://big"):
            assert refused in problems
        assert await market.read_file("good", "ok.txt") == b"fine\n"
        with pytest.raises(ContentMismatch, match="'tampered.txt'.*listing says 13 bytes"):
            await market.read_file("good", "tampered.txt")
        with pytest.raises(ContentMismatch, match="'liar'"):
            await market.read_file("liar", "SKILL.md")


async def test_an_unreachable_server_without_a_snapshot_is_unavailable() -> None:
    async with McpRepository(url=f"http://127.0.0.1:{free_port()}/mcp", timeout=10) as market:
        with pytest.raises(RepositoryUnavailable):
            await market.snapshot()


def test_registry_urls_name_the_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLS_TOKEN", "t0ken-value")
    http = open_repository("mcp+https://skills.example.com/mcp#token_env=SKILLS_TOKEN&check_interval=30")
    assert isinstance(http, McpRepository) and http.source == "mcp-skills.example.com"
    assert http.url == "https://skills.example.com/mcp" and http.check_interval == 30
    stdio = open_repository("mcp+stdio:harness mcp serve --user 'a b'#source=team&uris=skill://a/b/SKILL.md")
    assert isinstance(stdio, McpRepository) and stdio.command == ("harness", "mcp", "serve", "--user", "a b")
    assert stdio.source == "team" and stdio.uris == ("skill://a/b/SKILL.md",)
    with pytest.raises(InvalidRepositoryConfig, match="not a skill://<path>/SKILL.md URI"):
        open_repository("mcp+stdio:x#uris=file:///etc/passwd")

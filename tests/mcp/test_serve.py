"""``harness mcp serve`` as a real subprocess, driven by the MCP SDK's client over stdio and HTTP."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPError

from harness.mcp import EXTENSION, MAX_FILES, OMITTED_META
from tests.support.mcp import HttpServer, call, http_client, stdio_client
from tests.support.polling import eventually
from tests.support.skills import make_skill

TOKENS = {"alice": "alice-token-0001", "bob": "bob-token-0002"}
Connect = Callable[[str], AbstractAsyncContextManager[Client]]


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    make_skill(ws / "skills", "shared", description="For everyone.")
    make_skill(
        ws / "alice" / "skills",
        "alpha",
        description="Alice's research skill.",
        extra='argument-hint: "[topic]"\nlicense: Apache-2.0\nmetadata:\n  version: "1.2"\n',
        body="Research $ARGUMENTS carefully.\n",
        files={"references/guide.md": "# Guide\nstep one\n", "scripts/run.sh": "#!/bin/sh\necho run\n"},
    )
    make_skill(ws / "bob" / "skills", "bravo", description="Bob's skill.")
    return ws


def _tokens(root: Path) -> Path:
    tokens = root / "tokens.yaml"
    tokens.write_text("".join(f"{user}: {token}\n" for user, token in TOKENS.items()))
    return tokens


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return _workspace(tmp_path)


@pytest.fixture(scope="module")
def shared_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace of the tests that only read: no test changes it."""
    return _workspace(tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="module")
def shared_http(shared_ws: Path) -> Iterator[HttpServer]:
    """One HTTP server over :func:`shared_ws` for the whole module."""
    server = HttpServer(shared_ws, _tokens(shared_ws.parent))
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(server):
        yield server


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, shared_ws: Path) -> Connect:
    """Connects as a user to :func:`shared_ws`: over stdio a server per user, over HTTP one
    server and a token each."""
    if request.param == "stdio":
        return lambda user: stdio_client(shared_ws, user)
    server: HttpServer = request.getfixturevalue("shared_http")
    return lambda user: http_client(server.url, TOKENS[user])


@pytest.fixture(params=["stdio", "http"])
async def connect_own(request: pytest.FixtureRequest, ws: Path, tmp_path: Path) -> AsyncIterator[Connect]:
    """Like :func:`connect`, to a server of the test's own ``ws``, which the test may change."""
    if request.param == "stdio":
        yield lambda user: stdio_client(ws, user)
        return
    async with HttpServer(ws, _tokens(tmp_path)) as server:
        yield lambda user: http_client(server.url, TOKENS[user])


def _names(listing: dict[str, Any]) -> list[str]:
    return sorted(skill["frontmatter"]["name"] for skill in listing["skills"])


async def test_each_user_lists_their_own_merged_skills(connect: Connect) -> None:
    async with connect("alice") as alice:
        assert EXTENSION in (alice.server_capabilities.extensions or {})
        assert _names(await call(alice, "skills/list")) == ["alpha", "shared"]
    async with connect("bob") as bob:
        assert _names(await call(bob, "skills/list")) == ["bravo", "shared"]


async def test_an_entry_carries_verbatim_frontmatter_and_a_digest_per_file(connect: Connect, shared_ws: Path) -> None:
    async with connect("alice") as alice:
        listing = await call(alice, "skills/list")
        entry = next(s for s in listing["skills"] if s["frontmatter"]["name"] == "alpha")
        assert entry["uri"] == "skill://alpha/SKILL.md"
        assert entry["frontmatter"] == {
            "name": "alpha",
            "description": "Alice's research skill.",
            "argument-hint": "[topic]",
            "license": "Apache-2.0",
            "metadata": {"version": "1.2"},
        }
        folder = shared_ws / "alice" / "skills" / "alpha"
        expected = {
            f"skill://alpha/{path}": (folder / path).read_bytes()
            for path in ("SKILL.md", "references/guide.md", "scripts/run.sh")
        }
        assert {r["uri"]: (r["digest"], r["size"]) for r in entry["resources"]} == {
            uri: ("sha256:" + hashlib.sha256(data).hexdigest(), len(data)) for uri, data in expected.items()
        }
        assert await call(alice, "skills/get", {"uri": "skill://alpha/SKILL.md"}) | {"_meta": None} == {
            "skill": entry,
            "ttlMs": 0,
            "cacheScope": "private",
            "resultType": "complete",
            "_meta": None,
        }


async def test_a_file_read_matches_its_listed_digest(connect: Connect) -> None:
    async with connect("alice") as alice:
        listing = await call(alice, "skills/list")
        listed = {r["uri"]: r for s in listing["skills"] for r in s["resources"]}
        read = await alice.read_resource("skill://alpha/references/guide.md")
        data = read.contents[0].text.encode()  # type: ignore[union-attr]
        assert data == b"# Guide\nstep one\n"
        assert listed["skill://alpha/references/guide.md"]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()


async def test_directories_list_their_direct_children(connect: Connect) -> None:
    async with connect("alice") as alice:
        root = await call(alice, "resources/directory/read", {"uri": "skill://alpha"})
        assert [(r["name"], r["mimeType"]) for r in root["resources"]] == [
            ("SKILL.md", "text/markdown"),
            ("references", "inode/directory"),
            ("scripts", "inode/directory"),
        ]
        inner = await call(alice, "resources/directory/read", {"uri": "skill://alpha/references"})
        assert [r["uri"] for r in inner["resources"]] == ["skill://alpha/references/guide.md"]
        with pytest.raises(MCPError) as caught:
            await call(alice, "resources/directory/read", {"uri": "skill://alpha/SKILL.md"})
        assert caught.value.error.code == -32602


async def test_tool_only_clients_load_skills_and_read_files(connect: Connect) -> None:
    async with connect("alice") as alice:
        tools = {t.name for t in (await alice.list_tools()).tools}
        assert tools == {"load_skill", "read_skill_resource"}  # no shell unless the operator allows it
        loaded = await alice.call_tool("load_skill", {"name": "alpha"})
        text = loaded.content[0].text  # type: ignore[union-attr]
        assert "Research $ARGUMENTS carefully." in text and "references/guide.md" in text
        read = await alice.call_tool("read_skill_resource", {"skill_name": "alpha", "path": "references/guide.md"})
        assert "step one" in read.content[0].text  # type: ignore[union-attr]
        missing = await alice.call_tool("load_skill", {"name": "bravo"})
        assert missing.is_error


async def test_each_user_invocable_skill_is_a_prompt_with_its_arguments(connect: Connect) -> None:
    async with connect("alice") as alice:
        prompts = {p.name: p for p in (await alice.list_prompts()).prompts}
        assert set(prompts) == {"alpha", "shared"}
        assert [(a.name, a.description) for a in prompts["alpha"].arguments or []] == [("arguments", "[topic]")]
        prompt = await alice.get_prompt("alpha", {"arguments": "tidal energy"})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "Research tidal energy carefully." in text and 'location="skill://alpha"' in text


async def test_an_edit_shows_on_a_later_request(connect_own: Connect, ws: Path) -> None:
    guide = ws / "alice" / "skills" / "alpha" / "references" / "guide.md"
    async with connect_own("alice") as alice:
        before = await call(alice, "skills/list")
        guide.write_text("# Guide\nstep two\n")

        async def digest() -> str:
            listing = await call(alice, "skills/list")
            alpha = next(s for s in listing["skills"] if s["frontmatter"]["name"] == "alpha")
            return str(next(r["digest"] for r in alpha["resources"] if r["uri"].endswith("guide.md")))

        old = next(r["digest"] for s in before["skills"] for r in s["resources"] if r["uri"].endswith("guide.md"))
        new = await eventually(digest, lambda d: d != old, what="the edited digest")
        assert new == "sha256:" + hashlib.sha256(b"# Guide\nstep two\n").hexdigest()
        read = await alice.read_resource("skill://alpha/references/guide.md")
        assert read.contents[0].text == "# Guide\nstep two\n"  # type: ignore[union-attr]
        tool = await alice.call_tool("read_skill_resource", {"skill_name": "alpha", "path": "references/guide.md"})
        assert "step two" in tool.content[0].text  # type: ignore[union-attr]


async def test_a_skill_over_the_extension_limits_is_reported_not_listed(ws: Path) -> None:
    make_skill(ws / "alice" / "skills", "huge", files={f"data/{i}.txt": "x" for i in range(MAX_FILES)})
    async with stdio_client(ws, "alice") as alice:
        listing = await call(alice, "skills/list")
        assert "huge" not in _names(listing)
        [omitted] = listing["_meta"][OMITTED_META]
        assert omitted["uri"] == "skill://huge/SKILL.md" and f"limit of {MAX_FILES}" in omitted["reason"]
        with pytest.raises(MCPError) as caught:
            await call(alice, "skills/get", {"uri": "skill://huge/SKILL.md"})
        assert f"limit of {MAX_FILES}" in caught.value.error.message


async def test_the_shell_tool_is_offered_only_when_allowed(ws: Path) -> None:
    async with stdio_client(ws, "alice", "--allow-shell") as alice:
        assert "execute_shell_command" in {t.name for t in (await alice.list_tools()).tools}
        ran = await alice.call_tool("execute_shell_command", {"command": "echo hello"})
        assert "hello" in ran.content[0].text  # type: ignore[union-attr]


async def test_http_without_a_known_token_is_refused(shared_http: HttpServer) -> None:
    async with httpx2.AsyncClient() as raw:
        body = {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer not-a-known-token"}):
            answer = await raw.post(shared_http.url, json=body, headers=headers)
            assert answer.status_code == 401
            assert "skill" not in answer.text


async def test_a_skill_whose_uri_cannot_carry_its_name_is_reported_not_served(ws: Path) -> None:
    make_skill(ws / "alice" / "skills", "Bad_Name")  # loads (with a warning) under a name the rules refuse
    make_skill(ws / "alice" / "skills", "nameless", text="---\ndescription: No name field.\n---\n# Nameless\n")
    async with stdio_client(ws, "alice") as alice:
        listing = await call(alice, "skills/list")
        assert _names(listing) == ["alpha", "shared"]
        reasons = {item["uri"]: item["reason"] for item in listing["_meta"][OMITTED_META]}
        assert set(reasons) == {"skill://Bad_Name/SKILL.md", "skill://nameless/SKILL.md"}
        assert "naming rules" in reasons["skill://Bad_Name/SKILL.md"]
        assert "must be lowercase" in reasons["skill://Bad_Name/SKILL.md"]
        assert "no name field" in reasons["skill://nameless/SKILL.md"]
        for uri, reason in reasons.items():
            with pytest.raises(MCPError) as caught:
                await call(alice, "skills/get", {"uri": uri})
            assert caught.value.error.code == -32602 and reason in caught.value.error.message
            with pytest.raises(MCPError, match="is not served"):
                await alice.read_resource(uri)
            with pytest.raises(MCPError, match="is not served"):
                await call(alice, "resources/directory/read", {"uri": uri.removesuffix("/SKILL.md")})
        listed = {str(r.uri) for r in (await alice.list_resources()).resources}
        assert listed == {"skill://alpha/SKILL.md", "skill://shared/SKILL.md"}

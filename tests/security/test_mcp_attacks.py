"""Bob, connected to ``harness mcp serve``, tries every route to Alice's skills and the host's files.

Over stdio the operator named Bob; over HTTP Bob holds his own token. Every skill URI, tool
argument, prompt and directory read that points at Alice's skill or out of a skill folder must
fail without one byte of what it points at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.mcp import HttpServer, call, http_client, stdio_client
from tests.support.skills import make_skill

SECRET = "ALICE-PRIVATE-4417"
HOST_SECRET = "HOST-FILE-9920"

URIS = [
    "skill://alpha/SKILL.md",
    "skill://alpha/notes.md",
    "skill://shared/../alpha/SKILL.md",
    "skill://bravo/../../alice/skills/alpha/SKILL.md",
    "skill://bravo/%2e%2e/%2e%2e/alice/skills/alpha/SKILL.md",
    "skill://bravo/..%2F..%2Falice/skills/alpha/SKILL.md",
    "skill://bravo//etc/passwd",
    "skill://bravo/../../../host.txt",
    "skill://alice/skills/alpha/SKILL.md",
    "file:///etc/passwd",
]
TOOL_CALLS = [
    ("load_skill", {"name": "alpha"}),
    ("load_skill", {"name": "alpha_workspace-namespaced"}),
    ("read_skill_resource", {"skill_name": "alpha", "path": "notes.md"}),
    ("read_skill_resource", {"skill_name": "bravo", "path": "../../alice/skills/alpha/notes.md"}),
    ("read_skill_resource", {"skill_name": "shared", "path": "/etc/passwd"}),
    ("read_skill_resource", {"skill_name": "shared", "path": "../../../host.txt"}),
    ("execute_shell_command", {"command": "cat ../alice/skills/alpha/notes.md"}),
]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alice's, Bob's and the shared skills, and a host file beside the workspace; Bob's attacks
    only read, so the module shares them."""
    root = tmp_path_factory.mktemp("mcp-attacks")
    (root / "host.txt").write_text(HOST_SECRET)
    ws = root / "ws"
    make_skill(ws / "skills", "shared")
    make_skill(ws / "alice" / "skills", "alpha", body=f"{SECRET}\n", files={"notes.md": SECRET})
    make_skill(ws / "bob" / "skills", "bravo")
    (root / "tokens.yaml").write_text("alice: alice-token-0001\nbob: bob-token-0002\n")
    return ws


@pytest.fixture(scope="module")
def http_server(ws: Path) -> Iterator[HttpServer]:
    """One HTTP server over :func:`ws` for the module."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(HttpServer(ws, ws.parent / "tokens.yaml")) as server,
    ):
        yield server


@pytest.fixture(params=["stdio", "http"])
def as_bob(request: pytest.FixtureRequest, ws: Path) -> Callable[[], AbstractAsyncContextManager[Client]]:
    """Connects as Bob (entered in the test: the SDK's client must close in the task that opened it)."""
    if request.param == "stdio":
        return lambda: stdio_client(ws, "bob")
    server: HttpServer = request.getfixturevalue("http_server")
    return lambda: http_client(server.url, "bob-token-0002")


def _clean(value: Any) -> None:
    text = str(value)
    assert SECRET not in text and HOST_SECRET not in text and "root:" not in text


async def test_bob_lists_only_his_merged_skills(as_bob: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with as_bob() as bob:
        await _bob_lists_only_his_merged_skills(bob)


async def _bob_lists_only_his_merged_skills(bob: Client) -> None:
    listing = await call(bob, "skills/list")
    assert sorted(s["frontmatter"]["name"] for s in listing["skills"]) == ["bravo", "shared"]
    _clean(listing)
    _clean(await bob.list_resources())
    _clean(await bob.list_prompts())


async def test_no_uri_reaches_alice_or_the_host(as_bob: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with as_bob() as bob:
        await _no_uri_reaches_alice_or_the_host(bob)


async def _no_uri_reaches_alice_or_the_host(bob: Client) -> None:
    for uri in URIS:
        for method, params in (
            ("resources/read", {"uri": uri}),
            ("skills/get", {"uri": uri}),
            ("resources/directory/read", {"uri": uri.removesuffix("/SKILL.md")}),
        ):
            with pytest.raises(MCPError) as caught:
                await call(bob, method, params)
            assert caught.value.error.code == -32602, (method, uri)
            _clean(caught.value.error)


async def test_no_tool_call_reaches_alice_or_the_host(
    as_bob: Callable[[], AbstractAsyncContextManager[Client]],
) -> None:
    async with as_bob() as bob:
        await _no_tool_call_reaches_alice_or_the_host(bob)


async def _no_tool_call_reaches_alice_or_the_host(bob: Client) -> None:
    for tool, arguments in TOOL_CALLS:
        try:
            result = await bob.call_tool(tool, arguments)
        except MCPError as exc:  # the shell tool is not offered without --allow-shell
            _clean(exc.error)
            continue
        assert result.is_error, (tool, arguments)
        _clean(result)


async def test_alices_skill_is_not_a_prompt_for_bob(as_bob: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
    async with as_bob() as bob:
        await _alices_skill_is_not_a_prompt_for_bob(bob)


async def _alices_skill_is_not_a_prompt_for_bob(bob: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await bob.get_prompt("alpha", {"arguments": "x"})
    _clean(caught.value.error)

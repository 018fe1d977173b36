"""What a client learns when it connects, on the current protocol revision and on earlier ones:
the server's version, and that it serves the Skills extension."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

import harness
from harness.mcp import EXTENSION
from tests.support.mcp import CODE, HttpServer, call, serve_command
from tests.support.skills import make_skill

TOKEN = "alice-token-0001"
Connect = Callable[[str], AbstractAsyncContextManager[Client]]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alice's workspace, which no test changes."""
    root = tmp_path_factory.mktemp("revisions")
    make_skill(root / "ws" / "alice" / "skills", "alpha", files={"notes/a.md": "a\n"})
    (root / "tokens.yaml").write_text(f"alice: {TOKEN}\n")
    return root / "ws"


@pytest.fixture(scope="module")
def http_server(ws: Path) -> Iterator[HttpServer]:
    """One HTTP server over :func:`ws` for the module's tests."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(HttpServer(ws, ws.parent / "tokens.yaml")) as server,
    ):
        yield server


@asynccontextmanager
async def _http(url: str, mode: str) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))
        transport = streamable_http_client(url, http_client=http)
        yield await stack.enter_async_context(Client(transport, cache=None, mode=mode))


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, ws: Path) -> Connect:
    """Connects alice in a given mode ("auto" or "legacy", the SDK's ``initialize`` handshake)."""
    if request.param == "stdio":
        command = serve_command(ws, "--user", "alice")
        params = StdioServerParameters(command=command[0], args=command[1:], env=CODE)
        return lambda mode: Client(params, cache=None, mode=mode)
    server: HttpServer = request.getfixturevalue("http_server")
    return lambda mode: _http(server.url, mode)


async def test_a_client_on_the_current_revision_sees_the_extension_and_the_version(connect: Connect) -> None:
    async with connect("auto") as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        assert client.server_info is not None and client.server_info.name == "agent-skill-harness"
        assert client.server_info.version == harness.__version__ != ""
        assert (client.server_capabilities.extensions or {})[EXTENSION] == {"directoryRead": True}


async def test_a_client_on_an_earlier_revision_discovers_the_extension(connect: Connect) -> None:
    async with connect("legacy") as client:
        assert client.protocol_version == LATEST_HANDSHAKE_VERSION  # negotiated with initialize
        assert client.server_info is not None and client.server_info.version == harness.__version__
        capabilities = client.server_capabilities
        assert capabilities.extensions is None  # not in that revision's schema
        assert (capabilities.experimental or {})[EXTENSION] == {"directoryRead": True}
        assert capabilities.resources is not None  # the extension's files are resources
        listing = await call(client, "skills/list")
        [entry] = listing["skills"]
        assert entry["uri"] == "skill://alpha/SKILL.md"
        got = await call(client, "skills/get", {"uri": entry["uri"]})
        assert got["skill"] == entry
        read = await client.read_resource("skill://alpha/notes/a.md")
        assert read.contents[0].text == "a\n"  # type: ignore[union-attr]
        folder = await call(client, "resources/directory/read", {"uri": "skill://alpha"})
        assert [r["name"] for r in folder["resources"]] == ["SKILL.md", "notes"]

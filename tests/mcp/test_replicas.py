"""``harness mcp serve --http --stateless`` behind a load balancer: two real server processes over
one workspace, answering one client's requests alternately, with no session affinity."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.mcp import HttpServer, call
from tests.support.polling import eventually
from tests.support.skills import make_skill

TOKENS = {"alice": "alice-token-0001", "bob": "bob-token-0002"}
#: Alice's skills with the shared one: more than a skills/list page (100), so the cursor of one
#: replica goes to the other.
MANY = 103


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer in the client: each HTTP request goes to the next of ``ports`` in turn,
    whatever request came before it; ``served`` records which port took each one."""

    def __init__(self, ports: Sequence[int]) -> None:
        self.ports = list(ports)
        self.served: list[tuple[str, int]] = []
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.served) % len(self.ports)]
        self.served.append((request.method, port))
        request.url = request.url.copy_with(port=port)
        request.headers["Host"] = f"127.0.0.1:{port}"
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def balanced(servers: Sequence[HttpServer], token: str, mode: str) -> AsyncIterator[tuple[Client, RoundRobin]]:
    """A client of ``servers`` through a :class:`RoundRobin`, in the SDK's connect ``mode``."""
    balancer = RoundRobin([s.port for s in servers])
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(transport=balancer, headers={"Authorization": f"Bearer {token}"})
        )
        transport = streamable_http_client(servers[0].url, http_client=http)
        client = await stack.enter_async_context(Client(transport, cache=None, mode=mode))
        yield client, balancer


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    make_skill(ws / "skills", "shared", description="For everyone.")
    make_skill(
        ws / "alice" / "skills",
        "alpha",
        body="Research $ARGUMENTS carefully.\n",
        files={"references/guide.md": "# Guide\nstep one\n", "scripts/run.sh": "#!/bin/sh\necho run\n"},
    )
    for i in range(MANY - 2):
        make_skill(ws / "alice" / "skills", f"topic-{i:03d}")
    (root / "tokens.yaml").write_text("".join(f"{user}: {token}\n" for user, token in TOKENS.items()))
    return ws


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return _workspace(tmp_path)


@asynccontextmanager
async def replicas(ws: Path, *args: str) -> AsyncIterator[list[HttpServer]]:
    """Two ``harness mcp serve --http`` processes over the one workspace ``ws``."""
    async with AsyncExitStack() as stack:
        servers = [HttpServer(ws, ws.parent / "tokens.yaml", *args) for _ in range(2)]
        for server in servers:
            stack.push_async_exit(server.__aexit__)
        async with anyio.create_task_group() as starting:  # both start at once
            for server in servers:
                starting.start_soon(server.__aenter__)
        yield servers


@pytest.fixture(scope="module")
def stateless_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[HttpServer]]]:
    """Two ``--stateless`` replicas over a workspace no test changes, shared by the module."""
    ws = _workspace(tmp_path_factory.mktemp("replicas"))
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(replicas(ws, "--stateless")) as servers:
        yield ws, servers


async def _every_page(client: Client) -> list[dict[str, Any]]:
    skills: list[dict[str, Any]] = []
    page = await call(client, "skills/list")
    skills += page["skills"]
    while "nextCursor" in page:
        page = await call(client, "skills/list", {"cursor": page["nextCursor"]})
        skills += page["skills"]
    return skills


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_stateless_replicas_answer_one_client_alternately(
    stateless_replicas: tuple[Path, list[HttpServer]], mode: str
) -> None:
    ws, servers = stateless_replicas
    guide = ws / "alice" / "skills" / "alpha" / "references" / "guide.md"
    async with balanced(servers, TOKENS["alice"], mode) as (alice, lb):
        skills = await _every_page(alice)  # pages 1 and 2 from different replicas
        assert len(skills) == MANY and len({s["uri"] for s in skills}) == MANY
        entry = next(s for s in skills if s["uri"] == "skill://alpha/SKILL.md")
        assert await call(alice, "skills/get", {"uri": entry["uri"]}) | {"_meta": None} == {
            "skill": entry,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": None,
            **({"resultType": "complete"} if mode == "auto" else {}),
        }
        for _ in range(2):  # once on each replica
            read = await alice.read_resource("skill://alpha/references/guide.md")
            assert read.contents[0].text == guide.read_text()  # type: ignore[union-attr]
            digest = next(r["digest"] for r in entry["resources"] if r["uri"].endswith("guide.md"))
            assert digest == "sha256:" + hashlib.sha256(guide.read_bytes()).hexdigest()
            folder = await call(alice, "resources/directory/read", {"uri": "skill://alpha"})
            assert [r["name"] for r in folder["resources"]] == ["SKILL.md", "references", "scripts"]
            loaded = await alice.call_tool("load_skill", {"name": "alpha"})
            assert "Research $ARGUMENTS carefully." in loaded.content[0].text  # type: ignore[union-attr]
            prompt = await alice.get_prompt("alpha", {"arguments": "tides"})
            assert "Research tides carefully." in prompt.messages[0].content.text  # type: ignore[union-attr]
        posts = [port for method, port in lb.served if method == "POST"]
        assert set(posts) == {servers[0].port, servers[1].port}
        async with balanced(servers, TOKENS["bob"], mode) as (bob, _):  # each request is its token's user's
            assert [s["uri"] for s in await _every_page(bob)] == ["skill://shared/SKILL.md"]
            for _ in range(2):
                with pytest.raises(MCPError, match="no skill is served at"):
                    await call(bob, "skills/get", {"uri": "skill://alpha/SKILL.md"})


async def test_stateful_replicas_lose_an_older_client_that_changes_replica(ws: Path) -> None:
    """Why the mode exists: a client on a revision with sessions is known to one replica only;
    one on the current revision sends self-contained requests and is served either way."""
    async with replicas(ws) as servers:
        with pytest.raises(ExceptionGroup) as caught:
            async with balanced(servers, TOKENS["alice"], "legacy") as (alice, _):
                await call(alice, "skills/list")
                await call(alice, "skills/list")
        assert caught.group_contains(MCPError, match="Session not found", depth=None)
        async with balanced(servers, TOKENS["alice"], "auto") as (alice, lb):
            assert len(await _every_page(alice)) == MANY
            got = await call(alice, "skills/get", {"uri": "skill://alpha/SKILL.md"})
            assert got["skill"]["frontmatter"]["name"] == "alpha"
        assert {port for method, port in lb.served if method == "POST"} == {s.port for s in servers}


async def test_a_user_flooding_a_stateless_server_does_not_stall_another(ws: Path) -> None:
    """Rule 12 without sessions: one user's requests in flight are bounded, the others' are served."""
    args = ("--stateless", "--allow-shell", "--trust-local-shell", "--max-sessions-per-user", "1")
    async with HttpServer(ws, ws.parent / "tokens.yaml", *args) as server, httpx2.AsyncClient(timeout=30) as raw:

        async def post(user: str, method: str, params: dict[str, Any]) -> httpx2.Response:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            headers = {
                "Authorization": f"Bearer {TOKENS[user]}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            }
            return await raw.post(server.url, json=body, headers=headers)

        answers: dict[str, httpx2.Response] = {}
        started, release = ws.parent / "started", ws.parent / "release"

        async def slow() -> None:
            command = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
            call = {"name": "execute_shell_command", "arguments": {"command": command}}
            answers["slow"] = await post("alice", "tools/call", call)

        async def in_flight() -> bool:
            return started.exists()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(slow)
            try:
                await eventually(in_flight, within=60, what="alice's shell call to start")
                answers["alice"] = await post("alice", "skills/list", {})
                answers["bob"] = await post("bob", "skills/list", {})
            finally:
                release.touch()  # alice's one request ends only once the others were answered
        assert answers["alice"].status_code == 503
        assert "requests in flight" in answers["alice"].json()["error"]["message"]
        assert answers["bob"].status_code == 200 and "skill://shared/SKILL.md" in answers["bob"].text
        assert answers["slow"].status_code == 200

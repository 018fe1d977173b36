"""``harness mcp serve`` as a real subprocess, and the MCP SDK client that drives it.

``stdio_client(ws, user)`` starts the server over stdio for one user; ``HttpServer`` starts it over
streamable HTTP on a free port with a token file and ``http_client(url, token)`` connects to it.
``call(client, method, params)`` sends a Skills-extension request (``skills/list`` ...) and
returns the raw result.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

from tests.support.cli import harness_command
from tests.support.polling import eventually

__all__ = ["CODE", "HARNESS", "HttpServer", "call", "free_port", "http_client", "serve_command", "stdio_client"]

HARNESS = str(Path(sys.executable).with_name("harness"))
#: The server runs this checkout's code, whatever the installed package is (the SDK's stdio
#: client passes only a few variables of this process's environment on).
CODE = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def serve_command(workspace: Path, *args: str) -> list[str]:
    """The argv of ``harness mcp serve`` over ``workspace`` (no file watchers needed by callers),
    forked from the CLI server of ``tests.support.cli`` (``HARNESS_TEST_REAL_CLI=1``: the console
    script)."""
    return [harness_command(), "mcp", "serve", "--workspace", str(workspace), *args]


def stdio_client(workspace: Path, user: str, *args: str) -> Client:
    """A client (enter it) of ``harness mcp serve --user <user>`` started over stdio."""
    command = serve_command(workspace, "--user", user, *args)
    return Client(StdioServerParameters(command=command[0], args=command[1:], env=CODE), cache=None)


@asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    """A client of a streamable HTTP server, sending ``token`` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
        client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), cache=None))
        yield client


async def call(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The raw result of a request the SDK has no method for (``skills/list``, ``skills/get``, ...)."""
    request = mcp_types.Request[dict[str, Any], str](method=method, params=params or {})
    result = await client.session.send_request(request, _Raw)
    return dict(result.model_extra or {})


class _Raw(BaseModel):
    model_config = ConfigDict(extra="allow")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class HttpServer:
    """``harness mcp serve --http`` on a free port, tokens from a file; ``async with`` waits until
    it answers and stops it afterwards."""

    def __init__(self, workspace: Path, tokens: Path | None, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        given = ("--tokens", str(tokens)) if tokens is not None else ()
        self.argv: Sequence[str] = serve_command(workspace, "--http", "--port", str(self.port), *given, *args)
        self.process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()

    async def __aenter__(self) -> HttpServer:
        env = {**os.environ, **CODE}
        self.process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=self._log, env=env)

        async def answers() -> bool:
            assert self.process is not None and self.process.poll() is None, self.stderr()
            try:
                async with httpx2.AsyncClient() as probe:
                    await probe.get(self.url)
            except httpx2.TransportError:
                return False
            return True

        await eventually(answers, within=60, what="the MCP server to answer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()

    def stop(self) -> None:
        """Stop the server and wait for it to exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def stderr(self) -> str:
        """What the server wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

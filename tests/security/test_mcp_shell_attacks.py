"""A client of ``harness mcp serve --allow-shell`` against the operator's ``approval:`` policy.

The server is a real subprocess driven by the MCP SDK's client. Its shell must be the agent's
gated shell: the policy allows ``echo``, so a plain ``touch`` and an allowed ``echo`` hiding a
second command after 2,100 characters never run, and the audit log holds every command whole.
Over HTTP, one host shell for several token holders is refused unless the filesystem isolates
them or the operator says ``--trust-local-shell``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp import CODE, HttpServer, free_port, http_client, serve_command, stdio_client
from tests.support.skills import make_skill

SHELL = "execute_shell_command"
MARKER = "mcp-marker"
SECRET = "ALICE-NOTES-3318"
APPROVAL = """\
approval:
  default: deny
  rules:
    - {action: allow, tool: execute_shell_command, pattern: "echo *"}
"""
TOKENS = "alice: alice-token-0001\nbob: bob-token-0002\n"


@pytest.fixture(params=["local-shell", "sandbox"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace (where the mode needs it) with a shared skill and alice's notes, and a
    ``harness.yaml`` naming the mode and the approval policy."""
    ws = request.getfixturevalue("sandbox_dir") if request.param == "sandbox" else tmp_path / "ws"
    make_skill(ws / "skills", "shared")
    (ws / "alice").mkdir(parents=True, exist_ok=True)
    (ws / "alice" / "notes.txt").write_text(SECRET)
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: {ws}\nfilesystem: {request.param}\n{APPROVAL}")
    yield ws, config


def _markers(ws: Path) -> list[Path]:
    return [path for path in ws.rglob(f"*{MARKER}*")]


def _audit(ws: Path) -> list[dict[str, object]]:
    return [
        json.loads(line)
        for day in sorted((ws / "skills" / ".audit").glob("*.jsonl"))
        for line in day.read_text().splitlines()
    ]


async def test_the_mcp_shell_goes_through_approval_and_the_audit(workspace: tuple[Path, Path]) -> None:
    ws, config = workspace
    long = "echo ok " + "p" * 2100 + f"; touch {MARKER}"
    async with stdio_client(ws, "alice", "--config", str(config), "--allow-shell") as alice:
        allowed = await alice.call_tool(SHELL, {"command": "echo hello"})
        touched = await alice.call_tool(SHELL, {"command": f"touch {MARKER}"})
        hidden = await alice.call_tool(SHELL, {"command": long})

    assert not allowed.is_error and "hello" in allowed.content[0].text  # type: ignore[union-attr]
    for result in (touched, hidden):
        assert result.is_error and "ToolDenied" in result.content[0].text  # type: ignore[union-attr]
    assert _markers(ws) == []
    records = _audit(ws)
    assert [(r["op"], r["decision"]) for r in records] == [("tool.shell", "allowed"), *[("tool.shell", "denied")] * 2]
    assert all(r["context"]["user_id"] == "alice" for r in records)  # type: ignore[index]
    assert long in str(records[2]["detail"])


def test_http_refuses_one_host_shell_for_several_users(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_skill(ws / "skills", "shared")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(TOKENS)
    argv = serve_command(ws, "--http", "--port", str(free_port()), "--tokens", str(tokens), "--allow-shell")
    # A server that starts does not exit: the timeout only ends a failed run of this test.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**os.environ, **CODE})

    assert done.returncode == 2
    assert "does not isolate them" in done.stderr and "sandbox" in done.stderr
    assert "--trust-local-shell" in done.stderr


async def test_http_serves_several_users_a_sandboxed_shell(sandbox_dir: Path, tmp_path: Path) -> None:
    make_skill(sandbox_dir / "skills", "shared")
    (sandbox_dir / "alice").mkdir()
    (sandbox_dir / "alice" / "notes.txt").write_text(SECRET)
    (sandbox_dir / "bob").mkdir()
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(TOKENS)
    async with HttpServer(sandbox_dir, tokens, "--fs", "sandbox", "--allow-shell") as server:
        async with http_client(server.url, "bob-token-0002") as bob:
            peek = await bob.call_tool(SHELL, {"command": "cat ../alice/notes.txt; echo done"})
    text = peek.content[0].text  # type: ignore[union-attr]
    assert "done" in text and SECRET not in text  # no approval: configured: allowed, audited, isolated
    assert [r["context"]["user_id"] for r in _audit(sandbox_dir)] == ["bob"]  # type: ignore[index]


async def test_trust_local_shell_serves_several_users_and_says_so(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_skill(ws / "skills", "shared")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(TOKENS)
    async with HttpServer(ws, tokens, "--allow-shell", "--trust-local-shell") as server:
        async with http_client(server.url, "bob-token-0002") as bob:
            ran = await bob.call_tool(SHELL, {"command": "echo hi"})
        warning = server.stderr()
    assert "hi" in ran.content[0].text  # type: ignore[union-attr]
    assert "WARNING: --trust-local-shell" in warning and "every other user's area" in warning

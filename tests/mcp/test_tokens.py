"""The bearer-token → user mapping (file, variable, ``harness.yaml``) and when HTTP serving refuses to start."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import httpx2
import pytest

from harness.config import load_config
from harness.mcp import TOKENS_ENV, TokenConfigError, TokenMap
from tests.support.mcp import HttpServer, call, http_client, serve_command
from tests.support.skills import make_skill


def test_file_and_variable_are_merged_and_hashed_tokens_match(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    hashed = hashlib.sha256(b"bob-laptop-token").hexdigest()
    path.write_text(f"alice: alice-token-0001\nbob: [bob-ci-token-01, 'sha256:{hashed}']\n")
    tokens = TokenMap.load(path, environ={TOKENS_ENV: '{"carol": "carol-token-0003"}'})
    assert [tokens.user_for(t) for t in ("alice-token-0001", "bob-ci-token-01", "bob-laptop-token")] == [
        "alice",
        "bob",
        "bob",
    ]
    assert tokens.user_for("carol-token-0003") == "carol" and tokens.user_for("nobody-token") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice: short\n", "8\\+ characters"),
        ("../x: long-enough-token\n", "user id"),
        ("alice: same-token-000\nbob: same-token-000\n", "both 'alice' and 'bob'"),
        ("- a\n", "must map user ids"),
        ("alice: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_bad_mapping_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(TokenConfigError, match=message):
        TokenMap.parse(text, where="tokens.yaml")


def test_http_refuses_to_start_without_any_token(tmp_path: Path) -> None:
    result = subprocess.run(
        [*serve_command(tmp_path, "--http"), "--port", "9"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and "no token, no skills" in result.stderr


async def test_harness_yaml_names_the_token_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_skill(ws / "alice" / "skills", "alpha")
    (tmp_path / "tokens.yaml").write_text("alice: alice-token-0001\n")
    config = tmp_path / "harness.yaml"
    config.write_text("workspace: ws\nmcp_tokens: tokens.yaml\n")
    assert load_config(config).mcp_tokens == (tmp_path / "tokens.yaml").resolve()
    async with HttpServer(ws, None, "--config", str(config)) as server:
        async with http_client(server.url, "alice-token-0001") as alice:
            listing = await call(alice, "skills/list")
    assert [s["frontmatter"]["name"] for s in listing["skills"]] == ["alpha"]


async def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tokens.yaml").write_text("alice: alice-token-0001\n")
    async with HttpServer(tmp_path, tmp_path / "tokens.yaml") as first:
        argv = [
            *serve_command(tmp_path, "--http", "--tokens", str(tmp_path / "tokens.yaml")),
            "--port",
            str(first.port),
        ]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and f"cannot serve HTTP on 127.0.0.1:{first.port}" in result.stderr


def test_stateless_is_for_http(tmp_path: Path) -> None:
    result = subprocess.run(
        [*serve_command(tmp_path, "--user", "alice", "--stateless")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and "--stateless is for --http" in result.stderr


async def test_harness_yaml_can_make_the_server_stateless(tmp_path: Path) -> None:
    make_skill(tmp_path / "ws" / "alice" / "skills", "alpha")
    (tmp_path / "tokens.yaml").write_text("alice: alice-token-0001\n")
    config = tmp_path / "harness.yaml"
    config.write_text("workspace: ws\nmcp_tokens: tokens.yaml\nmcp_stateless: true\n")
    assert load_config(config).mcp_stateless is True
    body = {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {}}
    headers = {
        "Authorization": "Bearer alice-token-0001",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    async with HttpServer(tmp_path / "ws", None, "--config", str(config)) as server, httpx2.AsyncClient() as raw:
        # No initialize and no session id: a stateless server answers any request on its own.
        answer = await raw.post(server.url, json=body, headers=headers)
        assert answer.status_code == 200 and "skill://alpha/SKILL.md" in answer.text
        assert "mcp-session-id" not in answer.headers
        assert "(stateless)" in server.stderr()

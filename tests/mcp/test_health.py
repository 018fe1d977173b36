"""``harness mcp serve --http`` answers liveness and readiness probes, unauthenticated and telling
nothing a stranger may not know; a real server subprocess, asked by a real HTTP client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from harness.mcp import LIVENESS_PATH, READINESS_PATH
from tests.support.git import GitRemote
from tests.support.mcp import HttpServer, free_port
from tests.support.polling import eventually
from tests.support.skills import make_skill

TOKENS = {"alice": "alice-token-0001", "bob": "bob-token-0002"}


def _served(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with skills of its own and of two users, and their token file."""
    ws = tmp_path / "ws"
    make_skill(ws / "skills", "payroll-export", description="Exports the payroll.")
    make_skill(ws / "alice" / "skills", "alpha-research")
    make_skill(ws / "bob" / "skills", "bravo-notes")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("".join(f"{user}: {token}\n" for user, token in TOKENS.items()))
    return ws, tokens


def _base(server: HttpServer) -> str:
    return f"http://127.0.0.1:{server.port}"


async def _get(server: HttpServer, path: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as client:  # no token: probes carry none
        return await client.get(_base(server) + path)


async def _ready(server: HttpServer) -> httpx2.Response:
    return await eventually(
        lambda: _get(server, READINESS_PATH), lambda r: r.status_code == 200, within=60, what="the server to be ready"
    )


def _leaks(answer: httpx2.Response, secrets: list[str]) -> list[str]:
    return [secret for secret in secrets if secret.lower() in answer.text.lower()]


async def test_a_serving_server_is_live_and_ready_without_a_token(tmp_path: Path) -> None:
    ws, tokens = _served(tmp_path)
    async with HttpServer(ws, tokens) as server:
        live = await _get(server, LIVENESS_PATH)
        ready = await _ready(server)
        async with httpx2.AsyncClient() as client:  # the MCP endpoint still wants a token
            refused = await client.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "skills/list"})
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    body: dict[str, Any] = ready.json()
    assert body["status"] == "ready" and body["unanswered"] == 0 and body["failing"] == 0
    assert refused.status_code == 401
    secrets = ["payroll", "alpha-research", "bravo-notes", "alice", "bob", *TOKENS.values(), str(ws)]
    assert _leaks(live, secrets) == [] and _leaks(ready, secrets) == []


async def test_a_market_that_never_answered_keeps_it_unready_and_names_no_credential(tmp_path: Path) -> None:
    ws, tokens = _served(tmp_path)
    closed = free_port()
    markets = [
        f"git+http://deploy:hunter2@127.0.0.1:{closed}/acme/internal-skills.git",
        f"mysql://harness:hunter3@127.0.0.1:{closed}/proddb?table=team_skills",
    ]
    args = [arg for url in markets for arg in ("--repo", url)]
    async with HttpServer(ws, tokens, *args) as server:
        answer = await eventually(
            lambda: _get(server, READINESS_PATH),
            lambda r: r.status_code == 503 and r.json().get("loaded") is True,
            within=60,
            what="the first load to end",
        )
        live = await _get(server, LIVENESS_PATH)
    body = answer.json()
    assert body["status"] == "not ready" and body["unanswered"] == 2
    assert body["reason"] == f"2 of {body['sources']} shared skill sources have not answered yet"
    assert live.status_code == 200  # alive all the same: nothing to restart
    secrets = ["hunter2", "hunter3", "deploy", "harness:", "acme", "internal-skills", "proddb", "team_skills"]
    secrets += ["127.0.0.1", str(closed), "payroll", "alice", "bob", "git", "mysql"]
    assert _leaks(answer, secrets) == []


async def test_a_server_no_request_reaches_gets_ready_once_its_market_answers(tmp_path: Path) -> None:
    ws, tokens = _served(tmp_path)
    late = tmp_path / "late"
    url = f"git+{(late / 'remote.git').as_uri()}"
    async with HttpServer(ws, tokens, "--repo", url) as server:
        await eventually(
            lambda: _get(server, READINESS_PATH),
            lambda r: r.status_code == 503 and r.json().get("loaded") is True,
            within=60,
            what="the first load to end",
        )
        remote = GitRemote(late)  # the market comes up; only probes ask the server anything
        make_skill(remote.work / "skills", "late-skill")
        remote.commit("skills")
        ready = await _ready(server)
    assert ready.json()["unanswered"] == 0

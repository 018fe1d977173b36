"""Forged ``skills/list`` cursors against ``harness mcp serve --http --stateless``: each request
stands alone, so the cursor is all the server knows of the page before. A cursor from another
user, an altered, huge or made-up one must get a clear -32602 error and nothing of anyone's
skills; the server goes on serving; and a cursor replayed after the catalog changed goes on
after the last skill it gave, without repeating or skipping one."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.mcp import HttpServer
from tests.support.polling import eventually
from tests.support.skills import make_skill

TOKENS = {"alice": "alice-token-0001", "bob": "bob-token-0002"}
#: More than a page (100), so the first page ends with a cursor.
ALICES = [f"topic-{i:03d}" for i in range(110)]
BOBS = "bob-secret-plans"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Path, HttpServer]]:
    ws = tmp_path / "ws"
    for name in ALICES:
        make_skill(ws / "alice" / "skills", name)
    make_skill(ws / "bob" / "skills", BOBS)
    (tmp_path / "tokens.yaml").write_text("".join(f"{user}: {token}\n" for user, token in TOKENS.items()))
    async with HttpServer(ws, tmp_path / "tokens.yaml", "--stateless") as server:
        yield ws, server


async def _list(server: HttpServer, user: str, cursor: str | None = None) -> dict[str, Any]:
    """The JSON-RPC answer (``result`` or ``error``) to ``user``'s ``skills/list``."""
    params = {} if cursor is None else {"cursor": cursor}
    headers = {
        "Authorization": f"Bearer {TOKENS[user]}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": params}
    async with httpx2.AsyncClient(timeout=60) as client:
        response = await client.post(server.url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        answer: dict[str, Any] = json.loads(data[-1])
        return answer
    answer = response.json()
    return answer


def _names(answer: dict[str, Any]) -> list[str]:
    return [s["frontmatter"]["name"] for s in answer["result"]["skills"]]


def _refused(answer: dict[str, Any]) -> str:
    assert "result" not in answer, str(answer)[:300]
    assert answer["error"]["code"] == -32602, answer
    message: str = answer["error"]["message"]
    assert "cursor" in message
    return message


async def test_forged_cursors_get_a_clear_error_and_nothing_else(served: tuple[Path, HttpServer]) -> None:
    _, server = served
    first = await _list(server, "alice")
    cursor = first["result"]["nextCursor"]
    assert _names(first) == ALICES[:100]
    bobs = await _list(server, "bob", cursor)  # alice's cursor, presented by bob
    assert "another user" in _refused(bobs) and "topic-" not in json.dumps(bobs) and BOBS not in json.dumps(bobs)
    flipped = cursor[:-1] + ("A" if cursor[-1] != "A" else "B")
    answers = {}
    for forged in (
        flipped,
        cursor + "0",
        "100",  # a position nobody gave
        "100000",  # past the end
        "-1",
        "１００",  # fullwidth digits
        "²",  # a digit int() refuses
        "9" * 5000,  # past int()'s digit limit
        "A" * 200_000,
        "../x",
        "",
    ):
        answers[forged[:12]] = await _list(server, "alice", forged)
    assert _names(answers.pop("")) == ALICES[:100]  # no cursor: the first page
    for answer in answers.values():
        _refused(answer)
    assert _names(await _list(server, "alice", cursor)) == ALICES[100:]  # still serving, the real cursor works
    assert _names(await _list(server, "bob")) == [BOBS]


async def test_a_cursor_replayed_after_the_catalog_changed_goes_on_after_its_last_skill(
    served: tuple[Path, HttpServer],
) -> None:
    ws, server = served
    first = await _list(server, "alice")
    cursor = first["result"]["nextCursor"]
    for name in ("aaa-new", "aab-new"):  # sort before every page-one skill
        make_skill(ws / "alice" / "skills", name)
    shutil.rmtree(ws / "alice" / "skills" / "topic-099")  # the last skill page one gave
    shutil.rmtree(ws / "alice" / "skills" / "topic-105")  # one page two would give

    async def changed() -> list[str]:
        return _names(await _list(server, "alice"))

    await eventually(changed, lambda names: "aaa-new" in names and "topic-099" not in names, within=60, what="edit")
    replayed = _names(await _list(server, "alice", cursor))
    assert replayed == [name for name in ALICES[100:] if name != "topic-105"]

"""What the ``harness`` command says about markets: a refused MCP token is named as one, and a
MySQL market filled twice prints no raw driver warnings."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_harness
from tests.support.mcp import HttpServer
from tests.support.mysql import drop_tables, unique_table
from tests.support.skills import make_skill


def _harness(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*argv, cwd=cwd, env={**os.environ, **env})


@pytest.mark.parametrize(
    ("fragment", "env", "said"),
    [
        ("", {}, "the server refused the request without a token (HTTP 401): set a variable to the token and name "
         "it in the market URL (#token_env=VARIABLE)"),
        ("#token_env=SKILLS_TOKEN", {"SKILLS_TOKEN": "wrong-token-0001"},
         "the server refused the token (HTTP 401): set the variable 'SKILLS_TOKEN' to a token the server accepts"),
    ],
)  # fmt: skip
async def test_an_mcp_market_names_a_missing_or_wrong_token(
    tmp_path: Path, fragment: str, env: dict[str, str], said: str
) -> None:
    make_skill(tmp_path / "served" / "alice" / "skills", "alpha", description="Alpha does things.")
    (tmp_path / "tokens.yaml").write_text("alice: alice-token-0001\n")
    async with HttpServer(tmp_path / "served", tmp_path / "tokens.yaml") as server:
        market = f"mcp+{server.url}{fragment}"
        refused = _harness("skills", "list", "--repo", market, cwd=tmp_path, **env)
        accepted = _harness(
            "skills", "list", "--user", "alice", "--repo", market, cwd=tmp_path, SKILLS_TOKEN="alice-token-0001"
        )
    assert refused.returncode == 1
    assert said in refused.stdout and "Server returned an error response" not in refused.stdout
    assert all(token not in refused.stdout + refused.stderr for token in (*env.values(), "alice-token-0001"))
    if fragment:
        assert accepted.returncode == 0 and accepted.stdout.startswith("alpha "), accepted.stdout


async def test_publishing_twice_prints_no_driver_warnings(tmp_path: Path, mysql_dsn: str) -> None:
    make_skill(tmp_path / "skills", "alpha", description="Alpha does things.")
    table = unique_table("cli_publish")
    market = f"{mysql_dsn}?table={table}"
    try:
        for _ in range(2):
            result = _harness("market", "publish", str(tmp_path / "skills" / "alpha"), "--repo", market, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
            assert result.stdout.startswith("published alpha (1 files)")
            assert result.stderr == ""
    finally:
        await drop_tables(mysql_dsn, table)

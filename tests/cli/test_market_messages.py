"""What the ``harness`` command says about markets: a refused MCP token is named as one, and a
MySQL market filled twice prints no raw driver warnings."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.cli import run_harness
from tests.support.mcp import HttpServer
from tests.support.mysql import drop_tables, unique_table
from tests.support.skills import make_skill


def _harness(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*argv, cwd=cwd, env={**os.environ, **env})


# Each case: the market URL's fragment, the environment, and what a refused listing says.
TOKEN_CASES = [
    ("", {}, "the server refused the request without a token (HTTP 401): set a variable to the token and name "
     "it in the market URL (#token_env=VARIABLE)"),
    ("#token_env=SKILLS_TOKEN", {"SKILLS_TOKEN": "wrong-token-0001"},
     "the server refused the token (HTTP 401): set the variable 'SKILLS_TOKEN' to a token the server accepts"),
]  # fmt: skip


async def test_an_mcp_market_names_a_missing_or_wrong_token(tmp_path: Path) -> None:
    make_skill(tmp_path / "served" / "alice" / "skills", "alpha", description="Alpha does things.")
    (tmp_path / "tokens.yaml").write_text("alice: alice-token-0001\n")
    async with HttpServer(tmp_path / "served", tmp_path / "tokens.yaml") as server:  # one server for every case
        refused = {
            fragment: _harness("skills", "list", "--repo", f"mcp+{server.url}{fragment}", cwd=tmp_path, **env)
            for fragment, env, _ in TOKEN_CASES
        }
        accepted = _harness(
            "skills",
            "list",
            "--user",
            "alice",
            "--repo",
            f"mcp+{server.url}#token_env=SKILLS_TOKEN",
            cwd=tmp_path,
            SKILLS_TOKEN="alice-token-0001",
        )
    for fragment, env, said in TOKEN_CASES:
        result = refused[fragment]
        assert result.returncode == 1, fragment
        assert said in result.stdout and "Server returned an error response" not in result.stdout, result.stdout
        assert all(token not in result.stdout + result.stderr for token in (*env.values(), "alice-token-0001"))
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

"""The core install does not need the MCP SDK: the CLI and the markets import it only when used."""

from __future__ import annotations

import subprocess
import sys

_WITHOUT_SDK = """
import sys
sys.modules["mcp"] = None  # as if the extra were not installed
import harness, harness.cli
from repositories import RepositoryUnavailable, open_repository
market = open_repository("mcp+http://127.0.0.1:9/mcp")
import anyio
async def main():
    async with market:
        try:
            await market.snapshot()
        except RepositoryUnavailable as exc:
            print(exc)
anyio.run(main)
code = harness.cli.main(["mcp", "serve", "--user", "alice"])
print("exit", code)
"""


def test_the_cli_and_markets_work_without_the_sdk() -> None:
    result = subprocess.run([sys.executable, "-c", _WITHOUT_SDK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pip install 'agent-skill-harness[mcp]'" in result.stdout
    assert "exit 1" in result.stdout and "pip install 'agent-skill-harness[mcp]'" in result.stderr


def test_importing_the_cli_does_not_import_the_sdk() -> None:
    probe = "import sys, harness.cli, repositories; print('mcp' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr

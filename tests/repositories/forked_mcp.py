"""MCP markets over the test Skills server (``tests.support.skills_server``), the server forked
from the test session's preloaded process (``tests.support.cli.python_command``).

A fresh server spends about a second importing the MCP SDK before it answers; forked, it starts
in milliseconds and still serves over its own stdin and stdout, from a process of its own, so the
market meets it exactly as it would meet a fresh one. ``tests/cli/test_skills_list_mcp.py``
starts the server as a fresh interpreter, and ``HARNESS_TEST_REAL_CLI=1`` makes every test do so.
"""

from __future__ import annotations

from repositories.mcp import McpRepository
from tests.support.cli import python_command
from tests.support.skills_server import SkillsServer

__all__ = ["mcp_market"]


def mcp_market(server: SkillsServer, source: str = "srv") -> McpRepository:
    """``McpRepository(command=server.command, source=source)`` with the server forked."""
    _, script, *args = server.command
    return McpRepository(command=[*python_command(script), *args], source=source)

"""MCP markets over the test Skills server (``tests.support.skills_server``), the server forked
from the test session's preloaded process (``tests.support.cli.python_command``).

A fresh server spends about a second importing the MCP SDK before it answers; forked, it starts
in milliseconds and still serves over its own stdin and stdout, from a process of its own, so the
market meets it exactly as it would meet a fresh one. ``tests/cli/test_skills_list_mcp.py``
starts the server as a fresh interpreter, and ``HARNESS_TEST_REAL_CLI=1`` makes every test do so.
"""

from __future__ import annotations

from typing import Any

from harness.agent import ControlOptions, Harness, PipelineOptions, TrustOptions
from harness.approval import Approver
from harness.models import Model
from repositories.mcp import McpRepository
from tests.support.cli import python_command
from tests.support.skills_server import SkillsServer

__all__ = ["mcp_agent", "mcp_market"]


def mcp_market(server: SkillsServer, source: str = "srv") -> McpRepository:
    """``McpRepository(command=server.command, source=source)`` with the server forked."""
    _, script, *args = server.command
    return McpRepository(command=[*python_command(script), *args], source=source)


def mcp_agent(
    server: SkillsServer,
    model: Model,
    *,
    approver: Approver | None = None,
    trust: TrustOptions | None = None,
    **where: Any,
) -> Harness:
    """An agent over ``mcp_market(server)``, driven by ``model``, in ``where`` (``workspace=`` or
    ``filesystem=``): no watcher, a market timeout a loaded machine keeps, ``approver`` deciding
    what the approval policy asks."""
    return Harness(
        model=model,
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
        trust=trust or TrustOptions(),
        control=ControlOptions(approver=approver),
        **where,
    )

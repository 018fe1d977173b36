"""The error tree of :mod:`harness.mcp`.

``McpServerError`` (a :class:`~harness.errors.HarnessError`) is the root; a bad token mapping
is a :class:`TokenConfigError`, which is also a :class:`~harness.errors.ConfigError`, so the CLI
reports it as a configuration error (exit 2). Problems of one request (an unknown skill, an
unsafe path) are not raised to the caller: they go back to the client as JSON-RPC errors.
"""

from __future__ import annotations

from harness.errors import ConfigError, HarnessError

__all__ = ["McpServerError", "SkillRequestError", "TokenConfigError"]


class McpServerError(HarnessError):
    """Base class of the errors ``harness mcp serve`` raises on purpose."""


class TokenConfigError(McpServerError, ConfigError):
    """The bearer-token mapping (file or environment variable) is unreadable or malformed."""


class SkillRequestError(McpServerError, LookupError):
    """A request names no skill, file or directory its user is served (JSON-RPC error -32602)."""

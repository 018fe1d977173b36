"""Serve one user's merged skills over MCP (``harness mcp serve``); needs the ``mcp`` extra.

:class:`SkillServer` implements the MCP Skills extension (``io.modelcontextprotocol/skills``)
plus fallback tools and prompts over a :class:`~harness.pipeline.SkillPipeline`;
:class:`SkillCatalog` holds the extension's wire shapes; :class:`Health` answers the HTTP
server's liveness and readiness probes; :class:`TokenMap` maps HTTP bearer
tokens to users; :class:`SessionLimits` bounds the HTTP sessions each user and all users hold
(served stateless for replicas behind a load balancer, the requests they have in flight:
:class:`FairRequests`). Install with ``pip install 'agent-skill-harness[mcp]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from filesystems import lazy_exports

try:
    import mcp as _sdk  # noqa: F401  (the SDK is an optional extra: say so clearly)
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("harness.mcp needs the MCP Python SDK: pip install 'agent-skill-harness[mcp]'") from exc

if TYPE_CHECKING:
    from harness.mcp.catalog import EXTENSION, MAX_BYTES, MAX_FILES, Listing, SkillCatalog
    from harness.mcp.health import LIVENESS_PATH, READINESS_PATH, Health
    from harness.mcp.server import OMITTED_META, SkillServer, ToolSource
    from harness.mcp.sessions import FairRequests, FairSessionManager, SessionLimits
    from harness.mcp.tokens import TOKENS_ENV, TokenMap
from harness.mcp.errors import McpServerError, SkillRequestError, TokenConfigError

__all__ = [
    "EXTENSION",
    "LIVENESS_PATH",
    "MAX_BYTES",
    "MAX_FILES",
    "OMITTED_META",
    "READINESS_PATH",
    "TOKENS_ENV",
    "FairRequests",
    "FairSessionManager",
    "Health",
    "Listing",
    "McpServerError",
    "SessionLimits",
    "SkillCatalog",
    "SkillRequestError",
    "SkillServer",
    "TokenConfigError",
    "TokenMap",
    "ToolSource",
]

__getattr__, __dir__ = lazy_exports(__name__)

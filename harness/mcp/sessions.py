"""Fair MCP sessions for ``harness mcp serve --http``: bounded per principal and in all.

The MCP SDK's :class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager` keeps
every client's session in one table with one global limit, so a single token holder could open
sessions until the table is full and every other user gets HTTP 503. :class:`FairSessionManager`
is the SDK's manager with the bounds of :class:`SessionLimits` enforced where a session is
admitted:

- a principal (the user a bearer token maps to) holds at most ``per_principal`` sessions; opening
  one more closes that principal's own longest-idle session, and is refused (503) only when all
  of theirs are in use;
- with ``total`` sessions open, the longest-idle session among those of the principals holding
  the most sessions is closed (the newcomer's own, when it is one of them); when none of theirs
  is idle, the new session is refused;
- a session is idle while no request is in flight on it (none being served, no open GET
  stream); a session in use is never closed to make room, and only the largest holders lose
  sessions to a newcomer. Idle sessions also end after ``idle_timeout`` seconds.

A closed session ends as an idle timeout does: its id answers 404 and its client initializes a
new one. :func:`session_app` is the streamable HTTP app around the manager, with the SDK's own
bearer-token authentication.

**Stateless** (``session_app(..., stateless=True)``, ``harness mcp serve --http --stateless``):
no session is kept at all, so any replica answers any request and a load balancer needs no
session affinity. The SDK's manager runs in its stateless mode (a fresh transport per request,
no ``Mcp-Session-Id``; a client that starts with ``initialize`` gets its answer and may send the
next request anywhere), and nothing else is kept between requests either: the user is the
request's bearer token, a ``skills/list`` cursor is a position in the user's sorted skills, and
the caches are of content (a replica that has not seen a skill reads it). Clients on the
2026-07-28 revision send self-contained requests whichever mode the server runs in. With no
session table to bound, :class:`FairRequests` keeps rule 12 for requests instead: a principal
has at most ``per_principal`` requests in flight, all principals ``total``; past either a request
is answered 503 at once, so one token holder flooding the server cannot stall the others.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server import Server
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    BearerAuthBackend,
    RequireAuthMiddleware,
    authorization_context,
)
from mcp.server.auth.provider import TokenVerifier
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INTERNAL_ERROR
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from harness.mcp.health import Health

__all__ = ["FairRequests", "FairSessionManager", "SessionLimits", "session_app"]

log = logging.getLogger(__name__)

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, kw_only=True)
class SessionLimits:
    """How many MCP sessions one principal, and all of them, may hold open; how long an idle
    session lives (seconds). A stateless server keeps no session: the same two numbers bound the
    requests in flight (:class:`FairRequests`)."""

    per_principal: int = 16
    total: int = 1000
    idle_timeout: float = 30 * 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.per_principal <= self.total:
            raise ValueError("need 1 <= per_principal <= total sessions")
        if not (math.isfinite(self.idle_timeout) and self.idle_timeout > 0):
            raise ValueError("idle_timeout must be a positive number of seconds")


def _principal(owner: AuthorizationContext | None) -> Hashable:
    return None if owner is None else (owner["client_id"], owner["issuer"], owner["subject"])


def _idle_since(transport: StreamableHTTPServerTransport) -> float | None:
    """When the session's idle countdown ends (earlier: idle longer), or ``None`` while it is in
    use (a request in flight holds the deadline at infinity) or not started yet."""
    scope = transport.idle_scope
    if scope is None or scope.cancel_called or not math.isfinite(scope.deadline):
        return None
    return scope.deadline


class FairSessionManager(StreamableHTTPSessionManager):
    """The SDK's streamable HTTP session manager with per-principal and total bounds (see the
    module docstring)."""

    def __init__(
        self, app: Server[Any], *, limits: SessionLimits, security_settings: TransportSecuritySettings | None = None
    ) -> None:
        super().__init__(
            app,
            security_settings=security_settings,
            session_idle_timeout=limits.idle_timeout,
            max_sessions=limits.total,
        )
        self.limits = limits

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        principal = _principal(requestor)
        own = self._sessions_of(principal)
        if len(own) >= self.limits.per_principal:
            if not self._close_longest_idle(own):
                log.warning(
                    "refusing a new MCP session for %s: its %d sessions are all in use",
                    _shown(principal),
                    len(own),
                )
                return None
        elif len(self._server_instances) >= self.limits.total:
            holders = collections.Counter(_principal(self._session_owners.get(s)) for s in self._server_instances)
            most = max(holders.values())
            largest = [item for p, count in holders.items() if count == most for item in self._sessions_of(p)]
            if not self._close_longest_idle(largest):
                log.warning(
                    "refusing a new MCP session for %s: %d sessions are open and those of the users holding "
                    "the most are all in use",
                    _shown(principal),
                    len(self._server_instances),
                )
                return None
        return super()._admit_session(requestor)

    def _sessions_of(self, principal: Hashable) -> list[tuple[str, StreamableHTTPServerTransport]]:
        return [
            (session_id, transport)
            for session_id, transport in self._server_instances.items()
            if _principal(self._session_owners.get(session_id)) == principal
        ]

    def _close_longest_idle(self, sessions: list[tuple[str, StreamableHTTPServerTransport]]) -> bool:
        """Close the session of ``sessions`` idle the longest; ``False`` when none is idle."""
        idle = [(deadline, session_id, t) for session_id, t in sessions if (deadline := _idle_since(t)) is not None]
        if not idle:
            return False
        _, session_id, transport = min(idle, key=lambda item: item[0])
        owner = self._session_owners.pop(session_id, None)
        del self._server_instances[session_id]  # forgotten now: the new session is counted against the bound
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()  # ends as an idle timeout does: its task terminates it
        log.info("closed idle MCP session %s of %s to make room", session_id, _shown(_principal(owner)))
        return True


def _shown(principal: Hashable) -> str:
    return "an unauthenticated client" if principal is None else f"user {principal[0]!r}"  # type: ignore[index]


class FairRequests:
    """ASGI middleware of a stateless server: at most ``limits.per_principal`` POST requests of
    one principal in flight, and ``limits.total`` of all of them; past either, HTTP 503 with a
    JSON-RPC error saying which bound, without waiting. The counts live only while requests do."""

    def __init__(self, app: ASGIApp, *, limits: SessionLimits) -> None:
        self.app = app
        self.limits = limits
        self._in_flight: collections.Counter[Hashable] = collections.Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        principal = _principal(authorization_context(user) if isinstance(user, AuthenticatedUser) else None)
        refusal = None
        if self._in_flight[principal] >= self.limits.per_principal:
            refusal = f"{_shown(principal)} has {self.limits.per_principal} requests in flight, the most one user may"
        elif self._in_flight.total() >= self.limits.total:
            refusal = f"{self.limits.total} requests are in flight, the most this server takes at once"
        if refusal is not None:
            log.warning("refusing an MCP request: %s", refusal)
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": INTERNAL_ERROR, "message": f"busy: {refusal}"}}
            await JSONResponse(body, status_code=503, headers={"Retry-After": "1"})(scope, receive, send)
            return
        self._in_flight[principal] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._in_flight[principal] -= 1
            if not self._in_flight[principal]:
                del self._in_flight[principal]  # nothing kept for a principal with nothing in flight


def session_app(
    server: Server[Any],
    *,
    verifier: TokenVerifier,
    limits: SessionLimits,
    host: str,
    path: str,
    stateless: bool = False,
    health: Health | None = None,
) -> Starlette:
    """The streamable HTTP app of ``server`` at ``path``: bearer tokens checked by ``verifier``
    (401 without a known one), sessions kept by a :class:`FairSessionManager` (or, ``stateless``,
    none kept and requests bounded by :class:`FairRequests`), and, on a local ``host``, the
    SDK's DNS-rebinding protection for local addresses. ``health`` adds its unauthenticated
    liveness and readiness endpoints (:mod:`harness.mcp.health`), running while the app does."""
    security = None
    if host in _LOCAL_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager: StreamableHTTPSessionManager
    endpoint: ASGIApp
    if stateless:
        manager = StreamableHTTPSessionManager(server, stateless=True, security_settings=security)
        endpoint = FairRequests(StreamableHTTPASGIApp(manager), limits=limits)
    else:
        manager = FairSessionManager(server, limits=limits, security_settings=security)
        endpoint = StreamableHTTPASGIApp(manager)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run(), health.running() if health is not None else nullcontext():
            yield

    return Starlette(
        routes=[Route(path, endpoint=RequireAuthMiddleware(endpoint, [])), *(health.routes() if health else ())],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )

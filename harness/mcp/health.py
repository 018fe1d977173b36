"""Liveness and readiness of ``harness mcp serve --http``: ``GET /healthz`` and ``GET /readyz``.

- ``/healthz`` answers 200 ``{"status": "ok"}`` whenever the process serves requests at all (an
  orchestrator restarts a server that stops answering it).
- ``/readyz`` answers 200 once the pipeline's shared skill sources (global folders, markets, the
  workspace's folders) have loaded, and 503 with the reason otherwise: their first load still
  running, a market that has never answered, or every source failing now
  (:class:`~harness.pipeline.status.Readiness`). A load balancer sends requests only to a ready
  server.

Both are unauthenticated (probes carry no token), so they say nothing a stranger may not know:
a status, a reason and counts of sources, never a skill, a user, a market's name or address, or
a path (see "Secrets" in ``docs/security.md``). The answer comes from memory: a probe reads no
file and asks no market. The shared sources are loaded when the server starts, and again in the
background whenever a probe finds the server not ready (one load at a time), so a server that
no request reaches, because it is not ready, still becomes ready once its sources answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from filesystems import BackgroundTasks
from harness.pipeline import SkillPipeline

__all__ = ["LIVENESS_PATH", "READINESS_PATH", "Health"]

log = logging.getLogger(__name__)

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
_NO_STORE = {"Cache-Control": "no-store"}


class Health:
    """The liveness and readiness answers of a server over ``pipeline`` (see the module).

    :meth:`routes` are the two endpoints; :meth:`running` is the server's lifetime, during which
    the shared sources load in the background (at the start, and after a probe found them not
    ready).
    """

    def __init__(self, pipeline: SkillPipeline) -> None:
        self.pipeline = pipeline
        self._tasks: BackgroundTasks | None = None
        self._loading = False

    def routes(self) -> list[Route]:
        """``GET /healthz`` and ``GET /readyz``."""
        return [
            Route(LIVENESS_PATH, self._live, methods=["GET"]),
            Route(READINESS_PATH, self._ready, methods=["GET"]),
        ]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the server runs: load the shared sources now, and again when a probe asks."""
        async with BackgroundTasks() as tasks:
            self._tasks = tasks
            try:
                self._load()
                yield
            finally:
                self._tasks = None

    def _load(self) -> None:
        """Load the shared sources in the background, unless a load is under way."""
        if self._tasks is None or self._loading:
            return
        self._loading = True
        self._tasks.start_soon(self._warm, name="harness-mcp-readiness")

    async def _warm(self) -> None:
        try:
            readiness = await self.pipeline.warm()
            if not readiness.ready:
                log.info("not ready: %s", readiness.reason)
        finally:
            self._loading = False

    async def _live(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"}, headers=_NO_STORE)

    async def _ready(self, request: Request) -> JSONResponse:
        readiness = self.pipeline.readiness()
        if not readiness.ready:
            self._load()
        return JSONResponse(readiness.as_dict(), status_code=200 if readiness.ready else 503, headers=_NO_STORE)

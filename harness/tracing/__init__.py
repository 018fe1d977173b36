"""OpenTelemetry tracing and metrics of agent runs (optional: ``pip install 'agent-skill-harness[otel]'``).

Every agent traces its runs through :class:`RunTracer` and measures them, with its pipeline,
through :class:`RunMetrics`, with the OpenTelemetry API; nothing is recorded until the
application configures an SDK, and without ``opentelemetry-api`` installed nothing is imported
or done. Span, metric and attribute names live in :mod:`harness.tracing.attributes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from filesystems import lazy_exports

if TYPE_CHECKING:
    from harness.tracing.metrics import RunMetrics
    from harness.tracing.tracer import RunTracer

__all__ = ["RunMetrics", "RunTracer"]

__getattr__, __dir__ = lazy_exports(__name__)

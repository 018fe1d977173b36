"""``RunMetrics``: OpenTelemetry metrics of an agent's runs and of its skill pipeline.

Runs are measured off their events, as the spans are: each run counts once in ``harness.turns``
by how it ended and its duration goes to ``gen_ai.invoke_agent.duration``; each model call's to
``gen_ai.client.operation.duration`` (with its tokens in ``gen_ai.client.token.usage``) and each
tool call's to ``gen_ai.execute_tool.duration``. The pipeline tells what it does beside the turns
(:class:`~harness.pipeline.status.PipelineObserver`): failed market loads and environment
builds; and two gauges read what it holds, from memory, when the metrics are collected: the
bytes in ``.skills-cache`` and the users it keeps. Every name is in
:mod:`harness.tracing.attributes`; no attribute carries a user id, a session, a skill or text a
model wrote (a tool name the turn does not offer is ``_OTHER``).

Metrics are off until there is a meter provider: the one given, or the global one once the
application has set it (``opentelemetry.metrics.set_meter_provider``, or the SDK's
``OTEL_PYTHON_METER_PROVIDER``). Until then a run is passed through untouched and nothing is
recorded; without ``opentelemetry-api`` installed nothing is imported either.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harness.events import (
    UNKNOWN_TOOL,
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ModelReplied,
    TextDelta,
    ToolCallDelta,
    ToolReturned,
)
from harness.tracing import attributes as attr

if TYPE_CHECKING:
    from harness.pipeline import SkillPipeline

__all__ = ["RunMetrics"]

_SCOPE = "agent-skill-harness"
# How a run ended (``harness.turn.outcome``).
COMPLETED, PAUSED, FAILED, CANCELLED = "completed", "paused", "failed", "cancelled"


@functools.cache
def _api() -> ModuleType | None:
    """``opentelemetry.metrics``, or None when the API is not installed (imported on first use)."""
    try:
        return importlib.import_module("opentelemetry.metrics")
    except ImportError:
        return None


def _configured_provider() -> Any | None:
    """The global meter provider once the application has set one, else None."""
    api = _api()
    if api is None:
        return None
    provider = api.get_meter_provider()
    # Until the application sets one, the API hands out providers of its own that record nothing.
    return None if type(provider).__module__.startswith(api.__name__) else provider


class RunMetrics:
    """Measures an agent's runs (:meth:`measure`) and its pipeline (:meth:`watch`) with the
    OpenTelemetry metrics API (names in :mod:`harness.tracing.attributes`).

    ``meter_provider`` is an OpenTelemetry ``MeterProvider``; None uses the global one once the
    application has set it. Until there is one, :meth:`measure` returns the run's events as
    they are and nothing is recorded. Building it imports nothing.
    """

    def __init__(self, meter_provider: Any | None = None) -> None:
        self.meter_provider = meter_provider
        self._instruments: _Instruments | None = None
        self._pipeline: SkillPipeline | None = None

    @property
    def on(self) -> bool:
        """Whether runs are measured now (there is a meter provider)."""
        return self._switch_on() is not None

    def watch(self, pipeline: SkillPipeline) -> None:
        """Also report ``pipeline``: its failed market loads and environment builds, the bytes
        in its staging cache and the users it holds (from when metrics are on; the agent that
        owns the pipeline calls this once)."""
        self._pipeline = pipeline
        instruments = self._switch_on()
        if instruments is not None:
            instruments.watch(pipeline)

    def measure(self, events: AsyncIterator[Event], *, agent: str) -> AsyncIterator[Event]:
        """``events`` (one run of ``agent``) as they are, measured as they pass; ``events``
        itself while metrics are off."""
        instruments = self._switch_on()
        if instruments is None:
            return events
        return _RunMeasures(instruments, agent).follow(events)

    def _switch_on(self) -> _Instruments | None:
        if self._instruments is None:
            provider = self.meter_provider if self.meter_provider is not None else _configured_provider()
            if provider is None:
                return None
            self._instruments = _Instruments.of(provider)
            if self._pipeline is not None:
                self._instruments.watch(self._pipeline)
        return self._instruments


class _Instruments:
    """One meter provider's instruments, shared by every agent measured with it (a meter keeps
    the first instrument of a name, callbacks included), and the pipelines its gauges read."""

    _of: weakref.WeakKeyDictionary[Any, _Instruments] = weakref.WeakKeyDictionary()
    _made = threading.Lock()

    @classmethod
    def of(cls, provider: Any) -> _Instruments:
        with cls._made:
            try:
                instruments = cls._of.get(provider)
            except TypeError:  # a provider that cannot be weakly referenced: its own instruments
                return cls(provider.get_meter(_SCOPE))
            if instruments is None:
                instruments = cls._of[provider] = cls(provider.get_meter(_SCOPE))
            return instruments

    def __init__(self, meter: Any) -> None:
        api = _api()
        assert api is not None  # a provider exists only where the API does
        self._observation = api.Observation
        self.turns = meter.create_counter(attr.TURNS, unit="{turn}", description="Agent runs that ended, by outcome.")
        self.agent_duration = meter.create_histogram(
            attr.AGENT_DURATION,
            unit="s",
            description="Duration of an agent run, from its start to its last event.",
            explicit_bucket_boundaries_advisory=attr.AGENT_DURATION_BUCKETS,
        )
        self.model_duration = meter.create_histogram(
            attr.OPERATION_DURATION,
            unit="s",
            description="Duration of a model call.",
            explicit_bucket_boundaries_advisory=attr.OPERATION_DURATION_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            attr.TOKEN_USAGE,
            unit="{token}",
            description="Input and output tokens of a model call.",
            explicit_bucket_boundaries_advisory=attr.TOKEN_USAGE_BUCKETS,
        )
        self.tool_duration = meter.create_histogram(
            attr.TOOL_DURATION,
            unit="s",
            description="Duration of a tool call.",
            explicit_bucket_boundaries_advisory=attr.OPERATION_DURATION_BUCKETS,
        )
        self.market_failures = meter.create_counter(
            attr.MARKET_FAILURES,
            unit="{failure}",
            description="Loads of a market that failed or did not answer in time.",
        )
        self.builds = meter.create_counter(
            attr.ENVIRONMENT_BUILDS, unit="{build}", description="Builds of skill environments, by outcome."
        )
        self.build_duration = meter.create_histogram(
            attr.ENVIRONMENT_BUILD_DURATION,
            unit="s",
            description="Duration of a skill environment's build.",
            explicit_bucket_boundaries_advisory=attr.ENVIRONMENT_BUILD_DURATION_BUCKETS,
        )
        self._pipelines: weakref.WeakSet[SkillPipeline] = weakref.WeakSet()
        self._watching = threading.Lock()  # collections run in the exporter's thread
        meter.create_observable_gauge(
            attr.CACHE_USAGE,
            callbacks=[self._cache_usage],
            unit="By",
            description="Bytes in the workspace's staging cache: staged skill files and built environments.",
        )
        meter.create_observable_gauge(
            attr.CACHED_USERS,
            callbacks=[self._cached_users],
            unit="{user}",
            description="Users whose skill layers and views the pipeline holds.",
        )

    def watch(self, pipeline: SkillPipeline) -> None:
        with self._watching:
            self._pipelines.add(pipeline)  # weakly: a closed agent's pipeline is not kept alive
        pipeline.observe(self)

    def _watched(self) -> list[SkillPipeline]:
        with self._watching:
            return list(self._pipelines)

    def _cache_usage(self, options: object) -> Iterator[Any]:
        totals: dict[str, int] = {}
        for pipeline in self._watched():
            for part, size in pipeline.cache_usage.items():
                totals[part] = totals.get(part, 0) + size
        for part, size in totals.items():
            yield self._observation(size, {attr.CACHE_PART: part})

    def _cached_users(self, options: object) -> Iterator[Any]:
        pipelines = self._watched()
        if pipelines:
            yield self._observation(sum(p.cached_users for p in pipelines))

    # -- the pipeline's observer ---------------------------------------------------------------

    def market_failed(self, source: str) -> None:
        """A market's load failed (see :class:`~harness.pipeline.status.PipelineObserver`)."""
        self.market_failures.add(1, {attr.MARKET_SOURCE: source})

    def environment_built(self, *, ok: bool, seconds: float) -> None:
        """A skill environment's build ended (see :class:`~harness.pipeline.status.PipelineObserver`)."""
        outcome = {attr.ENVIRONMENT_OUTCOME: "ready" if ok else "failed"}
        self.builds.add(1, outcome)
        self.build_duration.record(seconds, outcome)


class _RunMeasures:
    """What one run has measured so far, moved along by its events."""

    def __init__(self, instruments: _Instruments, agent: str) -> None:
        self._instruments = instruments
        self._agent = {attr.AGENT_NAME: agent}
        self._began = time.perf_counter()
        self._waiting_since = self._began  # when the step that made the latest event began
        self._chat_began: float | None = None  # the model call in progress, from its first delta
        self._waiting: set[str] = set()  # approvals asked and not decided

    async def follow(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """Pass ``events`` through, measuring them; the run counts once however it ends."""
        outcome, error = CANCELLED, None  # a stream given up on, or a task cancelled
        try:
            while True:
                self._waiting_since = time.perf_counter()
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                self.observe(event)
                yield event
            outcome = PAUSED if self._waiting else COMPLETED
        except Exception as exc:
            outcome, error = FAILED, type(exc).__qualname__
            raise
        finally:
            self.end(outcome, error)

    def observe(self, event: Event) -> None:
        if isinstance(event, TextDelta | ToolCallDelta):
            if self._chat_began is None:
                self._chat_began = self._waiting_since
        elif isinstance(event, ModelReplied):
            self._model_replied(event)
        elif isinstance(event, ToolReturned):
            self._tool_returned(event)
        elif isinstance(event, ApprovalRequested):
            self._waiting.add(event.approval_id)
        elif isinstance(event, ApprovalDecided):
            self._waiting.discard(event.approval_id)

    def _model_replied(self, event: ModelReplied) -> None:
        """A model call ended: from when the harness began waiting for its first delta (or its
        whole reply) to now. A reply no model made (an input hook's answer) is no call."""
        began, self._chat_began = self._chat_began or self._waiting_since, None
        if not event.model:
            return
        provider, _, model = event.model.rpartition(":")
        attributes = {attr.OPERATION_NAME: attr.CHAT, attr.REQUEST_MODEL: model}
        if provider:
            attributes[attr.PROVIDER_NAME] = provider
        instruments = self._instruments
        instruments.model_duration.record(time.perf_counter() - began, attributes)
        usage = event.usage
        if usage.input_tokens or usage.output_tokens:  # a model that reports no usage is not counted
            instruments.tokens.record(usage.input_tokens, {**attributes, attr.TOKEN_TYPE: "input"})
            instruments.tokens.record(usage.output_tokens, {**attributes, attr.TOKEN_TYPE: "output"})

    def _tool_returned(self, event: ToolReturned) -> None:
        if event.duration is None:  # it did not run
            return
        # A name the turn does not offer is the model's text: never an attribute.
        name = attr.UNKNOWN_ERROR if event.error_type == UNKNOWN_TOOL else event.name
        attributes = {**self._agent, attr.TOOL_NAME: name, attr.TOOL_TYPE: "function"}
        if event.error:
            attributes[attr.ERROR_TYPE] = event.error_type or attr.UNKNOWN_ERROR
        self._instruments.tool_duration.record(event.duration, attributes)

    def end(self, outcome: str, error: str | None) -> None:
        """Count the run by ``outcome`` and record its duration (with ``error``, what it raised)."""
        attributes = dict(self._agent)
        if error is not None:
            attributes[attr.ERROR_TYPE] = error
        self._instruments.agent_duration.record(time.perf_counter() - self._began, attributes)
        self._instruments.turns.add(1, {**self._agent, attr.TURN_OUTCOME: outcome})

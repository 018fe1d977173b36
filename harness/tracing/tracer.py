"""``RunTracer``: OpenTelemetry spans for agent runs, read off the run's events.

A run becomes an ``invoke_agent {agent}`` span with a ``harness.turn.prepare`` child for the
skill pipeline, a ``chat {model}`` child per model call and an ``execute_tool {tool}`` child per
tool call (a skill load's carries the
skill's name and source). A forked skill's subagent is an ``invoke_agent {subagent}``
span under the run's, and its tool calls nest under it. The spans are made with the OpenTelemetry *API* only, through the
tracer provider given or the global one; configuring an SDK and exporters is the
application's business. Without ``opentelemetry-api`` installed tracing does nothing at all.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from harness.context import RuntimeContext
from harness.events import (
    Event,
    ModelReplied,
    RunTally,
    SkillLoaded,
    SkillWarning,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolCallDelta,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.skills.skill import Layer
from harness.tracing import attributes as attr

__all__ = ["RunTracer"]

_SCOPE = "agent-skill-harness"
_TRUE = frozenset({"1", "true", "yes", "on"})


@functools.cache
def _otel() -> tuple[ModuleType, ModuleType] | None:
    """``(opentelemetry.trace, opentelemetry.context)``, or None when the API is not installed.
    Imported on the first traced run, never by ``import harness``."""
    try:
        return importlib.import_module("opentelemetry.trace"), importlib.import_module("opentelemetry.context")
    except ImportError:
        return None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Run:
    """What a run's spans say about it before its first event."""

    agent: str
    model: str
    context: RuntimeContext
    message: str


class RunTracer:
    """Traces agent runs following the OpenTelemetry GenAI conventions (names in
    :mod:`harness.tracing.attributes`).

    ``tracer_provider`` is an OpenTelemetry ``TracerProvider``; None uses the global one (a
    no-op until the application configures an SDK). ``capture_content`` records the user's
    message, the reply and tool arguments and results on the spans; None reads the standard
    opt-in ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true`` to record) once,
    here. Building a tracer imports nothing; the API is imported on the first traced run.
    """

    def __init__(self, tracer_provider: Any | None = None, *, capture_content: bool | None = None) -> None:
        self.tracer_provider = tracer_provider
        if capture_content is None:
            capture_content = os.environ.get(attr.CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUE
        self.capture_content = capture_content
        self._tracer: Any = None

    def trace(
        self, events: AsyncIterator[Event], *, agent: str, model: str, context: RuntimeContext, message: str
    ) -> AsyncIterator[Event]:
        """``events`` (one run of ``agent`` for ``context``) as they are, traced as they pass.

        Each step of the run executes with its span current (the run's, the pipeline's or a
        tool's), so spans a tool makes nest under its ``execute_tool``. Returns ``events``
        itself when OpenTelemetry is not installed.
        """
        otel = _otel()
        if otel is None:
            return events
        trace, context_api = otel
        if self._tracer is None:
            provider = self.tracer_provider or trace.get_tracer_provider()
            self._tracer = provider.get_tracer(_SCOPE)
        run = _Run(agent=agent, model=model, context=context, message=message)
        return _RunSpans(self._tracer, trace, run, capture=self.capture_content).follow(events, context_api)


@dataclass(slots=True)
class _Subagent:
    """An open subagent's span, its context and its own totals."""

    run_id: str
    span: Any
    context: Any
    tally: RunTally


class _RunSpans:
    """The open spans of one run, moved along by its events."""

    def __init__(self, tracer: Any, trace: ModuleType, run: _Run, *, capture: bool) -> None:
        self._tracer = tracer
        self._trace = trace
        self._capture = capture
        self._tally = RunTally()
        provider, _, model = run.model.rpartition(":")
        self._run_model = run.model
        self._waiting_since = time.time_ns()  # when the step that made the latest event began
        self.chat: Any = None  # the model call in progress (from its first delta to its reply)
        attributes: dict[str, Any] = {
            attr.OPERATION_NAME: attr.INVOKE_AGENT,
            attr.AGENT_NAME: run.agent,
            attr.CONVERSATION_ID: run.context.session_id,
            attr.REQUEST_MODEL: model,
        }
        if provider:
            attributes[attr.PROVIDER_NAME] = provider
        if capture:
            attributes[attr.INPUT_MESSAGES] = _messages("user", run.message)
        self.run = tracer.start_span(f"{attr.INVOKE_AGENT} {run.agent}", attributes=attributes)
        self._run_context = trace.set_span_in_context(self.run)
        self.subagents: list[_Subagent] = []  # innermost last
        self.prepare: Any = self._child(attr.PREPARE_SPAN, {})
        self.tools: dict[str, Any] = {}
        self.current = trace.set_span_in_context(self.prepare)

    async def follow(self, events: AsyncIterator[Event], context_api: ModuleType) -> AsyncIterator[Event]:
        """Pass ``events`` through, running each step of ``events`` under the current span."""
        try:
            while True:
                self._waiting_since = time.time_ns()
                token = context_api.attach(self.current)
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                finally:
                    context_api.detach(token)
                self.observe(event)
                yield event
        except Exception as exc:
            self.fail(exc)
            raise
        finally:
            self.end()

    def observe(self, event: Event) -> None:
        """Move the spans along for ``event``."""
        self._tally.add(event)
        for subagent in self.subagents:
            subagent.tally.add(event)
        if isinstance(event, TextDelta | ToolCallDelta | ModelReplied):
            self._model_step(event)
        elif isinstance(event, TurnPrepared):
            self._prepared(event)
        elif isinstance(event, ToolCalled):
            attributes = {
                attr.OPERATION_NAME: attr.EXECUTE_TOOL,
                attr.TOOL_NAME: event.name,
                attr.TOOL_CALL_ID: event.call_id,
                attr.TOOL_TYPE: "function",
            }
            if self._capture:
                attributes[attr.TOOL_CALL_ARGUMENTS] = json.dumps(event.arguments)
            span = self.tools[event.call_id] = self._child(f"{attr.EXECUTE_TOOL} {event.name}", attributes)
            self.current = self._trace.set_span_in_context(span)
        elif isinstance(event, SkillLoaded):
            span = next(reversed(self.tools.values()), self.run)
            span.set_attributes(
                {
                    attr.SKILL_NAME: event.name or event.skill_id,
                    attr.SKILL_SOURCE_URI: event.location,
                    attr.SKILL_PATH: event.path,
                }
            )
        elif isinstance(event, ToolReturned):
            self._returned(event)
        elif isinstance(event, SubagentStarted):
            self._subagent_started(event)
        elif isinstance(event, SubagentFinished):
            self._subagent_finished(event)
        elif isinstance(event, SkillWarning):
            self.run.add_event("harness.skill.warning", {"harness.skill.id": event.skill_id, "code": event.code})

    def _prepared(self, event: TurnPrepared) -> None:
        if self.prepare is None:  # a forked skill's subagent turn prepares again within the run
            return
        counts = {
            attr.SKILLS: event.skill_count,
            attr.VISIBLE_SKILLS: event.visible_count,
            attr.DIAGNOSTICS: event.diagnostics,
            **{attr.layer_skills(layer.value): event.layers.get(layer.value, 0) for layer in Layer},
        }
        staged = {
            attr.STAGED_WRITTEN: event.staged_written,
            attr.STAGED_UNCHANGED: event.staged_unchanged,
            attr.STAGED_REMOVED: event.staged_removed,
        }
        counts.update({name: value for name, value in staged.items() if value is not None})
        self.prepare.set_attributes(counts)
        self.prepare.end()
        self.prepare = None
        self.current = self._scope()

    def _returned(self, event: ToolReturned) -> None:
        span = self.tools.pop(event.call_id, None)
        if span is None:
            return
        if self._capture:
            span.set_attribute(attr.TOOL_CALL_RESULT, event.content)
        if event.error:
            self._set_error(span, event.error_type or attr.UNKNOWN_ERROR, event.content)
        span.end()
        self.current = self._scope()

    def _model_step(self, event: TextDelta | ToolCallDelta | ModelReplied) -> None:
        """A model call's delta or reply: its ``chat`` span starts when the harness began waiting
        for its first event and ends with its reply, carrying the reply's model and usage. A
        reply that no model made (``model`` empty) has no span."""
        if self.chat is None:
            if isinstance(event, ModelReplied) and not event.model:
                return
            self.chat = self._tracer.start_span(
                attr.CHAT,
                context=self._scope(),
                attributes={attr.OPERATION_NAME: attr.CHAT},
                start_time=self._waiting_since,
            )
        if not isinstance(event, ModelReplied):
            return
        provider, _, model = (event.model or self._run_model).rpartition(":")
        self.chat.update_name(f"{attr.CHAT} {model}")
        attributes = {
            attr.REQUEST_MODEL: model,
            attr.USAGE_INPUT_TOKENS: event.usage.input_tokens,
            attr.USAGE_OUTPUT_TOKENS: event.usage.output_tokens,
        }
        if provider:
            attributes[attr.PROVIDER_NAME] = provider
        self.chat.set_attributes(attributes)
        if self._capture and event.content:
            self.chat.set_attribute(attr.OUTPUT_MESSAGES, _messages("assistant", event.content))
        self.chat.end()
        self.chat = None

    def _subagent_started(self, event: SubagentStarted) -> None:
        attributes = {
            attr.OPERATION_NAME: attr.INVOKE_AGENT,
            attr.AGENT_NAME: event.agent,
            attr.CONVERSATION_ID: event.session_id,
            attr.SKILL_NAME: event.skill,
        }
        span = self._child(f"{attr.INVOKE_AGENT} {event.agent}", attributes)
        context = self._trace.set_span_in_context(span)
        self.subagents.append(_Subagent(run_id=event.run_id, span=span, context=context, tally=RunTally()))
        self.current = context

    def _subagent_finished(self, event: SubagentFinished) -> None:
        while self.subagents:
            subagent = self.subagents.pop()
            self._end_agent(subagent.span, subagent.tally)
            if subagent.run_id == event.run_id:
                break
        self.current = self._scope()

    def _scope(self) -> Any:
        """The context new spans start in: the innermost open subagent's, else the run's."""
        return self.subagents[-1].context if self.subagents else self._run_context

    def fail(self, exc: BaseException) -> None:
        """The run raised ``exc``: every open span ends with it as the error."""
        open_spans = [self.run, self.prepare, self.chat, *self.tools.values(), *(s.span for s in self.subagents)]
        for span in open_spans:
            if span is not None:
                self._set_error(span, type(exc).__qualname__, str(exc))
        self.run.record_exception(exc)

    def end(self) -> None:
        """End the run's span and any span still open (a stream given up on)."""
        for span in [self.prepare, self.chat, *self.tools.values()]:
            if span is not None:
                span.end()
        self.tools.clear()
        self.prepare = self.chat = None
        while self.subagents:
            subagent = self.subagents.pop()
            self._end_agent(subagent.span, subagent.tally)
        self._end_agent(self.run, self._tally)

    def _end_agent(self, span: Any, tally: RunTally) -> None:
        """End an ``invoke_agent`` span with its usage (and its reply, when contents are recorded)."""
        usage = tally.usage
        span.set_attributes(
            {attr.USAGE_INPUT_TOKENS: usage.input_tokens, attr.USAGE_OUTPUT_TOKENS: usage.output_tokens}
        )
        if self._capture and tally.reply:
            span.set_attribute(attr.OUTPUT_MESSAGES, _messages("assistant", tally.reply))
        span.end()

    def _child(self, name: str, attributes: dict[str, Any]) -> Any:
        return self._tracer.start_span(name, context=self._scope(), attributes=attributes)

    def _set_error(self, span: Any, error_type: str, description: str) -> None:
        span.set_attribute(attr.ERROR_TYPE, error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, description))


def _messages(role: str, text: str) -> str:
    """One message in the conventions' JSON shape for ``gen_ai.input/output.messages``."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

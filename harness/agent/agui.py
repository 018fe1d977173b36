"""A streamed run as AG-UI protocol events, for web UIs (``pip install 'agent-skill-harness[agui]'``).

:func:`agui_events` turns ``agent.stream(...)`` into the ``ag-ui-protocol`` package's event
objects and :func:`agui_sse` into the server-sent-event lines its encoder writes, ready for any
ASGI framework's streaming response::

    return StreamingResponse(agui_sse(agent.stream(text, context=ctx)), media_type="text/event-stream")

The mapping: ``RunStarted`` → ``RUN_STARTED`` (the session is the thread); the model's text →
``TEXT_MESSAGE_START`` / ``_CONTENT`` / ``_END``, one message per model step; its tool calls →
``TOOL_CALL_START`` / ``_ARGS`` / ``_END`` and the tool's result → ``TOOL_CALL_RESULT``;
``RunFinished`` → ``RUN_FINISHED`` with the reply as result and the token usage. An error
ends the stream with ``RUN_ERROR`` (the exception's class name as code). The harness's own
events (``TurnPrepared``, ``SkillLoaded``, ``ShellRan``, ``EnvironmentWaited``, ``SkillWarning``) become ``CUSTOM``
events named ``harness.<EventName>``.

A forked skill's subagent: ``SubagentStarted`` → ``SUBAGENT_STARTED`` and ``SubagentFinished`` →
``SUBAGENT_FINISHED`` (its answer as result), with the same ``subagentRunId`` (the harness
event's ``run_id``); every text, tool-call and custom event in between carries that
``subagentRunId``, so a UI shows the subagent's streamed text apart from the agent's (events
without one are the agent's own). A run that fails inside a subagent sends
``SUBAGENT_ERROR`` for it before ``RUN_ERROR``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from filesystems import redact_secrets
from harness.events import (
    Event,
    ModelReplied,
    RunFinished,
    RunStarted,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolCallDelta,
    ToolCalled,
    ToolReturned,
)

__all__ = ["agui_events", "agui_sse"]

log = logging.getLogger(__name__)


def _import(module: str) -> ModuleType:
    """``module`` of the ``ag-ui-protocol`` package; ``ImportError`` naming the extra if missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            "the 'ag-ui-protocol' package is not installed; pip install 'agent-skill-harness[agui]'"
        ) from exc


async def agui_sse(events: AsyncIterator[Event]) -> AsyncIterator[str]:
    """:func:`agui_events` encoded by the package's ``EventEncoder`` (``data: {...}\\n\\n`` each)."""
    encoder = _import("ag_ui.encoder").EventEncoder()
    async for event in agui_events(events):
        yield encoder.encode(event)


async def agui_events(events: AsyncIterator[Event]) -> AsyncIterator[Any]:
    """The AG-UI events (``ag_ui.core`` models) of a streamed run (``agent.stream(...)``).

    A stream that does not start with ``RunStarted`` gets a ``RUN_STARTED`` with fresh ids. An
    exception from ``events`` is logged and ends the stream with ``RUN_ERROR``; it is not
    raised again (the UI is told, the response completes).
    """
    translator = _Translator(_import("ag_ui.core"))
    try:
        async for event in events:
            for out in translator.translate(event):
                yield out
    except Exception as exc:
        log.warning("streamed run failed: %s", exc, exc_info=True)
        for out in translator.failed(exc):
            yield out


class _Translator:
    """Harness events in, AG-UI events out; remembers the open message and tool calls."""

    def __init__(self, core: ModuleType) -> None:
        self._core = core
        self._run: RunStarted | None = None
        self._message: str | None = None  # the current model step's message id
        self._text_open = False
        self._streamed_text = False
        self._open_calls: list[str] = []
        self._started_calls: set[str] = set()
        self._subagents: list[str] = []  # the open subagents' run ids, innermost last

    def translate(self, event: Event) -> list[Any]:
        out = [] if self._run is not None or isinstance(event, RunStarted) else self._start(None)
        if isinstance(event, RunStarted):
            out += self._start(event)
        elif isinstance(event, TextDelta):
            out += self._text(event.text)
        elif isinstance(event, ToolCallDelta):
            out += self._close_text()
            out += self._call_start(event.call_id, event.name)
            if event.arguments:
                out.append(self._event("ToolCallArgsEvent", tool_call_id=event.call_id, delta=event.arguments))
        elif isinstance(event, ModelReplied):
            out += self._step_end(event.content)
        elif isinstance(event, ToolCalled):
            if event.call_id not in self._started_calls:
                out += self._call_start(event.call_id, event.name)
                arguments = json.dumps(event.arguments)
                out.append(self._event("ToolCallArgsEvent", tool_call_id=event.call_id, delta=arguments))
                out += self._close_calls()
        elif isinstance(event, ToolReturned):
            out.append(
                self._event(
                    "ToolCallResultEvent",
                    message_id=_new_id(),
                    tool_call_id=event.call_id,
                    content=event.content,
                    role="tool",
                )
            )
        elif isinstance(event, RunFinished):
            out.append(self._finished(event))
        elif isinstance(event, SubagentStarted):
            out += self._step_end("")
            parent = self._subagents[-1] if self._subagents else None
            out.append(
                self._core.SubagentStartedEvent(
                    subagent_run_id=event.run_id,
                    name=event.agent,
                    description=f"skill {event.skill}",
                    parent_subagent_run_id=parent,
                )
            )
            self._subagents.append(event.run_id)
        elif isinstance(event, SubagentFinished):
            out += self._step_end("")
            if event.run_id in self._subagents:
                self._subagents.remove(event.run_id)
            out.append(self._core.SubagentFinishedEvent(subagent_run_id=event.run_id, result=event.reply))
        else:
            name = f"harness.{type(event).__name__}"
            out.append(self._event("CustomEvent", name=name, value=_jsonable(dataclasses.asdict(event))))
        return out

    def failed(self, exc: Exception) -> list[Any]:
        out = ([] if self._run is not None else self._start(None)) + self._close_text() + self._close_calls()
        # Model errors arrive with their keys masked; credentials in a URL are masked here too.
        message, code = redact_secrets(str(exc) or type(exc).__name__), type(exc).__name__
        while self._subagents:
            run_id = self._subagents.pop()
            out.append(self._core.SubagentErrorEvent(subagent_run_id=run_id, message=message, code=code))
        return [*out, self._core.RunErrorEvent(message=message, code=code)]

    def _event(self, kind: str, **fields: Any) -> Any:
        """The ``ag_ui.core`` event ``kind``, attributed to the open subagent if there is one."""
        if self._subagents:
            fields["subagent_run_id"] = self._subagents[-1]
        return getattr(self._core, kind)(**fields)

    def _start(self, event: RunStarted | None) -> list[Any]:
        self._run = event or RunStarted(run_id=_new_id(), agent="", user_id="", session_id=_new_id())
        return [self._core.RunStartedEvent(thread_id=self._run.session_id, run_id=self._run.run_id)]

    def _message_id(self) -> str:
        if self._message is None:
            self._message = _new_id()
        return self._message

    def _text(self, text: str) -> list[Any]:
        out = []
        if not self._text_open:
            out.append(self._event("TextMessageStartEvent", message_id=self._message_id(), role="assistant"))
            self._text_open = self._streamed_text = True
        out.append(self._event("TextMessageContentEvent", message_id=self._message_id(), delta=text))
        return out

    def _close_text(self) -> list[Any]:
        if not self._text_open:
            return []
        self._text_open = False
        return [self._event("TextMessageEndEvent", message_id=self._message_id())]

    def _call_start(self, call_id: str, name: str) -> list[Any]:
        if call_id in self._started_calls:
            return []
        self._started_calls.add(call_id)
        self._open_calls.append(call_id)
        return [
            self._event(
                "ToolCallStartEvent", tool_call_id=call_id, tool_call_name=name, parent_message_id=self._message_id()
            )
        ]

    def _close_calls(self) -> list[Any]:
        out = [self._event("ToolCallEndEvent", tool_call_id=call_id) for call_id in self._open_calls]
        self._open_calls.clear()
        return out

    def _step_end(self, content: str) -> list[Any]:
        """A model step ended: its message closes (sent whole if it was not streamed)."""
        out = []
        if content and not self._streamed_text:
            out += self._text(content)
        out += self._close_text() + self._close_calls()
        self._message = None
        self._streamed_text = False
        return out

    def _finished(self, event: RunFinished) -> Any:
        assert self._run is not None
        usage = self._core.TokenUsage(
            input_tokens=event.usage.input_tokens,
            output_tokens=event.usage.output_tokens,
            total_tokens=event.usage.total_tokens,
        )
        return self._core.RunFinishedEvent(
            thread_id=self._run.session_id, run_id=self._run.run_id, result=event.reply, usage=[usage]
        )


def _new_id() -> str:
    return uuid.uuid4().hex


def _jsonable(value: Any) -> Any:
    """``value`` with mappings made plain dicts, for a CUSTOM event's JSON value."""
    return json.loads(json.dumps(value, default=str))

"""The tool calls of one model step: run side by side, reported in the order the model asked.

When a model step asks for several tools, :func:`run_calls` starts them all at once in one task
group, but the calls of tools that change state a later call may read (the file, learning and
workflow tools: a write then a read of the same file, a workflow run started then continued)
run one after another in the order asked, in one lane beside the others. A call that fails (or
raises) becomes an ``error: ...`` result for the model and never cancels its siblings. The turn then reports each call in the model's order — its
:class:`~harness.events.ToolCalled`, what it did (``SkillLoaded``, ``ShellRan``, the approval
events), its :class:`~harness.events.ToolReturned` — so a later call may already have run when
its ``ToolCalled`` is reported. An approver is asked one question at a time
(:func:`harness.agent.toolset.serialised`).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import anyio

from harness.context import RuntimeContext
from harness.events import UNKNOWN_TOOL, Event
from harness.models import ToolCall
from harness.tools.context import ToolContext, calling
from harness.tools.function import Tool

__all__ = ["CallEvents", "CallResult", "call_context", "run_calls"]

log = logging.getLogger(__name__)


_COLLECTING: ContextVar[tuple[CallEvents, list[Event]] | None] = ContextVar("harness_call_events", default=None)


class CallEvents(list[Event]):
    """A turn's event list, where its tools and its gate report (``SkillLoaded``, ``ShellRan``,
    approval events). Inside :meth:`collecting` an event goes to the list of the call running
    in that task, so calls that run side by side keep their own events; outside one (a paused
    call run on resume) it stays here."""

    def append(self, event: Event) -> None:
        collecting = _COLLECTING.get()
        if collecting is not None and collecting[0] is self:
            collecting[1].append(event)
        else:
            super().append(event)

    @contextmanager
    def collecting(self) -> Iterator[list[Event]]:
        """The events reported by this task (one call) while the block runs."""
        events: list[Event] = []
        token = _COLLECTING.set((self, events))
        try:
            yield events
        finally:
            _COLLECTING.reset(token)


@dataclass(kw_only=True)
class CallResult:
    """What one call returned for the model, what failed (``None`` when nothing did), the
    events the call reported while it ran and how long it ran."""

    content: str
    error_type: str | None
    events: list[Event] = field(default_factory=list)
    duration: float | None = None  # seconds the call ran


def call_context(context: RuntimeContext, *, call_id: str, tool: str, skill: str | None) -> ToolContext:
    """The :class:`ToolContext` of a call of ``tool`` in ``context``'s turn, with the workflow
    action being performed in this task (:func:`harness.engine.current_action`), if any."""
    # No workflow action can run before the engine is loaded, so a turn never loads it.
    action_module = sys.modules.get("harness.engine.action")
    action = action_module.current_action() if action_module is not None else None
    return ToolContext(
        user_id=context.user_id,
        session_id=context.session_id,
        call_id=call_id,
        tool=tool,
        action_id=action.action_id if action is not None else None,
        skill=skill,
    )


async def run_calls(
    tools: Mapping[str, Tool],
    calls: Sequence[ToolCall],
    *,
    context: RuntimeContext,
    skill: str | None,
    events: CallEvents,
    sequential: Collection[str] = frozenset(),
) -> list[CallResult]:
    """Run ``calls`` concurrently with ``tools`` (``skill``: the turn's invoked skill's name),
    except that calls of the ``sequential`` tools run one after another in the order asked, in
    one lane beside the others; the results come in the order of ``calls``, each with the
    events it reported to ``events``."""
    results: list[CallResult | None] = [None] * len(calls)

    async def run(*indexes: int) -> None:
        for index in indexes:
            began = time.perf_counter()
            with events.collecting() as reported:
                content, error_type = await _call(tools, calls[index], context, skill)
            duration = time.perf_counter() - began
            results[index] = CallResult(content=content, error_type=error_type, events=reported, duration=duration)

    lane = tuple(i for i, call in enumerate(calls) if call.name in sequential)
    lanes = [lane] if lane else []
    lanes += [(i,) for i, call in enumerate(calls) if call.name not in sequential]
    if len(lanes) == 1:
        await run(*lanes[0])
    else:
        async with anyio.create_task_group() as group:
            for indexes in lanes:
                group.start_soon(run, *indexes)
    return [result for result in results if result is not None]


async def _call(
    tools: Mapping[str, Tool], call: ToolCall, context: RuntimeContext, skill: str | None
) -> tuple[str, str | None]:
    """The call's result, and what failed (None when it did not); the tool runs with the
    call's :class:`ToolContext`."""
    tool = tools.get(call.name)
    if tool is None:
        return f"error: there is no tool named {call.name!r}; available: {', '.join(sorted(tools))}", UNKNOWN_TOOL
    try:
        with calling(call_context(context, call_id=call.id, tool=call.name, skill=skill)):
            return await tool.call(call.arguments), None
    except Exception as exc:  # a tool's failure goes back to the model, never ends the run or its siblings
        log.info("tool %s failed: %s", call.name, exc)
        return f"error: {type(exc).__name__}: {exc}", type(exc).__name__

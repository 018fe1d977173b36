"""What a tool call may know about itself: :class:`ToolContext`.

A tool function that declares a parameter annotated ``ToolContext`` (or ``ToolContext | None``)
gets it from the harness on every call::

    @tool
    async def send_invoice(order: str, context: ToolContext) -> str:
        \"\"\"Send the invoice of an order.\"\"\"
        key = context.action_id or context.call_id  # an idempotency key for the side effect
        ...

The parameter is left out of the JSON schema the model sees, and an argument of that name from
the model is refused, so nobody but the harness can fill it in. The agent sets the context
around each call it makes (:func:`calling`); :func:`current_tool_context` reads it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["ToolContext", "calling", "current_tool_context", "keeping_context"]

T = TypeVar("T")

_CURRENT: ContextVar[ToolContext | None] = ContextVar("harness_tool_call", default=None)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolContext:
    """One call of one tool, as the harness made it.

    ``user_id`` and ``session_id`` are the turn's (``RuntimeContext``); ``call_id`` is the
    model's id for the call (for a call a workflow's ``call_tool`` action makes, the action id);
    ``tool`` the name of the tool called. ``action_id`` is the deterministic id of the workflow
    action being performed (the same id ``harness.engine.current_action()`` returns and scripts
    get as ``HARNESS_ACTION_ID``), ``None`` outside a workflow action: use it to make side
    effects idempotent. ``skill`` is the name of the skill the turn invoked explicitly (a
    workflow step's skill, or the workflow's own skill for a ``call_tool`` action), else
    ``None``.
    """

    user_id: str
    session_id: str
    call_id: str
    tool: str
    action_id: str | None = None
    skill: str | None = None


def current_tool_context() -> ToolContext | None:
    """The context of the tool call running in this task (``None`` outside one)."""
    return _CURRENT.get()


@contextmanager
def calling(context: ToolContext) -> Iterator[ToolContext]:
    """Make ``context`` the :func:`current_tool_context` inside the ``with`` block."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def keeping_context(call: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    """``call`` bound to the current tool context, for a call that runs later (a call waiting
    for approval runs when the app resumes the run, outside the turn that made it)."""
    context = current_tool_context()
    if context is None:
        return call

    async def later() -> T:
        with calling(context):
            return await call()

    return later

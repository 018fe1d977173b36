"""Input hooks: ``on_input`` sees what the user typed, ``before_run`` the turn about to start.

- ``on_input(text, context)`` runs first, before ``/skill:`` expansion. It returns ``None``
  (go on unchanged), new text (go on with that), or :class:`Answer` (reply with it and do not
  call the model; the exchange is not added to the conversation).
- ``before_run(start)`` runs once per run, after expansion and the turn's preparation, with a
  :class:`RunStart`. It returns ``None`` or context text, which goes into the turn as a user
  message just before the user's own (and stays in the conversation with it).

Both may be plain or ``async`` functions. Messages queued with ``steer`` / ``follow_up`` and
``resume`` do not run them again.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from harness.context import RuntimeContext

if TYPE_CHECKING:
    from harness.pipeline.plan import TurnPlan

__all__ = ["Answer", "BeforeRun", "OnInput", "RunStart", "call_hook"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """An ``on_input`` reply given instead of a model turn."""

    text: str


@dataclass(frozen=True, kw_only=True)
class RunStart:
    """What ``before_run`` sees: the expanded ``message`` (a ``/skill:`` command already turned
    into the skill's block), the ``original`` text, the invoked ``skill`` (its name, or ``None``),
    the turn's ``plan`` and the names of the ``tools`` the model will be offered."""

    context: RuntimeContext
    message: str
    original: str
    skill: str | None
    plan: TurnPlan
    tools: tuple[str, ...]


OnInput = Callable[[str, RuntimeContext], "Awaitable[str | Answer | None] | str | Answer | None"]
BeforeRun = Callable[[RunStart], "Awaitable[str | None] | str | None"]


async def call_hook(result: Awaitable[T] | T) -> T:
    """The value of a hook that may be a plain or an ``async`` function."""
    if inspect.isawaitable(result):
        return await result
    return result

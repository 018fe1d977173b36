"""``ScriptedModel``: replays a fixed sequence of replies, for tests and scripted demos."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.models.base import Message, Model, ModelReply, ToolSpec, Usage
from harness.models.errors import ScriptExhausted

__all__ = ["ScriptStep", "ScriptedCall", "ScriptedModel"]

ScriptStep = (
    ModelReply | Message | str | Callable[[tuple[Message, ...], tuple[ToolSpec, ...]], "ModelReply | Message | str"]
)
"""One scripted reply: a reply, an assistant message, plain answer text, or a function of the
conversation and tools that returns one of those (for replies that depend on earlier results)."""


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """What a ``ScriptedModel`` received in one ``complete`` call."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Names of the tools offered in this call, in order."""
        return tuple(spec.name for spec in self.tools)


class ScriptedModel(Model):
    """A model that answers each ``complete`` call with the next step of ``replies``.

    Every call is recorded in ``calls`` (messages and tool specs as received). Running past the
    end of the script raises ``ScriptExhausted`` naming how many replies were scripted and the
    last message received, so a test that loops once too often fails clearly. :meth:`stream`
    delivers each reply word by word and each tool call's arguments in two pieces, as a
    streaming provider would.
    """

    _word_deltas = True

    def __init__(self, replies: Iterable[ScriptStep], *, name: str = "scripted") -> None:
        super().__init__(name=name)
        self._steps = list(replies)
        self.calls: list[ScriptedCall] = []

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used."""
        return len(self._steps) - len(self.calls)

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        index = len(self.calls)
        if index >= len(self._steps):
            last = messages[-1]
            raise ScriptExhausted(
                f"{self.name}: script of {len(self._steps)} replies is used up; call "
                f"{index + 1} arrived after a {last.role} message: {last.content[:200]!r}"
            )
        self.calls.append(ScriptedCall(messages=messages, tools=tools))
        step = self._steps[index]
        if callable(step):
            step = step(messages, tools)
        return _as_reply(step)


def _as_reply(step: ModelReply | Message | str) -> ModelReply:
    if isinstance(step, ModelReply):
        return step
    if isinstance(step, Message):
        return ModelReply(message=step, usage=Usage())
    return ModelReply(message=Message.assistant(step), usage=Usage())

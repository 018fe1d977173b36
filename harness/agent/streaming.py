"""What a streamed run adds to a turn: the model's deltas and the run's start and finish.

``ModelStep`` is one model call of a turn (streamed or not) and ``framed`` wraps a turn's events in
:class:`~harness.events.RunStarted` / :class:`~harness.events.RunFinished`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from harness.context import RuntimeContext
from harness.events import Event, RunFinished, RunStarted, RunTally
from harness.models import Message, Model, ModelReply, TextDelta, ToolCallDelta, ToolSpec

__all__ = ["ModelStep", "framed"]


class ModelStep:
    """One model call of a turn. Iterate it for the reply's deltas (none unless ``stream``),
    then read :attr:`reply`::

        step = ModelStep(model, messages, specs, stream=True)
        async for delta in step:
            ...
        reply = step.reply
    """

    def __init__(self, model: Model, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool) -> None:
        self._model = model
        self._messages = messages
        self._tools = tools
        self._stream = stream
        self._reply: ModelReply | None = None

    async def __aiter__(self) -> AsyncIterator[TextDelta | ToolCallDelta]:
        if not self._stream:
            self._reply = await self._model.complete(self._messages, self._tools)
            return
        async for item in self._model.stream(self._messages, self._tools):
            if isinstance(item, ModelReply):
                self._reply = item
            else:
                yield item

    @property
    def reply(self) -> ModelReply:
        """The whole reply; only once the step has been iterated to its end."""
        if self._reply is None:
            raise RuntimeError("the model step has not finished: iterate it to the end first")
        return self._reply


async def framed(events: AsyncIterator[Event], *, agent: str, context: RuntimeContext) -> AsyncIterator[Event]:
    """``events`` preceded by :class:`RunStarted` and, when they end normally, followed by
    :class:`RunFinished` with the run's reply and usage. An error ends the stream with it."""
    import uuid  # with platform, which it imports, a few ms that import harness need not pay

    run_id = uuid.uuid4().hex
    yield RunStarted(run_id=run_id, agent=agent, user_id=context.user_id, session_id=context.session_id)
    tally = RunTally()
    async for event in events:
        tally.add(event)
        yield event
    yield RunFinished(run_id=run_id, reply=tally.reply, usage=tally.usage, steps=tally.steps)

"""Model.stream for every model: the default over ``complete`` and the offline models' own."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from harness.models import (
    DemoModel,
    Message,
    Model,
    ModelError,
    ModelReply,
    ScriptedModel,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

CALL = ToolCall(id="c1", name="lookup", arguments={"query": "oslo weather"})
REPLY = ModelReply(message=Message.assistant("Looking it up.", [CALL]), usage=Usage(input_tokens=9, output_tokens=4))


class CompleteOnly(Model):
    """A model that implements only ``_complete``, as third-party models written before
    streaming do."""

    def __init__(self) -> None:
        super().__init__(name="complete-only")

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        return REPLY


class NoReply(CompleteOnly):
    async def _stream(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> AsyncIterator[StreamItem]:
        yield TextDelta(text="half a")


async def test_a_model_without_its_own_stream_streams_its_reply_in_one_piece_each() -> None:
    items = [item async for item in CompleteOnly().stream([Message.user("hi")])]
    assert items == [
        TextDelta(text="Looking it up."),
        ToolCallDelta(index=0, call_id="c1", name="lookup", arguments='{"query": "oslo weather"}'),
        REPLY,
    ]


async def test_a_stream_that_ends_without_a_reply_raises_model_error() -> None:
    with pytest.raises(ModelError, match="ended before the reply was complete"):
        _ = [item async for item in NoReply().stream([Message.user("hi")])]


async def test_stream_checks_its_inputs_as_complete_does() -> None:
    model = CompleteOnly()
    with pytest.raises(ValueError, match="at least one message"):
        _ = [item async for item in model.stream([])]
    await model.aclose()
    with pytest.raises(ModelError, match="is closed"):
        _ = [item async for item in model.stream([Message.user("hi")])]


async def test_the_scripted_model_streams_word_by_word_and_arguments_in_pieces() -> None:
    model = ScriptedModel([REPLY])
    *deltas, reply = [item async for item in model.stream([Message.user("hi")])]
    assert deltas == [
        TextDelta(text="Looking "),
        TextDelta(text="it "),
        TextDelta(text="up."),
        ToolCallDelta(index=0, call_id="c1", name="lookup", arguments='{"query": "o'),
        ToolCallDelta(index=0, call_id="c1", name="lookup", arguments='slo weather"}'),
    ]
    assert reply == REPLY
    assert len(model.calls) == 1


async def test_the_demo_model_streams_the_reply_it_would_complete() -> None:
    conversation = [Message.user("hello there")]
    complete = await DemoModel().complete(conversation)
    *deltas, reply = [item async for item in DemoModel().stream(conversation)]
    assert reply == complete
    assert len(deltas) > 1
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == complete.message.content

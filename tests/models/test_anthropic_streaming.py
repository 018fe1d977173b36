"""AnthropicModel.stream against a local server speaking the messages API's SSE protocol."""

from __future__ import annotations

from typing import Any

import pytest

from harness.models import Message, ModelError, ModelReply, StreamItem, TextDelta, ToolCall, ToolCallDelta, ToolSpec
from harness.models.anthropic import AnthropicModel
from tests.support.model_wire import WireServer

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONVERSATION = [Message.system("You are terse."), Message.user("Weather in Oslo?")]


def event(name: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (name, {"type": name, **fields})


def message_start(input_tokens: int) -> tuple[str, dict[str, Any]]:
    return event(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    )


def text_block(index: int, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(event("content_block_delta", index=index, delta={"type": "text_delta", "text": p}) for p in pieces),
        event("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, *fragments: str) -> list[tuple[str, dict[str, Any]]]:
    start = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {}}
    return [
        event("content_block_start", index=index, content_block=start),
        *(
            event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": f})
            for f in fragments
        ),
        event("content_block_stop", index=index),
    ]


def message_end(stop: str, output_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        event(
            "message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": output_tokens}
        ),
        event("message_stop"),
    ]


def make_model(server: WireServer) -> AnthropicModel:
    return AnthropicModel(model="claude-test", api_key="sk-ant-test", base_url=server.url, max_retries=0, timeout=10)


async def collect(model: AnthropicModel) -> list[StreamItem]:
    return [item async for item in model.stream(CONVERSATION, [WEATHER])]


async def test_text_and_a_tool_call_stream_in_pieces_and_assemble_into_the_reply(wire_server: WireServer) -> None:
    wire_server.stream(
        [
            message_start(input_tokens=25),
            ("ping", {"type": "ping"}),
            *text_block(0, "Check", "ing."),
            *tool_block(1, "toolu_1", "", '{"city":', ' "Oslo"}'),
            *message_end("tool_use", output_tokens=17),
        ]
    )
    async with make_model(wire_server) as model:
        *deltas, reply = await collect(model)
    assert deltas == [
        TextDelta(text="Check"),
        TextDelta(text="ing."),
        ToolCallDelta(index=0, call_id="toolu_1", name="get_weather", arguments=""),
        ToolCallDelta(index=0, call_id="toolu_1", name="get_weather", arguments=""),
        ToolCallDelta(index=0, call_id="toolu_1", name="get_weather", arguments='{"city":'),
        ToolCallDelta(index=0, call_id="toolu_1", name="get_weather", arguments=' "Oslo"}'),
    ]
    assert isinstance(reply, ModelReply)
    assert reply.message == Message.assistant(
        "Checking.", [ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Oslo"})]
    )
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (25, 17)
    (request,) = wire_server.requests
    assert request.path == "/v1/messages"
    assert request.body["stream"] is True
    assert request.body["system"] == "You are terse."


async def test_a_tool_call_with_no_input_gets_empty_arguments(wire_server: WireServer) -> None:
    wire_server.stream([message_start(5), *tool_block(0, "toolu_1"), *message_end("tool_use", 3)])
    async with make_model(wire_server) as model:
        *_, reply = await collect(model)
    assert isinstance(reply, ModelReply)
    assert reply.message.tool_calls == (ToolCall(id="toolu_1", name="get_weather", arguments={}),)


async def test_an_error_event_mid_stream_raises_model_error(wire_server: WireServer) -> None:
    wire_server.stream(
        [
            message_start(5),
            *text_block(0, "Hal")[:2],
            ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]
    )
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="failed while streaming: .*Overloaded"):
            await collect(model)


async def test_a_stream_cut_before_message_stop_raises_model_error(wire_server: WireServer) -> None:
    wire_server.stream([message_start(5), *text_block(0, "Hello")])
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="ended before message_stop"):
            await collect(model)

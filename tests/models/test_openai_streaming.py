"""OpenAIModel.stream against a local server speaking the chat-completions SSE protocol."""

from __future__ import annotations

from typing import Any

import pytest

from harness.models import Message, ModelError, ModelReply, StreamItem, TextDelta, ToolCall, ToolCallDelta, ToolSpec
from harness.models.openai import OpenAIModel
from tests.support.model_wire import WireServer

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CONVERSATION = [Message.system("You are terse."), Message.user("Weather in Oslo and Bergen?")]


def chunk(
    delta: dict[str, Any] | None = None, *, finish: str | None = None, usage: dict[str, int] | None = None
) -> Any:
    """One ``chat.completion.chunk``; without ``delta`` it is the usage-only last chunk."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-test",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return (None, body)


def call_start(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {
        "tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]
    }


def call_args(index: int, fragment: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


USAGE = {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}


def make_model(server: WireServer) -> OpenAIModel:
    return OpenAIModel(model="gpt-test", api_key="sk-test", base_url=f"{server.url}/v1", max_retries=0, timeout=10)


async def collect(model: OpenAIModel, tools: list[ToolSpec] | None = None) -> list[StreamItem]:
    return [item async for item in model.stream(CONVERSATION, tools or [])]


async def test_text_arrives_in_pieces_and_the_reply_carries_the_final_usage(wire_server: WireServer) -> None:
    wire_server.stream(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "It is "}),
            chunk({"content": "3 °C."}),
            chunk({}, finish="stop"),
            chunk(usage=USAGE),
            (None, "[DONE]"),
        ]
    )
    async with make_model(wire_server) as model:
        *deltas, reply = await collect(model)
    assert deltas == [TextDelta(text="It is "), TextDelta(text="3 °C.")]
    assert isinstance(reply, ModelReply)
    assert reply.message == Message.assistant("It is 3 °C.")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (31, 12)


async def test_the_request_asks_for_a_stream_with_usage(wire_server: WireServer) -> None:
    wire_server.stream([chunk({"content": "ok"}, finish="stop"), chunk(usage=USAGE), (None, "[DONE]")])
    async with make_model(wire_server) as model:
        await collect(model, [WEATHER])
    (request,) = wire_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["tools"][0]["function"]["name"] == "get_weather"


async def test_tool_calls_split_across_chunks_are_named_on_every_delta_and_assembled(
    wire_server: WireServer,
) -> None:
    wire_server.stream(
        [
            chunk({"role": "assistant", "content": None}),
            chunk(call_start(0, "call_a", "get_weather")),
            chunk(call_args(0, '{"ci')),
            chunk(call_args(0, 'ty": "Os')),
            chunk(call_args(0, 'lo"}')),
            chunk(call_start(1, "call_b", "get_weather")),
            chunk(call_args(1, '{"city": "Bergen"}')),
            chunk({}, finish="tool_calls"),
            chunk(usage=USAGE),
            (None, "[DONE]"),
        ]
    )
    async with make_model(wire_server) as model:
        items = await collect(model, [WEATHER])
    *deltas, reply = items
    assert deltas == [
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments=""),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments='{"ci'),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments='ty": "Os'),
        ToolCallDelta(index=0, call_id="call_a", name="get_weather", arguments='lo"}'),
        ToolCallDelta(index=1, call_id="call_b", name="get_weather", arguments=""),
        ToolCallDelta(index=1, call_id="call_b", name="get_weather", arguments='{"city": "Bergen"}'),
    ]
    assert isinstance(reply, ModelReply)
    assert reply.message.tool_calls == (
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Oslo"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Bergen"}),
    )
    assert reply.usage.total_tokens == 43


async def test_streamed_arguments_that_are_not_json_raise_model_error(wire_server: WireServer) -> None:
    wire_server.stream(
        [
            chunk(call_start(0, "call_a", "get_weather")),
            chunk(call_args(0, '{"city": ')),
            chunk({}, finish="tool_calls"),
            (None, "[DONE]"),
        ]
    )
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="called get_weather with arguments that are not JSON"):
            await collect(model, [WEATHER])


async def test_an_error_event_mid_stream_raises_model_error(wire_server: WireServer) -> None:
    wire_server.stream([chunk({"content": "It is"}), (None, {"error": {"message": "overloaded, try later"}})])
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="failed while streaming: overloaded"):
            await collect(model)


async def test_a_stream_cut_before_the_finish_raises_model_error(wire_server: WireServer) -> None:
    wire_server.stream([chunk({"content": "It is"})])
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="ended before a finish_reason"):
            await collect(model)


async def test_a_refused_stream_request_raises_model_error(wire_server: WireServer) -> None:
    wire_server.reply({"error": {"message": "model not found"}}, status=404)
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="model not found"):
            await collect(model)

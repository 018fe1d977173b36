"""AnthropicModel against a local server speaking the messages wire protocol."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from harness.models import Message, ModelError, ModelUnavailable, ToolCall, ToolSpec
from harness.models.anthropic import AnthropicModel
from tests.support.model_wire import WireServer

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def message(
    content: list[dict[str, Any]], stop: str = "end_turn", *, usage: tuple[int, int] = (0, 0)
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def make_model(server: WireServer, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(
        model="claude-test", api_key="sk-ant-test", base_url=server.url, max_retries=0, timeout=10, **kwargs
    )


async def test_tool_calling_round_trip(wire_server: WireServer) -> None:
    wire_server.reply(
        message(
            [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
            "tool_use",
            usage=(30, 12),
        )
    )
    wire_server.reply(message([{"type": "text", "text": "3 °C and cloudy."}], usage=(60, 8)))
    conversation = [Message.system("You are terse."), Message.user("Weather in Oslo?")]
    async with make_model(wire_server) as model:
        first = await model.complete(conversation, [WEATHER])
        assert first.message.content == "Checking."
        (call,) = first.message.tool_calls
        assert (call.id, call.name, call.arguments) == ("toolu_1", "get_weather", {"city": "Oslo"})
        assert (first.usage.input_tokens, first.usage.output_tokens) == (30, 12)
        conversation += [first.message, Message.tool_result(call, "3 °C, cloudy")]
        second = await model.complete(conversation, [WEATHER])
    assert second.message == Message.assistant("3 °C and cloudy.")

    first_request, second_request = wire_server.requests
    assert first_request.path == "/v1/messages"
    # SDK releases differ in how they send the key: an x-api-key header or a bearer token.
    assert "sk-ant-test" in (
        first_request.headers.get("x-api-key"),
        first_request.headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert "anthropic-version" in first_request.headers
    assert first_request.body["system"] == "You are terse."
    assert first_request.body["max_tokens"] == 4096
    assert first_request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}
    ]
    assert first_request.body["tools"] == [
        {"name": "get_weather", "description": "Current weather for a city.", "input_schema": WEATHER.parameters}
    ]
    assert second_request.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 °C, cloudy"},
            ],
        },
    ]


async def test_parallel_tool_results_and_following_text_share_one_user_turn(
    wire_server: WireServer,
) -> None:
    wire_server.reply(message([{"type": "text", "text": "ok"}]))
    a = ToolCall(id="t1", name="get_weather", arguments={"city": "Oslo"})
    b = ToolCall(id="t2", name="get_weather", arguments={"city": "Rome"})
    conversation = [
        Message.user("Oslo and Rome?"),
        Message.assistant(tool_calls=[a, b]),
        Message.tool_result(a, "cold"),
        Message.tool_result(b, "warm"),
        Message.user("And tomorrow?"),
    ]
    async with make_model(wire_server) as model:
        await model.complete(conversation, [WEATHER])
    sent = wire_server.requests[0].body
    assert "system" not in sent
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    }
    assert sent["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "cold"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "warm"},
            {"type": "text", "text": "And tomorrow?"},
        ],
    }
    assert len(sent["messages"]) == 3


async def test_options_are_sent(wire_server: WireServer) -> None:
    wire_server.reply(message([{"type": "text", "text": "hi"}]))
    async with make_model(wire_server, max_tokens=64, temperature=0.5, extra_body={"top_k": 5}) as model:
        await model.complete([Message.user("hello")])
    body = wire_server.requests[0].body
    assert (body["max_tokens"], body["temperature"], body["top_k"]) == (64, 0.5, 5)
    assert "tools" not in body


async def test_only_system_messages_are_refused_before_any_request(wire_server: WireServer) -> None:
    async with make_model(wire_server) as model:
        with pytest.raises(ValueError, match="at least one non-system message"):
            await model.complete([Message.system("alone")])
    assert wire_server.requests == []


async def test_server_error_becomes_model_error(wire_server: WireServer) -> None:
    wire_server.reply({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, status=529)
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="anthropic:claude-test at http://127.0.0.1:.* failed"):
            await model.complete([Message.user("hi")])


def test_from_env_reads_key_and_base_url() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}
    assert AnthropicModel.from_env("c", environ=env).base_url == "http://127.0.0.1:1"
    with pytest.raises(ModelError, match="set ANTHROPIC_API_KEY"):
        AnthropicModel.from_env("c", environ={})


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ModelUnavailable, match=r"install agent-skill-harness\[anthropic\]"):
        AnthropicModel(model="c", api_key="k")

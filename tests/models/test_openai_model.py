"""OpenAIModel against a local server speaking the chat-completions wire protocol."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from harness.models import Message, ModelError, ModelUnavailable, ToolSpec
from harness.models.openai import OpenAIModel
from tests.support.model_wire import WireServer

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def completion(message: dict[str, Any], *, prompt: int = 0, completion: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


# The assistant's tool call as the wire carries it, both in the reply and when sent back.
WEATHER_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    ],
}


def make_model(server: WireServer) -> OpenAIModel:
    return OpenAIModel(model="gpt-test", api_key="sk-test", base_url=f"{server.url}/v1", max_retries=0, timeout=10)


async def test_tool_calling_round_trip(wire_server: WireServer) -> None:
    wire_server.reply(
        completion(
            WEATHER_CALL,
            prompt=20,
            completion=7,
        )
    )
    wire_server.reply(completion({"role": "assistant", "content": "It is 3 °C in Oslo."}, prompt=40, completion=9))
    conversation = [Message.system("You are terse."), Message.user("Weather in Oslo?")]
    async with make_model(wire_server) as model:
        first = await model.complete(conversation, [WEATHER])
        (call,) = first.message.tool_calls
        assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", {"city": "Oslo"})
        assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 7)
        conversation += [first.message, Message.tool_result(call, "3 °C, cloudy")]
        second = await model.complete(conversation, [WEATHER])
    assert second.message == Message.assistant("It is 3 °C in Oslo.")
    assert second.usage.total_tokens == 49

    first_request, second_request = wire_server.requests
    assert first_request.path == "/v1/chat/completions"
    assert first_request.headers["authorization"] == "Bearer sk-test"
    assert first_request.body["model"] == "gpt-test"
    assert first_request.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    assert first_request.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert second_request.body["messages"][2:] == [
        WEATHER_CALL,
        {"role": "tool", "tool_call_id": "call_1", "content": "3 °C, cloudy"},
    ]


async def test_no_tools_means_no_tools_field_and_options_are_sent(wire_server: WireServer) -> None:
    wire_server.reply(completion({"role": "assistant", "content": "hi"}))
    model = OpenAIModel(
        model="m",
        api_key="k",
        base_url=wire_server.url,
        max_tokens=50,
        temperature=0.0,
        extra_body={"top_p": 0.9},
        max_retries=0,
    )
    async with model:
        await model.complete([Message.user("hello")])
    body = wire_server.requests[0].body
    assert "tools" not in body
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (50, 0.0, 0.9)


async def test_server_error_becomes_model_error(wire_server: WireServer) -> None:
    wire_server.reply({"error": {"message": "model overloaded", "type": "server_error"}}, status=503)
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="openai:gpt-test at http://127.0.0.1:.* failed"):
            await model.complete([Message.user("hi")])


async def test_unreachable_server_becomes_model_error() -> None:
    model = OpenAIModel(model="m", api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0)
    async with model:
        with pytest.raises(ModelError, match="openai:m at http://127.0.0.1:9/v1 failed"):
            await model.complete([Message.user("hi")])


async def test_tool_arguments_that_are_not_json_are_reported(wire_server: WireServer) -> None:
    wire_server.reply(
        completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": "{city"}}
                ],
            }
        )
    )
    async with make_model(wire_server) as model:
        with pytest.raises(ModelError, match="called get_weather with arguments that are not JSON"):
            await model.complete([Message.user("hi")], [WEATHER])


def test_from_env_reads_key_and_base_url_and_arguments_win() -> None:
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    assert OpenAIModel.from_env("m", environ=env).base_url == "http://127.0.0.1:1/v1"
    assert OpenAIModel.from_env("m", environ=env, base_url="http://x/v1").base_url == "http://x/v1"
    assert OpenAIModel.from_env("m", environ={"OPENAI_API_KEY": "k"}).base_url == ("https://api.openai.com/v1")


def test_from_env_without_a_key_says_what_to_set() -> None:
    with pytest.raises(ModelError, match="set OPENAI_API_KEY or pass api_key"):
        OpenAIModel.from_env("m", environ={})


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ModelUnavailable, match=r"install agent-skill-harness\[openai\]"):
        OpenAIModel(model="m", api_key="k")

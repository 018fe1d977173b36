"""``OpenAIModel``: the OpenAI chat-completions API, and every server that speaks it.

Works with OpenAI itself and with OpenAI-compatible servers (vLLM, Ollama, DeepSeek, Qwen, ...)
through ``base_url``. Needs the ``openai`` SDK: ``pip install 'agent-skill-harness[openai]'``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.models._sdk import SDKModel
from harness.models.base import Message, ModelReply, ToolCall, ToolSpec, Usage
from harness.models.errors import ModelError

__all__ = ["OpenAIModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIModel(SDKModel):
    """A chat-completions model (``POST {base_url}/chat/completions``) with tool calling.

    ``api_key`` is required (local servers that ignore it accept any string, e.g. ``"EMPTY"``);
    ``from_env`` reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` instead. ``max_tokens`` and
    ``temperature`` are sent only when set; ``extra_body`` adds provider-specific request fields
    (``{"top_p": 0.9}``, a vLLM ``guided_json``, ...). SDK errors become ``ModelError`` naming
    the server and model; the SDK retries transient failures ``max_retries`` times first.
    """

    provider = "openai"
    client_class = "AsyncOpenAI"
    error_class = "OpenAIError"
    example = "gpt-4o-mini"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__(model=model, api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self._options: dict[str, Any] = {}
        if max_tokens is not None:
            self._options["max_tokens"] = max_tokens
        if temperature is not None:
            self._options["temperature"] = temperature
        if extra_body:
            self._options["extra_body"] = dict(extra_body)

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            **self._options,
        }
        if tools:
            request["tools"] = [_wire_tool(spec) for spec in tools]
        response = await self._send(self._client.chat.completions.create, request)
        if not response.choices:
            raise ModelError(f"{self.name} at {self.base_url} returned no choices")
        return ModelReply(
            message=self._parse_message(response.choices[0].message),
            usage=_parse_usage(response.usage),
        )

    def _parse_message(self, wire: Any) -> Message:
        calls = []
        for call in wire.tool_calls or ():
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError as exc:
                raise ModelError(
                    f"{self.name} called {call.function.name} with arguments that are not "
                    f"JSON: {call.function.arguments!r}"
                ) from exc
            if not isinstance(arguments, dict):
                raise ModelError(
                    f"{self.name} called {call.function.name} with arguments that are not a "
                    f"JSON object: {call.function.arguments!r}"
                )
            calls.append(ToolCall(id=call.id, name=call.function.name, arguments=arguments))
        return Message.assistant(wire.content or "", calls)


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return wire


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def _parse_usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    return Usage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0)

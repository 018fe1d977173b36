"""``OpenAIModel``: the OpenAI chat-completions API, and every server that speaks it.

Works with OpenAI itself and with OpenAI-compatible servers (vLLM, Ollama, DeepSeek, Qwen, ...)
through ``base_url``. Needs the ``openai`` SDK: ``pip install 'agent-skill-harness[openai]'``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from harness.models._sdk import PartialCall, SDKModel
from harness.models.base import Message, ModelReply, StreamItem, TextDelta, ToolSpec, Usage
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
    :meth:`stream` asks for a streamed reply with usage in its last chunk
    (``stream_options.include_usage``).
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

    def _request(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            **self._options,
        }
        if tools:
            request["tools"] = [_wire_tool(spec) for spec in tools]
        return request

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        response = await self._send(self._client.chat.completions.create, self._request(messages, tools))
        if not response.choices:
            raise ModelError(f"{self.name} at {self.where} returned no choices")
        return ModelReply(
            message=self._parse_message(response.choices[0].message),
            usage=_parse_usage(response.usage),
        )

    async def _stream(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> AsyncIterator[StreamItem]:
        request = {**self._request(messages, tools), "stream_options": {"include_usage": True}}
        text: list[str] = []
        calls: dict[int, PartialCall] = {}
        usage = Usage()
        finished = False
        async for chunk in self._events(self._client.chat.completions.create, request):
            if chunk.usage is not None:
                usage = _parse_usage(chunk.usage)
            if not chunk.choices:
                continue
            finished = finished or chunk.choices[0].finish_reason is not None
            delta = chunk.choices[0].delta
            if delta.content:
                text.append(delta.content)
                yield TextDelta(text=delta.content)
            for wire in delta.tool_calls or ():
                call = calls.get(wire.index)
                fragment = (wire.function.arguments if wire.function else None) or ""
                if call is None:
                    # The first chunk of a call names it; later ones carry only the index.
                    name = (wire.function.name if wire.function else None) or ""
                    call = calls[wire.index] = PartialCall(
                        index=len(calls), id=wire.id or f"call_{wire.index}", name=name
                    )
                elif not fragment:
                    continue
                yield call.add(fragment)
        if not finished:
            raise ModelError(f"{self.name} at {self.where}: the reply stream ended before a finish_reason")
        parsed = [self._assembled(call) for _, call in sorted(calls.items())]
        yield ModelReply(message=Message.assistant("".join(text), parsed), usage=usage)

    def _parse_message(self, wire: Any) -> Message:
        calls = [
            self._tool_call(call.id, call.function.name, call.function.arguments) for call in wire.tool_calls or ()
        ]
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

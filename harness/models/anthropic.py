"""``AnthropicModel``: the Anthropic messages API with tool use.

The system prompt travels apart from the messages, tool calls are ``tool_use`` content blocks
and their results ``tool_result`` blocks in the next user turn. Needs the ``anthropic`` SDK:
``pip install 'agent-skill-harness[anthropic]'``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from harness.models._sdk import PartialCall, SDKModel
from harness.models.base import Message, ModelReply, StreamItem, TextDelta, ToolCall, ToolSpec, Usage
from harness.models.errors import ModelError

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicModel(SDKModel):
    """A Claude model over the messages API (``POST {base_url}/v1/messages``) with tool use.

    ``system`` messages anywhere in the conversation are joined into the request's ``system``
    field; consecutive messages of one role (several tool results, a tool result followed by
    the user's text) are merged into one turn, as the API requires alternating roles.
    ``max_tokens`` is required by the API and defaults to 4096. ``temperature`` and any other
    request field in ``extra_body`` are sent as JSON fields of the request as given (newer SDK
    releases no longer accept every sampling option as a keyword). SDK errors become
    ``ModelError``; the SDK retries transient failures ``max_retries`` times first.
    :meth:`from_env` reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``. :meth:`stream`
    uses the API's server-sent events (``message_start`` … ``message_stop``).
    """

    provider = "anthropic"
    client_class = "AsyncAnthropic"
    error_class = "AnthropicError"
    example = "claude-sonnet-4-5"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int = 4096,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__(model=model, api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        body = dict(extra_body or {})
        if temperature is not None:
            body["temperature"] = temperature
        self._options: dict[str, Any] = {"max_tokens": max_tokens}
        if body:
            self._options["extra_body"] = body

    def _request(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        request: dict[str, Any] = {
            "model": self.model,
            "messages": _wire_messages(messages),
            **self._options,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": s.name, "description": s.description, "input_schema": s.parameters} for s in tools
            ]
        return request

    async def _stream(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> AsyncIterator[StreamItem]:
        text: list[str] = []
        calls: dict[int, PartialCall] = {}  # tool-use blocks by content-block index
        input_tokens = output_tokens = 0
        stopped = False
        async for event in self._events(self._client.messages.create, self._request(messages, tools)):
            if event.type == "message_start":
                input_tokens = event.message.usage.input_tokens or 0
                output_tokens = event.message.usage.output_tokens or 0
            elif event.type == "message_delta":
                input_tokens = event.usage.input_tokens or input_tokens
                output_tokens = event.usage.output_tokens or output_tokens
            elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                block = event.content_block
                calls[event.index] = PartialCall(index=len(calls), id=block.id, name=block.name)
                yield calls[event.index].add("")
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                text.append(event.delta.text)
                yield TextDelta(text=event.delta.text)
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                yield calls[event.index].add(event.delta.partial_json)
            stopped = event.type == "message_stop"
        if not stopped:
            raise ModelError(f"{self.name} at {self.where}: the reply stream ended before message_stop")
        parsed = [self._assembled(call) for call in calls.values()]
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        yield ModelReply(message=Message.assistant("".join(text), parsed), usage=usage)

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        response = await self._send(self._client.messages.create, self._request(messages, tools))
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input)))
        usage = response.usage
        return ModelReply(
            message=Message.assistant("".join(texts), calls),
            usage=Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0),
        )


def _wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if not turns:
        raise ValueError("the Anthropic messages API needs at least one non-system message")
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}]
    # The API refuses empty text blocks (an assistant turn that only calls tools has no text).
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments} for call in message.tool_calls
    )
    return blocks

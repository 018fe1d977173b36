"""``AnthropicModel``: the Anthropic messages API with tool use.

The system prompt travels apart from the messages, tool calls are ``tool_use`` content blocks
and their results ``tool_result`` blocks in the next user turn. Needs the ``anthropic`` SDK:
``pip install 'agent-skill-harness[anthropic]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.models._sdk import SDKModel
from harness.models.base import Message, ModelReply, ToolCall, ToolSpec, Usage

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
    :meth:`from_env` reads ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``.
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

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
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
        response = await self._send(self._client.messages.create, request)
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

"""The model interface: messages and tool specs in, an assistant message out.

Everything a model exchanges with the agent loop is a frozen value defined here, independent of
any provider SDK. Adapters (``openai``, ``anthropic``) translate these values to and from their
wire format; ``ScriptedModel`` and ``DemoModel`` work on them directly.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from filesystems import AsyncResource
from harness.models.errors import ModelError

__all__ = [
    "Message",
    "Model",
    "ModelReply",
    "Role",
    "StreamItem",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
    "reply_deltas",
]

Role = Literal["system", "user", "assistant", "tool"]

_ROLES = frozenset({"system", "user", "assistant", "tool"})
# Both OpenAI and Anthropic accept only these characters in tool names.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A model's request to run the tool ``name`` with ``arguments``.

    ``id`` is the provider's call id; the tool result message must carry it back as
    ``tool_call_id``.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a tool call needs a non-empty id")
        if not self.name:
            raise ValueError(f"tool call {self.id!r} needs a tool name")


@dataclass(frozen=True, kw_only=True)
class Message:
    """One conversation message.

    - ``system``/``user``: ``content`` is the text.
    - ``assistant``: ``content`` is the text (may be empty) and ``tool_calls`` the tools the model
      wants run, in order.
    - ``tool``: the result of one tool call; ``tool_call_id`` names the call and ``name`` the tool.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"unknown message role {self.role!r}; expected one of {sorted(_ROLES)}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages carry tool calls, not {self.role!r}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.role != "tool" and self.tool_call_id is not None:
            raise ValueError(f"only tool messages carry a tool_call_id, not {self.role!r}")

    @classmethod
    def system(cls, content: str) -> Message:
        """A system prompt message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        """An assistant message, optionally asking for tool calls."""
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool_result(cls, call: ToolCall, content: str) -> Message:
        """The result of ``call``, to send back to the model."""
        return cls(role="tool", content=content, tool_call_id=call.id, name=call.name)


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens a model call consumed; ``+`` adds up several calls."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        if self.input_tokens < 0 or self.output_tokens < 0:
            raise ValueError("token counts cannot be negative")

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


@dataclass(frozen=True, kw_only=True)
class ModelReply:
    """What one ``Model.complete`` call returns: the assistant message and its token usage."""

    message: Message
    usage: Usage = Usage()

    def __post_init__(self) -> None:
        if self.message.role != "assistant":
            raise ValueError(f"a model reply is an assistant message, not {self.message.role!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """A piece of the reply's text, as the model produced it; the pieces joined are the text."""

    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call the model is writing.

    ``index`` is the call's position in the reply; ``call_id`` and ``name`` are repeated on
    every piece of one call (providers send them only once; the adapters fill them in), and
    ``arguments`` is the next fragment of the call's JSON arguments (the first piece may carry
    an empty fragment: the call has started). The fragments of one call joined are its arguments.
    """

    index: int
    call_id: str
    name: str
    arguments: str = ""


StreamItem = TextDelta | ToolCallDelta | ModelReply
"""What ``Model.stream`` yields: deltas as they arrive, then the whole reply, once, last."""


def reply_deltas(reply: ModelReply, *, words: bool = False) -> list[TextDelta | ToolCallDelta]:
    """The deltas a stream of ``reply`` carries: its text (in one piece, or word by word when
    ``words``), then each tool call with its JSON arguments (in two pieces when ``words``)."""
    message = reply.message
    text = re.findall(r"\S+\s*|\s+", message.content) if words else [message.content]
    deltas: list[TextDelta | ToolCallDelta] = [TextDelta(text=piece) for piece in text if piece]
    for index, call in enumerate(message.tool_calls):
        arguments = json.dumps(call.arguments)
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]) if words else (arguments,):
            deltas.append(ToolCallDelta(index=index, call_id=call.id, name=call.name, arguments=piece))
    return deltas


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it: name, description and the JSON schema of its arguments.

    ``parameters`` is a JSON schema of ``"type": "object"``; ``name`` uses only letters, digits,
    ``_`` and ``-`` (at most 64), which every provider accepts.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def __post_init__(self) -> None:
        if not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        if self.parameters.get("type") != "object":
            raise ValueError(f"the parameters schema of tool {self.name!r} must have type 'object'")


class Model(AsyncResource, ABC):
    """A chat model: given the conversation and the tools on offer, produce the next message.

    A model is an async context manager; ``aclose()`` releases its HTTP client (or whatever it
    holds) and is idempotent. ``name`` identifies the model in logs and traces
    (``"openai:gpt-4o-mini"``).

    ``complete`` is stateless from the caller's view: the whole conversation is passed every
    time. The first message may be a ``system`` message; adapters whose provider keeps the
    system prompt apart (Anthropic) move it there. The reply is an ``assistant`` message whose
    ``tool_calls`` are the tools to run (their results go back as ``tool`` messages in the next
    call), or which has none when the model has answered.

    ``stream`` is the same call with the reply delivered as it is produced: it yields
    :class:`TextDelta` and :class:`ToolCallDelta` pieces, then the whole :class:`ModelReply`
    (exactly once, last; the reply is what ``complete`` would have returned). Every model
    streams: the default implementation calls ``_complete`` and yields the reply's deltas in one
    piece each; adapters whose provider streams override ``_stream``.

    Raises ``ModelError`` (provider refused the request, could not be reached, answered
    something unusable), ``ValueError`` for an empty conversation or duplicate tool names, and
    ``ModelError`` when used after ``aclose()``.
    """

    #: The default ``_stream`` cuts text into words (and arguments in two) rather than sending
    #: one piece each: offline models use it to stream as a provider would.
    _word_deltas: ClassVar[bool] = False

    def __init__(self, *, name: str) -> None:
        super().__init__()
        self.name = name

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> ModelReply:
        """The model's next message for ``messages``, with ``tools`` offered to it."""
        self._check_request(messages, tools)
        return await self._complete(tuple(messages), tuple(tools))

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> AsyncIterator[StreamItem]:
        """Like :meth:`complete`, yielding the reply's deltas as they arrive and then the reply.

        Raises ``ModelError`` when the backend's stream ends without a reply.
        """
        self._check_request(messages, tools)
        async for item in self._stream(tuple(messages), tuple(tools)):
            yield item
            if isinstance(item, ModelReply):
                return
        raise ModelError(f"{self.name}: the reply stream ended before the reply was complete")

    def _check_request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> None:
        if self._closed:
            raise ModelError(f"model {self.name} is closed")
        if not messages:
            raise ValueError("a model call needs at least one message")
        names = [spec.name for spec in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"tool names must be unique; offered twice: {', '.join(duplicates)}")

    @abstractmethod
    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        """Backend primitive behind ``complete`` (inputs already checked)."""

    async def _stream(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> AsyncIterator[StreamItem]:
        """Backend primitive behind ``stream`` (inputs already checked): deltas, then the reply.

        The default completes the call and yields the reply's deltas (see ``_word_deltas``).
        """
        reply = await self._complete(messages, tools)
        for delta in reply_deltas(reply, words=self._word_deltas):
            yield delta
        yield reply

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

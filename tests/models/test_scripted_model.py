"""ScriptedModel replays replies in order and records what it was sent."""

from __future__ import annotations

import pytest

from harness.models import (
    Message,
    ModelReply,
    ScriptedModel,
    ScriptExhausted,
    ToolCall,
    ToolSpec,
    Usage,
)

LOOKUP = ToolSpec(name="lookup", description="Look something up.")


async def test_replays_text_messages_and_replies_in_order() -> None:
    call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
    model = ScriptedModel(
        [
            Message.assistant(tool_calls=[call]),
            ModelReply(message=Message.assistant("done"), usage=Usage(input_tokens=5)),
            "plain",
        ]
    )
    first = await model.complete([Message.user("go")], [LOOKUP])
    assert first.message.tool_calls == (call,)
    second = await model.complete([Message.user("go")])
    assert (second.message.content, second.usage.input_tokens) == ("done", 5)
    third = await model.complete([Message.user("go")])
    assert third.message == Message.assistant("plain")
    assert model.remaining == 0


async def test_records_the_messages_and_tools_of_every_call() -> None:
    model = ScriptedModel(["a", "b"])
    conversation = [Message.system("sys"), Message.user("hi")]
    await model.complete(conversation, [LOOKUP])
    await model.complete(conversation[1:])
    assert model.calls[0].messages == tuple(conversation)
    assert model.calls[0].tool_names == ("lookup",)
    assert model.calls[1].tools == ()


async def test_a_callable_step_sees_the_conversation() -> None:
    model = ScriptedModel([lambda messages, tools: f"you said {messages[-1].content}"])
    reply = await model.complete([Message.user("ping")])
    assert reply.message.content == "you said ping"


async def test_running_past_the_script_raises_clearly() -> None:
    model = ScriptedModel(["only"])
    await model.complete([Message.user("one")])
    with pytest.raises(ScriptExhausted, match="script of 1 replies is used up; call 2 .* 'two'"):
        await model.complete([Message.user("two")])

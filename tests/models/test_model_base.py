"""The model value types and the Model ABC's shared policy."""

from __future__ import annotations

import pytest

from harness.models import (
    Message,
    ModelError,
    ModelReply,
    ScriptedModel,
    ToolCall,
    ToolSpec,
    Usage,
)


def test_message_constructors_set_roles() -> None:
    call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
    assert Message.system("s").role == "system"
    assert Message.user("u").role == "user"
    reply = Message.assistant("", [call])
    assert (reply.role, reply.tool_calls) == ("assistant", (call,))
    result = Message.tool_result(call, "found")
    assert (result.role, result.tool_call_id, result.name, result.content) == (
        "tool",
        "c1",
        "lookup",
        "found",
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"role": "robot", "content": ""}, "unknown message role 'robot'"),
        (
            {"role": "user", "content": "", "tool_calls": (ToolCall(id="c", name="t"),)},
            "only assistant messages carry tool calls",
        ),
        ({"role": "tool", "content": "x"}, "needs the tool_call_id"),
        ({"role": "user", "content": "x", "tool_call_id": "c"}, "only tool messages carry"),
    ],
)
def test_inconsistent_messages_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Message(**kwargs)  # type: ignore[arg-type]


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=3, output_tokens=4) + Usage(input_tokens=10, output_tokens=1)
    assert total == Usage(input_tokens=13, output_tokens=5)
    assert total.total_tokens == 18


def test_reply_must_be_an_assistant_message() -> None:
    with pytest.raises(ValueError, match="not 'user'"):
        ModelReply(message=Message.user("hi"))


def test_tool_spec_needs_a_provider_safe_name_and_an_object_schema() -> None:
    with pytest.raises(ValueError, match="must be 1-64 letters"):
        ToolSpec(name="load skill", description="")
    with pytest.raises(ValueError, match="must have type 'object'"):
        ToolSpec(name="x", description="", parameters={"type": "string"})


async def test_complete_refuses_an_empty_conversation() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ValueError, match="at least one message"):
        await model.complete([])


async def test_complete_refuses_duplicate_tool_names() -> None:
    spec = ToolSpec(name="t", description="d")
    with pytest.raises(ValueError, match="offered twice: t"):
        await ScriptedModel(["x"]).complete([Message.user("hi")], [spec, spec])


async def test_a_closed_model_refuses_calls_and_closing_twice_is_harmless() -> None:
    async with ScriptedModel(["x", "y"]) as model:
        await model.complete([Message.user("hi")])
    await model.aclose()
    with pytest.raises(ModelError, match="scripted is closed"):
        await model.complete([Message.user("again")])

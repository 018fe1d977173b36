"""A streamed run encoded for AG-UI through the real ``ag-ui-protocol`` package."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pydantic
from ag_ui.core import Event as AGUIEvent
from ag_ui.core import EventType

from harness import RuntimeContext
from harness.agent import Harness
from harness.agent.agui import agui_events, agui_sse
from harness.events import Event, ModelReplied, RunStarted, ToolCalled
from harness.models import Message, ModelReply, ScriptedModel, ToolCall, Usage

ALICE = RuntimeContext(user_id="alice", session_id="thread-7")
PARSE: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(AGUIEvent)


def _model() -> ScriptedModel:
    call = ToolCall(id="c1", name="list_files", arguments={"path": "."})
    return ScriptedModel(
        [
            ModelReply(
                message=Message.assistant("Let me look.", [call]), usage=Usage(input_tokens=10, output_tokens=3)
            ),
            ModelReply(message=Message.assistant("Empty."), usage=Usage(input_tokens=20, output_tokens=2)),
        ]
    )


async def _sse(tmp_path: Path) -> list[Any]:
    """The run's SSE lines, each parsed back into a validated AG-UI event."""
    async with Harness(model=_model(), workspace=tmp_path) as agent:
        lines = [line async for line in agui_sse(agent.stream("what is there?", context=ALICE))]
    assert all(line.startswith("data: ") and line.endswith("\n\n") for line in lines)
    return [PARSE.validate_python(json.loads(line.removeprefix("data: "))) for line in lines]


def _types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events if e.type != EventType.CUSTOM]


async def test_a_streamed_run_is_a_valid_agui_event_sequence(tmp_path: Path) -> None:
    events = await _sse(tmp_path)
    types = _types(events)
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    first = types.index("TEXT_MESSAGE_START")
    assert types[first : first + 2] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert types.count("TEXT_MESSAGE_START") == types.count("TEXT_MESSAGE_END") == 2
    assert types.count("TOOL_CALL_START") == types.count("TOOL_CALL_END") == 1
    call = types.index("TOOL_CALL_START")
    assert types.index("TOOL_CALL_END") < types.index("TOOL_CALL_RESULT")
    assert types[call - 1] == "TEXT_MESSAGE_END"  # the text closes before its tool call opens


async def test_text_and_arguments_reassemble_and_ids_tie_together(tmp_path: Path) -> None:
    events = await _sse(tmp_path)
    started = events[0]
    assert (started.thread_id, len(started.run_id)) == ("thread-7", 32)
    texts: dict[str, str] = {}
    for e in events:
        if e.type == EventType.TEXT_MESSAGE_CONTENT:
            texts[e.message_id] = texts.get(e.message_id, "") + e.delta
    assert sorted(texts.values()) == ["Empty.", "Let me look."]
    (start,) = [e for e in events if e.type == EventType.TOOL_CALL_START]
    assert (start.tool_call_id, start.tool_call_name) == ("c1", "list_files")
    assert texts[start.parent_message_id] == "Let me look."
    arguments = "".join(e.delta for e in events if e.type == EventType.TOOL_CALL_ARGS)
    assert json.loads(arguments) == {"path": "."}
    (result,) = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert result.tool_call_id == "c1" and result.role == "tool"


async def test_run_finished_carries_the_reply_and_token_usage(tmp_path: Path) -> None:
    finished = (await _sse(tmp_path))[-1]
    assert finished.type == EventType.RUN_FINISHED and finished.result == "Empty."
    (usage,) = finished.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 5, 35)


async def test_harness_events_travel_as_custom_events(tmp_path: Path) -> None:
    events = await _sse(tmp_path)
    custom = [e for e in events if e.type == EventType.CUSTOM]
    assert custom[0].name == "harness.TurnPrepared"
    assert custom[0].value["skill_count"] == 0


async def test_a_failing_run_ends_with_run_error(tmp_path: Path) -> None:
    async with Harness(model=ScriptedModel([]), workspace=tmp_path) as agent:
        events = [e async for e in agui_events(agent.stream("hi", context=ALICE))]
    assert events[0].type == EventType.RUN_STARTED
    assert events[-1].type == EventType.RUN_ERROR
    assert events[-1].code == "ScriptExhausted" and "used up" in events[-1].message


async def test_replies_that_were_not_streamed_are_sent_whole() -> None:
    # A forked skill's subagent reports its steps without deltas; the encoder sends them whole.
    async def run() -> AsyncIterator[Event]:
        yield RunStarted(run_id="r1", agent="a", user_id="alice", session_id="t1")
        yield ModelReplied(content="Calling.", usage=Usage(), final=False)
        yield ToolCalled(call_id="c9", name="list_files", arguments={"path": "docs"})

    events = [e async for e in agui_events(run())]
    assert _types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ]
    assert events[2].delta == "Calling." and json.loads(events[5].delta) == {"path": "docs"}


async def test_a_run_that_fails_before_its_first_event_still_opens_before_the_error() -> None:
    async def run() -> AsyncIterator[Event]:
        raise RuntimeError("market down")
        yield  # an async generator

    events = [e async for e in agui_events(run())]
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert events[1].message == "market down" and events[1].code == "RuntimeError"

"""agent.stream(): deltas while the model writes, framed by RunStarted / RunFinished."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import Harness
from harness.cli import main
from harness.events import (
    Event,
    ModelReplied,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallDelta,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.models import Message, ModelReply, ScriptedModel, ToolCall, Usage
from harness.models.openai import OpenAIModel
from tests.support.model_wire import WireServer, serving

ALICE = RuntimeContext(user_id="alice", session_id="s-1")
LIST = ToolCall(id="c1", name="list_files", arguments={"path": "."})


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelReply(
                message=Message.assistant("Let me look.", [LIST]), usage=Usage(input_tokens=10, output_tokens=3)
            ),
            ModelReply(message=Message.assistant("Nothing here yet."), usage=Usage(input_tokens=20, output_tokens=4)),
        ]
    )


async def _stream(agent: Harness, message: str = "what is there?") -> list[Event]:
    return [event async for event in agent.stream(message, context=ALICE)]


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    with serving() as server:
        yield server


async def test_a_stream_starts_with_run_started_and_ends_with_run_finished_and_its_usage(tmp_path: Path) -> None:
    async with Harness(name="helper", model=_script(), workspace=tmp_path) as agent:
        events = await _stream(agent)
    started, finished = events[0], events[-1]
    assert isinstance(started, RunStarted)
    assert (started.agent, started.user_id, started.session_id) == ("helper", "alice", "s-1")
    assert isinstance(finished, RunFinished)
    assert finished.run_id == started.run_id
    assert (finished.reply, finished.steps) == ("Nothing here yet.", 2)
    assert (finished.usage.input_tokens, finished.usage.output_tokens) == (30, 7)


async def test_text_and_tool_call_deltas_come_before_the_reply_they_make_up(tmp_path: Path) -> None:
    async with Harness(model=_script(), workspace=tmp_path) as agent:
        events = await _stream(agent)
    kinds = [type(e).__name__ for e in events]
    first_reply = kinds.index("ModelReplied")
    assert kinds[:3] == ["RunStarted", "TurnPrepared", "TextDelta"]
    assert set(kinds[2:first_reply]) == {"TextDelta", "ToolCallDelta"}
    deltas = events[2:first_reply]
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Let me look."
    assert "".join(d.arguments for d in deltas if isinstance(d, ToolCallDelta)) == '{"path": "."}'
    assert {(d.call_id, d.name) for d in deltas if isinstance(d, ToolCallDelta)} == {("c1", "list_files")}
    after = [type(e) for e in events[first_reply:]]
    assert after[:3] == [ModelReplied, ToolCalled, ToolReturned]
    last_text = [e for e in events[first_reply:] if isinstance(e, TextDelta)]
    assert "".join(d.text for d in last_text) == "Nothing here yet."


async def test_run_keeps_its_events_without_deltas_or_run_framing(tmp_path: Path) -> None:
    async with Harness(model=_script(), workspace=tmp_path) as agent:
        result = await agent.run("what is there?", context=ALICE)
    assert [type(e) for e in result.events] == [TurnPrepared, ModelReplied, ToolCalled, ToolReturned, ModelReplied]
    assert (result.reply, result.steps, result.usage.total_tokens) == ("Nothing here yet.", 2, 37)


async def test_a_failing_run_raises_from_the_stream_without_run_finished(tmp_path: Path) -> None:
    events: list[Event] = []
    async with Harness(model=ScriptedModel([]), workspace=tmp_path) as agent:
        with pytest.raises(Exception, match="script of 0 replies is used up"):
            async for event in agent.stream("hi", context=ALICE):
                events.append(event)
    assert isinstance(events[0], RunStarted)
    assert not any(isinstance(e, RunFinished) for e in events)


async def test_the_stream_carries_an_openai_models_deltas_from_the_wire(
    tmp_path: Path, wire_server: WireServer
) -> None:
    def chunk(delta: dict[str, object], finish: str | None = None) -> tuple[None, dict[str, object]]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return (None, {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]})

    usage = {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    wire_server.stream(
        [
            chunk({"role": "assistant", "content": "Hel"}),
            chunk({"content": "lo!"}, finish="stop"),
            (
                None,
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "m",
                    "choices": [],
                    "usage": usage,
                },
            ),
            (None, "[DONE]"),
        ]
    )
    model = OpenAIModel(model="m", api_key="k", base_url=f"{wire_server.url}/v1", max_retries=0, timeout=10)
    async with Harness(model=model, workspace=tmp_path) as agent:
        events = await _stream(agent, "hi")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo!"]
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.reply == "Hello!" and finished.usage.total_tokens == 13
    assert wire_server.requests[0].body["stream"] is True


async def test_a_tool_failure_says_what_failed(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="c1", name="read_file", arguments={"path": "missing.txt"})]), "ok"]
    )
    async with Harness(model=model, workspace=tmp_path) as agent:
        result = await agent.run("read it", context=ALICE)
    (returned,) = [e for e in result.events if isinstance(e, ToolReturned)]
    assert returned.error and returned.error_type == "FileNotFoundError"


def test_the_run_command_prints_the_streamed_runs_reply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "hello", "--workspace", str(tmp_path), "--model", "demo"]) == 0
    assert "I have no skills available" in capsys.readouterr().out

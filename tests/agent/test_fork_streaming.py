"""A forked skill's subagent inside a streamed run: its deltas flow through the parent's
stream between SubagentStarted and SubagentFinished, into AG-UI and the trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
from ag_ui.core import Event as AGUIEvent
from ag_ui.core import EventType
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import RuntimeContext
from harness.agent import Harness, PipelineOptions
from harness.agent.agui import agui_events, agui_sse
from harness.events import (
    Event,
    ModelReplied,
    RunFinished,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolCallDelta,
)
from harness.models import Message, ModelReply, ScriptedModel, ToolCall, Usage
from harness.tracing import attributes as attr
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="s-7")
PARSE: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(AGUIEvent)


def _research_skill(tmp_path: Path) -> None:
    make_skill(
        tmp_path / "skills", "research", body="Research $ARGUMENTS.\n", extra="context: fork\nagent: researcher\n"
    )


def _model() -> ScriptedModel:
    look = ToolCall(id="c1", name="list_files", arguments={"path": "."})
    return ScriptedModel(
        [
            ModelReply(
                message=Message.assistant("Looking around.", [look]), usage=Usage(input_tokens=5, output_tokens=2)
            ),
            ModelReply(
                message=Message.assistant("Tides follow the moon."), usage=Usage(input_tokens=9, output_tokens=4)
            ),
        ]
    )


async def _stream(tmp_path: Path, **options: Any) -> list[Event]:
    _research_skill(tmp_path)
    async with Harness(
        name="helper", model=_model(), workspace=tmp_path, **options, pipeline=PipelineOptions(watch=False)
    ) as agent:
        return [event async for event in agent.stream("/skill:research tides", context=ALICE)]


def _between(events: list[Event]) -> list[Event]:
    """The events of the (one) subagent, without its brackets."""
    kinds = [type(e) for e in events]
    return events[kinds.index(SubagentStarted) + 1 : kinds.index(SubagentFinished)]


async def test_a_forked_skill_streams_its_deltas_inside_subagent_brackets(tmp_path: Path) -> None:
    events = await _stream(tmp_path)
    (started,) = [e for e in events if isinstance(e, SubagentStarted)]
    (finished,) = [e for e in events if isinstance(e, SubagentFinished)]
    assert (started.agent, started.skill, started.session_id) == ("researcher", "research", "s-7/fork/research")
    assert (finished.run_id, finished.agent, finished.reply) == (started.run_id, "researcher", "Tides follow the moon.")
    inside = _between(events)
    texts = [e.text for e in inside if isinstance(e, TextDelta)]
    assert len(texts) > 2 and "".join(texts) == "Looking around.Tides follow the moon."
    assert any(isinstance(e, ToolCallDelta) and e.name == "list_files" for e in inside)
    # The deltas come before the step they make up, and nothing of the subagent leaks outside.
    first_reply = next(i for i, e in enumerate(inside) if isinstance(e, ModelReplied))
    assert any(isinstance(e, TextDelta) for e in inside[:first_reply])
    outside = [e for e in events if e not in inside]
    assert not any(isinstance(e, TextDelta | ToolCallDelta | ModelReplied) for e in outside)
    run_finished = events[-1]
    assert isinstance(run_finished, RunFinished) and run_finished.reply == "Tides follow the moon."
    assert (run_finished.steps, run_finished.usage.total_tokens) == (2, 20)


async def test_run_brackets_the_subagent_but_does_not_stream(tmp_path: Path) -> None:
    _research_skill(tmp_path)
    async with Harness(model=_model(), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:research tides", context=ALICE)
    kinds = [type(e).__name__ for e in result.events]
    assert not {"TextDelta", "ToolCallDelta"} & set(kinds)
    assert kinds[1] == "SubagentStarted" and kinds[-1] == "SubagentFinished"
    assert result.reply == "Tides follow the moon." and result.steps == 2


async def test_agui_attributes_the_subagents_text_and_tool_calls_to_it(tmp_path: Path) -> None:
    _research_skill(tmp_path)
    async with Harness(model=_model(), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        lines = [line async for line in agui_sse(agent.stream("/skill:research tides", context=ALICE))]
    events = [PARSE.validate_python(json.loads(line.removeprefix("data: "))) for line in lines]
    types = [e.type for e in events]
    start, end = types.index(EventType.SUBAGENT_STARTED), types.index(EventType.SUBAGENT_FINISHED)
    run_id = events[start].subagent_run_id
    assert events[start].name == "researcher" and events[end].subagent_run_id == run_id
    assert events[end].result == "Tides follow the moon."
    inside = events[start + 1 : end]
    assert {e.type for e in inside} >= {
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TOOL_CALL_START,
        EventType.TOOL_CALL_ARGS,
        EventType.TOOL_CALL_RESULT,
    }
    assert all(e.subagent_run_id == run_id for e in inside)
    text = "".join(e.delta for e in inside if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "Looking around.Tides follow the moon."
    outside = events[:start] + events[end + 1 :]
    assert all(getattr(e, "subagent_run_id", None) is None for e in outside)
    assert types[0] == EventType.RUN_STARTED and types[-1] == EventType.RUN_FINISHED


async def test_a_run_failing_inside_a_subagent_reports_the_subagent_error_first() -> None:
    async def run() -> Any:
        yield SubagentStarted(run_id="sub-1", agent="researcher", skill="research", session_id="s/fork/research")
        yield TextDelta(text="Half")
        raise RuntimeError("model went away")

    events = [e async for e in agui_events(run())]
    assert [e.type for e in events][-3:] == [EventType.TEXT_MESSAGE_END, EventType.SUBAGENT_ERROR, EventType.RUN_ERROR]
    assert events[-2].subagent_run_id == "sub-1" and events[-2].message == "model went away"


async def test_the_subagent_is_an_invoke_agent_span_holding_its_tool_calls(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        await _stream(tmp_path, tracer_provider=provider)
    finally:
        provider.shutdown()
    finished = exporter.get_finished_spans()
    spans = {span.name: span for span in finished}
    run, sub, tool = spans["invoke_agent helper"], spans["invoke_agent researcher"], spans["execute_tool list_files"]
    assert sub.parent is not None and sub.parent.span_id == run.context.span_id
    chats = [span for span in finished if span.name == "chat scripted"]
    assert len(chats) == 2
    for child in [tool, *chats]:
        assert child.parent is not None and child.parent.span_id == sub.context.span_id
    attributes = dict(sub.attributes or {})
    assert attributes[attr.CONVERSATION_ID] == "s-7/fork/research"
    assert attributes[attr.SKILL_NAME] == "research"
    assert (attributes[attr.USAGE_INPUT_TOKENS], attributes[attr.USAGE_OUTPUT_TOKENS]) == (14, 6)
    assert dict(run.attributes or {})[attr.USAGE_INPUT_TOKENS] == 14

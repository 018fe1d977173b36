"""Runs traced with OpenTelemetry GenAI spans, recorded by the SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import RuntimeContext
from harness.agent import Answer, ControlOptions, Harness, PipelineOptions, TrustOptions
from harness.models import DemoModel, Message, ModelReply, ScriptedModel, ToolCall, Usage
from harness.tools.function import tool
from harness.tracing import attributes as attr
from repositories import FileContents, MemoryRepository, SkillBundleContents
from tests.support.io import FILE_EVENTS, IORecorder
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="conv-42")
CAPTURE = attr.CAPTURE_CONTENT_ENV


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def _market() -> MemoryRepository:
    return MemoryRepository(
        [
            SkillBundleContents(
                folder="weather",
                skill_md=b"---\nname: weather\ndescription: Use when the user asks about the weather forecast.\n---\n"
                b"Run `python3 scripts/forecast.py` and report it.\n",
                files=(FileContents(path="scripts/forecast.py", data=b"print('sunny, 21 C')\n"),),
            )
        ],
        name="acme",
    )


def _by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    spans: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        spans.setdefault(span.name, []).append(span)
    return spans


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def _demo_run(tmp_path: Path, provider: TracerProvider) -> None:
    async with Harness(
        name="helper", model=DemoModel(), workspace=tmp_path, repositories=[_market()], tracer_provider=provider
    ) as agent:
        await agent.run("what is the weather forecast today?", context=ALICE)


async def test_a_run_is_an_invoke_agent_span_with_agent_conversation_and_usage(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await _demo_run(tmp_path, provider)
    (run,) = _by_name(exporter)["invoke_agent helper"]
    attributes = _attrs(run)
    assert attributes[attr.OPERATION_NAME] == "invoke_agent"
    assert attributes[attr.AGENT_NAME] == "helper"
    assert attributes[attr.CONVERSATION_ID] == "conv-42"
    assert attributes[attr.REQUEST_MODEL] == "demo"
    assert attributes[attr.USAGE_INPUT_TOKENS] > 0 and attributes[attr.USAGE_OUTPUT_TOKENS] > 0
    assert run.status.is_ok


async def test_each_tool_call_is_an_execute_tool_span_under_the_run(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await _demo_run(tmp_path, provider)
    spans = _by_name(exporter)
    (run,) = spans["invoke_agent helper"]
    (load,) = spans["execute_tool load_skill_through_path"]
    (shell,) = spans["execute_tool execute_shell_command"]
    for span in (load, shell):
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
        assert _attrs(span)[attr.OPERATION_NAME] == "execute_tool"
        assert _attrs(span)[attr.TOOL_CALL_ID].startswith("demo_call_")
    assert _attrs(shell)[attr.TOOL_NAME] == "execute_shell_command"
    assert attr.ERROR_TYPE not in _attrs(shell)


async def test_a_skill_load_carries_the_skill_name_and_source(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await _demo_run(tmp_path, provider)
    (load,) = _by_name(exporter)["execute_tool load_skill_through_path"]
    attributes = _attrs(load)
    assert attributes[attr.SKILL_NAME] == "weather"
    assert "weather" in attributes[attr.SKILL_SOURCE_URI]
    assert attributes[attr.SKILL_PATH] == "SKILL.md"


async def test_turn_prepare_counts_skills_by_layer_and_staging(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (tmp_path / "skills" / "notes").mkdir(parents=True)
    (tmp_path / "skills" / "notes" / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nWrite.\n")
    await _demo_run(tmp_path, provider)
    (prepare,) = _by_name(exporter)["harness.turn.prepare"]
    attributes = _attrs(prepare)
    assert attributes[attr.SKILLS] == 2 and attributes[attr.VISIBLE_SKILLS] == 2
    assert attributes[attr.layer_skills("market")] == 1
    assert attributes[attr.layer_skills("workspace")] == 1
    assert attributes[attr.layer_skills("user")] == 0
    assert attributes[attr.STAGED_WRITTEN] == 2  # the market skill's SKILL.md and its script


async def test_a_failing_tool_sets_error_type_and_the_run_goes_on(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="c1", name="explode", arguments={"reason": "boom"})]), "ok"]
    )
    async with Harness(model=model, workspace=tmp_path, tools=[explode], tracer_provider=provider) as agent:
        await agent.run("go", context=ALICE)
    (span,) = _by_name(exporter)["execute_tool explode"]
    assert _attrs(span)[attr.ERROR_TYPE] == "RuntimeError"
    assert span.status.status_code == trace.StatusCode.ERROR
    (run,) = _by_name(exporter)["invoke_agent assistant"]
    assert attr.ERROR_TYPE not in _attrs(run)


async def test_a_failing_run_sets_error_type_on_its_span(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, tracer_provider=provider) as agent:
        with pytest.raises(Exception, match="used up"):
            await agent.run("go", context=ALICE)
    (run,) = _by_name(exporter)["invoke_agent assistant"]
    assert _attrs(run)[attr.ERROR_TYPE] == "ScriptExhausted"
    assert run.status.status_code == trace.StatusCode.ERROR


async def test_spans_a_tool_makes_nest_under_its_execute_tool_span(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetches a page."""
        with provider.get_tracer("app").start_as_current_span("GET"):
            return "page"

    model = ScriptedModel([Message.assistant("", [ToolCall(id="c1", name="fetch", arguments={"url": "x"})]), "ok"])
    async with Harness(model=model, workspace=tmp_path, tools=[fetch], tracer_provider=provider) as agent:
        await agent.run("go", context=ALICE)
    spans = _by_name(exporter)
    (get,) = spans["GET"]
    (call,) = spans["execute_tool fetch"]
    assert get.parent is not None and get.parent.span_id == call.context.span_id


async def test_contents_are_recorded_only_when_the_opt_in_variable_says_so(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="c1", name="list_files", arguments={"path": "."})]), "done"]
    )
    async with Harness(model=model, workspace=tmp_path, tracer_provider=provider) as agent:
        await agent.run("secret question", context=ALICE)
    recorded = [v for span in exporter.get_finished_spans() for v in _attrs(span).values()]
    assert not any("secret question" in str(v) or "done" == v for v in recorded)

    exporter.clear()
    monkeypatch.setenv(CAPTURE, "true")
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="c1", name="list_files", arguments={"path": "."})]), "done"]
    )
    async with Harness(model=model, workspace=tmp_path, tracer_provider=provider) as agent:
        await agent.run("secret question", context=ALICE)
    spans = _by_name(exporter)
    run = _attrs(spans["invoke_agent assistant"][0])
    assert json.loads(run[attr.INPUT_MESSAGES])[0]["parts"][0]["content"] == "secret question"
    assert json.loads(run[attr.OUTPUT_MESSAGES])[0]["parts"][0]["content"] == "done"
    call = _attrs(spans["execute_tool list_files"][0])
    assert json.loads(call[attr.TOOL_CALL_ARGUMENTS]) == {"path": "."}
    assert attr.TOOL_CALL_RESULT in call


async def test_a_streamed_run_is_traced_like_a_run(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    reply = ModelReply(message=Message.assistant("hi there"), usage=Usage(input_tokens=5, output_tokens=2))
    async with Harness(model=ScriptedModel([reply]), workspace=tmp_path, tracer_provider=provider) as agent:
        _ = [event async for event in agent.stream("hello", context=ALICE)]
    spans = _by_name(exporter)
    (run,) = spans["invoke_agent assistant"]
    assert (_attrs(run)[attr.USAGE_INPUT_TOKENS], _attrs(run)[attr.USAGE_OUTPUT_TOKENS]) == (5, 2)
    (chat,) = spans["chat scripted"]  # one model call, however many deltas it streamed
    assert (_attrs(chat)[attr.USAGE_INPUT_TOKENS], _attrs(chat)[attr.USAGE_OUTPUT_TOKENS]) == (5, 2)


async def test_a_warm_traced_turn_does_no_file_operations(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel(["one", "two"])
    async with Harness(
        model=model,
        workspace=tmp_path,
        repositories=[_market()],
        tracer_provider=provider,
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        await agent.run("first", context=ALICE)
        with IORecorder(FILE_EVENTS) as seen:
            await agent.run("second", context=ALICE)
    assert seen == []
    assert len(_by_name(exporter)["invoke_agent assistant"]) == 2


async def test_each_model_call_is_a_chat_span_with_its_model_and_usage(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await _demo_run(tmp_path, provider)
    spans = _by_name(exporter)
    (run,) = spans["invoke_agent helper"]
    chats = spans["chat demo"]
    assert len(chats) == 3  # load the skill, run its script, answer
    for chat in chats:
        attributes = _attrs(chat)
        assert attributes[attr.OPERATION_NAME] == "chat" and attributes[attr.REQUEST_MODEL] == "demo"
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        assert chat.start_time is not None and chat.end_time is not None and chat.start_time <= chat.end_time
    assert sum(_attrs(c)[attr.USAGE_INPUT_TOKENS] for c in chats) == _attrs(run)[attr.USAGE_INPUT_TOKENS]
    assert sum(_attrs(c)[attr.USAGE_OUTPUT_TOKENS] for c in chats) == _attrs(run)[attr.USAGE_OUTPUT_TOKENS]
    # The calls and the tools alternate: each chat span ends before the tool it asked for starts.
    ordered = sorted([*chats, *spans["execute_tool load_skill_through_path"]], key=lambda s: s.start_time or 0)
    assert [s.name for s in ordered] == ["chat demo", "execute_tool load_skill_through_path", "chat demo", "chat demo"]
    assert (ordered[0].end_time or 0) <= (ordered[1].start_time or 0)


async def test_a_skill_that_picks_its_model_names_it_on_the_chat_span(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    make_skill(tmp_path / "skills", "deep", extra="model: thinker\n")
    models = {"thinker": ScriptedModel(["deep answer"], name="acme:thinker-1")}
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        tracer_provider=provider,
        trust=TrustOptions(models=models),
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        await agent.run("/skill:deep", context=ALICE)
    (chat,) = _by_name(exporter)["chat thinker-1"]
    assert (_attrs(chat)[attr.REQUEST_MODEL], _attrs(chat)[attr.PROVIDER_NAME]) == ("thinker-1", "acme")


async def test_a_reply_no_model_made_has_no_chat_span(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        tracer_provider=provider,
        control=ControlOptions(on_input=lambda text, ctx: Answer(text="hi")),
    ) as agent:
        result = await agent.run("hello", context=ALICE)
    assert result.reply == "hi"
    assert not [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(_by_name(exporter)["invoke_agent assistant"]) == 1

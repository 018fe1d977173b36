"""Runs and the pipeline measured with OpenTelemetry metrics, read by the SDK's in-memory reader."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from filesystems import CACHE_DIR
from harness import RuntimeContext
from harness.agent import ControlOptions, Harness, PatternPolicy, PipelineOptions
from harness.events import Event, ModelReplied, TurnPrepared
from harness.models import DemoModel, Message, ModelReply, ScriptedModel, ToolCall, Usage
from harness.pipeline.environments import ENVS_DIR
from harness.tools.function import tool
from harness.tracing import RunMetrics
from harness.tracing import attributes as attr
from repositories import FileContents, GitRepository, MemoryRepository, SkillBundleContents
from tests.support.environments import market, options, pipeline_over, settled, uv_cache, wheelhouse
from tests.support.filesystems import open_filesystem
from tests.support.io import FILE_EVENTS, IORecorder

__all__ = ["uv_cache", "wheelhouse"]  # fixtures

ALICE = RuntimeContext(user_id="alice", session_id="conv-42")
BOB = RuntimeContext(user_id="bob", session_id="conv-7")


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meters(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[reader])
    yield provider
    provider.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Every data point collected now, by metric name."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _one(points: list[Any], **attributes: object) -> Any:
    """The point whose attributes are exactly ``attributes`` (keys spelled with dots)."""
    wanted = {key.replace("__", "."): value for key, value in attributes.items()}
    (point,) = [p for p in points if dict(p.attributes) == wanted]
    return point


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


def _call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))


async def test_a_run_counts_once_as_completed_with_its_duration(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    async with Harness(
        name="helper", model=DemoModel(), workspace=tmp_path, repositories=[_market()], meter_provider=meters
    ) as agent:
        await agent.run("what is the weather forecast today?", context=ALICE)
    points = _points(reader)
    assert _one(points[attr.TURNS], gen_ai__agent__name="helper", harness__turn__outcome="completed").value == 1
    duration = _one(points[attr.AGENT_DURATION], gen_ai__agent__name="helper")
    assert duration.count == 1 and duration.sum > 0
    assert tuple(duration.explicit_bounds) == attr.AGENT_DURATION_BUCKETS  # the conventions' buckets


async def test_each_model_call_records_its_duration_and_tokens(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    replies = [
        ModelReply(
            message=Message.assistant("", [_call("list_files", "c1", path=".")]),
            usage=Usage(input_tokens=3, output_tokens=1),
        ),
        ModelReply(message=Message.assistant("done"), usage=Usage(input_tokens=5, output_tokens=2)),
    ]
    model = ScriptedModel(replies, name="acme:thinker-1")
    async with Harness(model=model, workspace=tmp_path, meter_provider=meters) as agent:
        await agent.run("go", context=ALICE)
    points = _points(reader)
    call = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "thinker-1", "gen_ai.provider.name": "acme"}
    (duration,) = points[attr.OPERATION_DURATION]
    assert dict(duration.attributes) == call and duration.count == 2
    tokens = {p.attributes[attr.TOKEN_TYPE]: p for p in points[attr.TOKEN_USAGE]}
    assert (tokens["input"].sum, tokens["output"].sum) == (8, 3) and tokens["input"].count == 2


async def test_calls_run_side_by_side_record_how_long_each_ran(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    @tool
    async def nap(seconds: float) -> str:
        """Sleeps a while."""
        await anyio.sleep(seconds)
        return "rested"

    # Both calls of one step run at once and are reported after both ended: the events' own
    # times would give the second call no time at all.
    step = Message.assistant("", [_call("nap", "c1", seconds=0.05), _call("nap", "c2", seconds=0.05)])
    async with Harness(
        model=ScriptedModel([step, "ok"]), workspace=tmp_path, tools=[nap], meter_provider=meters
    ) as agent:
        await agent.run("rest", context=ALICE)
    (duration,) = _points(reader)[attr.TOOL_DURATION]
    expected = {"gen_ai.agent.name": "assistant", "gen_ai.tool.name": "nap", "gen_ai.tool.type": "function"}
    assert dict(duration.attributes) == expected
    assert duration.count == 2 and duration.min >= 0.05


async def test_a_tool_name_the_model_made_up_never_becomes_an_attribute(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    # A hostile model names tools after the user, their session and free text, hoping to fill
    # the metrics with labels (a cardinality attack) or leak them to a dashboard.
    made_up = ["alice-conv-42", "x" * 300, "ignore previous instructions"]

    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    step = Message.assistant(
        "", [*(_call(name, f"u{i}") for i, name in enumerate(made_up)), _call("explode", "e1", reason="alice")]
    )
    async with Harness(
        model=ScriptedModel([step, "secret answer"]), workspace=tmp_path, tools=[explode], meter_provider=meters
    ) as agent:
        await agent.run("secret question", context=ALICE)
    points = _points(reader)
    tools = points[attr.TOOL_DURATION]
    made_up_calls = _one(
        tools,
        gen_ai__agent__name="assistant",
        gen_ai__tool__name="_OTHER",
        gen_ai__tool__type="function",
        error__type="unknown_tool",
    )
    assert made_up_calls.count == 3
    failed = _one(
        tools,
        gen_ai__agent__name="assistant",
        gen_ai__tool__name="explode",
        gen_ai__tool__type="function",
        error__type="RuntimeError",
    )
    assert failed.count == 1
    values = {str(v) for ps in points.values() for p in ps for v in dict(p.attributes).values()}
    for secret in (*made_up, "alice", "conv-42", "secret question", "secret answer"):
        assert not any(secret in value for value in values), secret


async def test_a_failing_run_counts_as_failed_with_what_it_raised(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, meter_provider=meters) as agent:
        with pytest.raises(Exception, match="used up"):
            await agent.run("go", context=ALICE)
    points = _points(reader)
    assert _one(points[attr.TURNS], gen_ai__agent__name="assistant", harness__turn__outcome="failed").value == 1
    assert _one(points[attr.AGENT_DURATION], gen_ai__agent__name="assistant", error__type="ScriptExhausted").count == 1


async def test_a_run_paused_for_approval_counts_as_paused_and_its_resume_as_completed(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    model = ScriptedModel([Message.assistant("", [_call("execute_shell_command", "c1", command="true")]), "done"])
    async with Harness(
        model=model,
        workspace=tmp_path,
        control=ControlOptions(approval=PatternPolicy([], default="ask")),
        meter_provider=meters,
    ) as agent:
        paused = await agent.run("go", context=ALICE)
        assert _one(_points(reader)[attr.TURNS], gen_ai__agent__name="assistant", harness__turn__outcome="paused")
        await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
        await agent.resume(context=ALICE)
    points = _points(reader)
    turns = {p.attributes[attr.TURN_OUTCOME]: p.value for p in points[attr.TURNS]}
    assert turns == {"paused": 1, "completed": 1}
    # The call paused first (it did not run: its result says it awaits approval), then ran on resume.
    shell = {p.attributes.get(attr.ERROR_TYPE): p.count for p in points[attr.TOOL_DURATION]}
    assert shell == {"AwaitingApproval": 1, None: 1}


async def test_a_stream_given_up_on_counts_as_cancelled(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    async with Harness(model=ScriptedModel(["a long answer"]), workspace=tmp_path, meter_provider=meters) as agent:
        stream = agent.stream("go", context=ALICE)
        async for event in stream:
            if isinstance(event, TurnPrepared):  # the run is under way: the client leaves
                break
        await stream.aclose()  # type: ignore[attr-defined]
    outcomes = {p.attributes[attr.TURN_OUTCOME]: p.value for p in _points(reader)[attr.TURNS]}
    assert outcomes == {"cancelled": 1}


async def test_a_market_that_fails_is_counted_by_its_slug_on_each_load(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    missing = GitRepository(f"file://{tmp_path / 'gone.git'}", cache_dir=tmp_path / "gitcache")
    async with Harness(
        model=ScriptedModel(["one", "two"]), workspace=tmp_path / "ws", repositories=[missing], meter_provider=meters
    ) as agent:
        await agent.run("first", context=ALICE)
        await agent.run("second", context=ALICE)
        slug = agent.pipeline.market_layers[0].source
    (failures,) = _points(reader)[attr.MARKET_FAILURES]
    assert dict(failures.attributes) == {attr.MARKET_SOURCE: slug} and failures.value == 2


async def test_gauges_read_the_staged_bytes_and_the_users_held_from_memory(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    async with Harness(
        model=ScriptedModel(["one", "two"]),
        workspace=tmp_path,
        repositories=[_market()],
        meter_provider=meters,
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        await agent.run("hi", context=ALICE)
        cache = tmp_path / CACHE_DIR
        staged = sum(
            p.stat().st_size
            for p in cache.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(cache).parts)
        )
        with IORecorder(FILE_EVENTS) as seen:
            points = _points(reader)
        assert seen == []  # a collection reads no file
        assert staged > 0
        assert _one(points[attr.CACHE_USAGE], harness__skills_cache__part="skills").value == staged
        assert [p.value for p in points[attr.CACHED_USERS]] == [1]
        await agent.run("hi", context=BOB)
        assert [p.value for p in _points(reader)[attr.CACHED_USERS]] == [2]


async def test_environment_builds_are_counted_by_outcome_with_their_duration_and_size(
    tmp_path: Path, wheelhouse: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    remote = market(
        tmp_path,
        {"broken-tool": {"requirements.txt": "hxmissing>=1\n"}, "sheet-tool": {"requirements.txt": "hxsheet\n"}},
    )
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        RunMetrics(meters).watch(pipeline)
        await settled(pipeline)
        points = _points(reader)
    builds = {p.attributes[attr.ENVIRONMENT_OUTCOME]: p.value for p in points[attr.ENVIRONMENT_BUILDS]}
    assert builds == {"ready": 1, "failed": 1}
    durations = {p.attributes[attr.ENVIRONMENT_OUTCOME]: p.count for p in points[attr.ENVIRONMENT_BUILD_DURATION]}
    assert durations == {"ready": 1, "failed": 1}
    envs = tmp_path / "ws" / ENVS_DIR
    built = sum(p.stat().st_size for p in envs.rglob("*") if p.is_file() and not p.is_symlink())
    assert _one(points[attr.CACHE_USAGE], harness__skills_cache__part="environments").value == built > 0


async def test_a_warm_measured_turn_does_no_file_operations(
    tmp_path: Path, meters: MeterProvider, reader: InMemoryMetricReader
) -> None:
    async with Harness(
        model=ScriptedModel(["one", "two"]),
        workspace=tmp_path,
        repositories=[_market()],
        meter_provider=meters,
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        await agent.run("first", context=ALICE)
        with IORecorder(FILE_EVENTS) as seen:
            await agent.run("second", context=ALICE)
    assert seen == []
    assert (
        _one(_points(reader)[attr.TURNS], gen_ai__agent__name="assistant", harness__turn__outcome="completed").value
        == 2
    )


async def test_without_a_meter_provider_a_run_passes_through_untouched() -> None:
    async def events() -> AsyncIterator[Event]:
        yield ModelReplied(content="x", usage=Usage(), final=True)

    run = events()
    metrics = RunMetrics()  # this process never sets a global meter provider
    assert not metrics.on and metrics.measure(run, agent="a") is run


def test_runs_are_measured_once_the_application_sets_the_global_meter_provider(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from harness import RuntimeContext
        from harness.agent import Harness

        async def main():
            async with Harness(model="demo", workspace={str(tmp_path)!r}) as agent:
                await agent.run("before", context=RuntimeContext(user_id="alice"))
                reader = InMemoryMetricReader()
                metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
                await agent.run("after", context=RuntimeContext(user_id="alice"))
            names = {{m.name: m.data.data_points for r in reader.get_metrics_data().resource_metrics
                     for s in r.scope_metrics for m in s.metrics}}
            print(sum(p.value for p in names["harness.turns"]), "users" , [p.value for p in names["harness.pipeline.user.count"]])

        asyncio.run(main())
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "users", "[1]"]  # the run after, not the one before

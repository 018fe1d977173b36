"""The catalog ordered by usage: with the self-learning loop, a market skill the model loads and
runs moves to the front of its group (and keeps its description under a tight budget) once the
agent reads the counts, a warm turn in between still does no file operation, and an app's own
relevance mapping wins."""

from __future__ import annotations

from pathlib import Path

from harness import RuntimeContext
from harness.agent import Harness, LearningOptions, PipelineOptions, UsageRelevance
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from repositories import MemoryRepository
from tests.support.catalog import files_root_in, read_catalog
from tests.support.io import FILE_EVENTS, IORecorder
from tests.support.polling import eventually
from tests.support.skills import make_bundle

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
TIGHT = 1_800  # every skill of the market is named, only the first few described
LAST = "tool-29"  # the last skill by name
LAST_ID = f"{LAST}_acme"
HOUR = 3600.0  # the counts are read on entry, then not again by themselves during a test


def _market() -> MemoryRepository:
    bundles = [
        make_bundle(f"tool-{i:02d}", description=f"Use when the work needs tool number {i:02d} of the acme market.")
        for i in range(30)
    ]
    return MemoryRepository(bundles, name="acme", writable=False)


def _call(tool_name: str, **arguments: object) -> Message:
    return Message.assistant("", [ToolCall(id=f"c-{tool_name}", name=tool_name, arguments=dict(arguments))])


def _run_last_skill(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
    """Run a command in the last skill's files-root, as the catalog shows it."""
    return _call(SHELL_TOOL, command=f"ls {files_root_in(messages[0].content, LAST)}")


def _agent(tmp_path: Path, model: ScriptedModel) -> Harness:
    return Harness(
        model=model,
        workspace=tmp_path,
        repositories=[_market()],
        pipeline=PipelineOptions(catalog_budget=TIGHT),
        learning=LearningOptions(loop=True, relevance_interval=HOUR),
    )


def _started(relevance: UsageRelevance | None) -> UsageRelevance:
    """The agent's relevance reader (its first read was done on entry)."""
    assert relevance is not None and relevance.running
    return relevance


async def test_a_loaded_and_run_market_skill_comes_first_and_keeps_its_description(tmp_path: Path) -> None:
    model = ScriptedModel([_call(LOAD_TOOL, skillId=LAST_ID), _run_last_skill, "done"])
    async with _agent(tmp_path, model) as agent:
        before = read_catalog((await agent.prepare(ALICE)).catalog)
        assert before.skills[0].name == "tool-00" and LAST in before.named
        await agent.run("use the last tool", context=ALICE)

        assert await _started(agent.usage_relevance).refresh()
        assert agent.pipeline.relevance == {LAST_ID: 4.0}  # one view and one use
        after = read_catalog((await agent.prepare(BOB)).catalog)
    assert after.skills[0].name == LAST and LAST in after.described
    assert [s.name for s in after.skills[1:3]] == ["tool-00", "tool-01"]  # the rest by name


async def test_recorded_uses_change_nothing_until_the_counts_are_read(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        first = await agent.prepare(ALICE)
        await agent.learning.recorder.record_use(LAST_ID, ALICE)
        with IORecorder(FILE_EVENTS) as seen:
            warm = await agent.prepare(ALICE)
    assert seen == [] and warm.catalog == first.catalog


async def test_a_warm_turn_after_a_refresh_does_no_file_operations(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        await agent.prepare(ALICE)  # warm: a turn that reads files from now on reads them for the write below
        await agent.learning.recorder.record_use(LAST_ID, ALICE)  # writes skills/.usage.json

        async def rescanned() -> bool:  # the watcher has reported that write, and a turn read it
            with IORecorder(FILE_EVENTS) as seen:
                await agent.prepare(ALICE)
            return bool(seen)

        await eventually(rescanned, what="the watcher reporting the usage file's write")
        assert await _started(agent.usage_relevance).refresh()
        refreshed = await agent.prepare(ALICE)
        with IORecorder(FILE_EVENTS) as seen:
            warm = await agent.prepare(ALICE)
    assert seen == [] and warm.catalog == refreshed.catalog
    assert read_catalog(warm.catalog).skills[0].name == LAST


async def test_an_unchanged_ranking_keeps_every_cached_catalog(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        relevance = _started(agent.usage_relevance)
        await agent.learning.recorder.record_use(LAST_ID, ALICE)
        assert await relevance.refresh()
        scores = agent.pipeline.relevance
        await agent.learning.recorder.record_use(LAST_ID, ALICE)  # still the only one used
        assert not await relevance.refresh()
    assert agent.pipeline.relevance is scores


async def test_a_use_counts_for_more_than_a_view(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        for _ in range(2):
            await agent.learning.recorder.record_view("tool-05_acme", ALICE)
        await agent.learning.recorder.record_use(LAST_ID, ALICE)
        await _started(agent.usage_relevance).refresh()
        shown = read_catalog((await agent.prepare(ALICE)).catalog)
    assert [s.name for s in shown.skills[:3]] == [LAST, "tool-05", "tool-00"]


async def test_an_app_supplied_mapping_wins(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        relevance = _started(agent.usage_relevance)
        await agent.learning.recorder.record_use(LAST_ID, ALICE)
        assert await relevance.refresh()
        mine = {"tool-17_acme": 1.0}
        agent.pipeline.relevance = mine
        await agent.learning.recorder.record_use("tool-03_acme", ALICE)
        assert not await relevance.refresh()
        assert agent.pipeline.relevance is mine
        assert read_catalog((await agent.prepare(ALICE)).catalog).skills[0].name == "tool-17"

        agent.pipeline.relevance = None  # hands the order back to the usage counts
        assert await relevance.refresh()
        shown = read_catalog((await agent.prepare(ALICE)).catalog)
    assert [s.name for s in shown.skills[:3]] == ["tool-03", LAST, "tool-00"]  # one use each, then by name


async def test_the_counts_are_read_on_entry_and_the_task_stops_on_exit(tmp_path: Path) -> None:
    async with _agent(tmp_path, ScriptedModel([])) as agent:
        assert agent.learning is not None
        await agent.learning.recorder.record_use(LAST_ID, ALICE)
    async with _agent(tmp_path, ScriptedModel([])) as again:
        relevance = _started(again.usage_relevance)
        assert again.pipeline.relevance == {LAST_ID: 3.0}
        assert read_catalog((await again.prepare(ALICE)).catalog).skills[0].name == LAST
    assert not relevance.running


async def test_without_learning_the_catalog_stays_by_name(tmp_path: Path) -> None:
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        repositories=[_market()],
        pipeline=PipelineOptions(catalog_budget=TIGHT),
    ) as agent:
        assert agent.usage_relevance is None and agent.pipeline.relevance is None

"""search_skills: a cut catalog stays usable — the model finds any skill and loads it in the same
turn, and a search never shows another user's skill or a filtered one."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness import RuntimeContext
from harness.agent import Harness, PipelineOptions
from harness.events import SkillLoaded, ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET, SEARCH_TOOL
from harness.pipeline.plan import VisibilityPolicy
from harness.skills.skill import Skill
from harness.tools.search import search_plan
from repositories import MemoryRepository
from tests.support.io import FILE_EVENTS, IORecorder
from tests.support.sizing import sized
from tests.support.skills import make_bundle, make_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
SMALL = 1_500  # a budget that cuts a catalog of a few dozen skills
# A market the default budget cuts: the catalog names about 1,250 of these skills, the search tool
# is the only way to the rest (10,000 with --large).
BIG = sized(3_000, full=10_000)
UNLISTED = f"{BIG * 9876 // 10_000:05d}"  # deep in the market, far past the listed names


def _market(count: int) -> MemoryRepository:
    bundles = [
        make_bundle(f"market-{i:05d}", description=f"Use when the task is about topic {i:05d} of the market.")
        for i in range(count)
    ]
    return MemoryRepository(bundles, name="big", writable=False)


def _call(tool_name: str, **arguments: object) -> Message:
    return Message.assistant("", [ToolCall(id=f"c-{tool_name}", name=tool_name, arguments=dict(arguments))])


def _load_first_result(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
    """The scripted model's second step: load the first skill id the search returned."""
    found = re.search(r'<skill name="[^"]*" id="([^"]*)"', messages[-1].content)
    assert found is not None, messages[-1].content
    return _call("load_skill_through_path", skillId=found.group(1))


class _DropFiltered:
    """A visibility policy that hides every skill whose name starts with ``filtered-``."""

    async def apply(self, skills: list[Skill], context: RuntimeContext) -> list[Skill]:
        return [s for s in skills if not s.name.startswith("filtered-")]


@pytest.mark.slow
async def test_a_large_market_fits_the_default_budget_and_every_sampled_skill_is_found(tmp_path: Path) -> None:
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, repositories=[_market(BIG)]) as agent:
        plan = await agent.prepare(ALICE)
        assert len(plan.catalog) <= DEFAULT_CATALOG_BUDGET and plan.search is not None
        sample = random.Random(7).sample(range(BIG), 50)
        assert any(f"market-{index:05d}" not in plan.catalog for index in sample)  # some only a search finds
        for index in sample:
            name = f"market-{index:05d}"
            matches = await search_plan(plan, name, limit=5)
            assert matches[0].name == name, (name, [m.name for m in matches])
            assert matches[0].files_root is not None and matches[0].files_root.endswith(f"/big/{name}")


@pytest.mark.slow
async def test_the_model_finds_an_unlisted_skill_and_loads_it_in_the_same_turn(tmp_path: Path) -> None:
    model = ScriptedModel([_call(SEARCH_TOOL, query=f"topic {UNLISTED}", limit=3), _load_first_result, "done"])
    filesystem = LocalFilesystem(tmp_path, shell=False)  # nothing to stage: the test is about the catalog
    async with Harness(model=model, filesystem=filesystem, repositories=[_market(BIG)]) as agent:
        result = await agent.run(f"help with topic {UNLISTED}", context=ALICE)
    assert f"market-{UNLISTED}" not in model.calls[0].messages[0].content  # not listed in the catalog
    assert SEARCH_TOOL in model.calls[0].tool_names
    assert [e.skill_id for e in result.events if isinstance(e, SkillLoaded)] == [f"market-{UNLISTED}_big"]
    loaded = [e for e in result.events if isinstance(e, ToolReturned)][-1]
    assert not loaded.error and f"# market-{UNLISTED}" in loaded.content


async def test_search_reads_when_to_use(tmp_path: Path) -> None:
    make_skill(
        tmp_path / "skills",
        "invoices",
        description="Accounting helper.",
        extra="when_to_use: the user uploads a supplier receipt\n",
    )
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        repositories=[_market(40)],
        pipeline=PipelineOptions(catalog_budget=SMALL),
    ) as agent:
        plan = await agent.prepare(ALICE)
        matches = await search_plan(plan, "supplier receipt")
    assert [m.name for m in matches] == ["invoices"]


async def test_search_never_returns_another_users_skill(tmp_path: Path) -> None:
    make_skill(tmp_path / "alice" / "skills", "alice-private-notes", description="Alice's private diary format.")
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        repositories=[_market(40)],
        pipeline=PipelineOptions(catalog_budget=SMALL),
    ) as agent:
        mine = await search_plan(await agent.prepare(ALICE), "private diary")
        theirs = await search_plan(await agent.prepare(BOB), "private diary")
    assert [m.name for m in mine] == ["alice-private-notes"]
    assert theirs == []


async def test_search_never_returns_a_filtered_or_hidden_skill(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "filtered-rollout", description="Use for the special rollout task.")
    make_skill(
        tmp_path / "skills",
        "hidden-special",
        description="Use for the special hidden task.",
        extra="disable-model-invocation: true\n",
    )
    policy: VisibilityPolicy = _DropFiltered()
    model = ScriptedModel([_call(SEARCH_TOOL, query="special"), "nothing"])
    async with Harness(
        model=model,
        workspace=tmp_path,
        repositories=[_market(40)],
        pipeline=PipelineOptions(catalog_budget=SMALL, visibility=policy),
    ) as agent:
        result = await agent.run("a special task", context=ALICE)
    returned = [e for e in result.events if isinstance(e, ToolReturned)]
    assert returned and "no skill matches" in returned[0].content
    assert "filtered-rollout" not in returned[0].content and "hidden-special" not in returned[0].content


async def test_a_whole_catalog_offers_no_search_tool(tmp_path: Path) -> None:
    model = ScriptedModel(["hi"])
    async with Harness(model=model, workspace=tmp_path, repositories=[_market(3)]) as agent:
        await agent.run("hello", context=ALICE)
    assert SEARCH_TOOL not in model.calls[0].tool_names
    assert SEARCH_TOOL not in model.calls[0].messages[0].content


async def test_a_warm_turn_of_a_cut_catalog_does_no_file_operations(tmp_path: Path) -> None:
    async with Harness(
        model=ScriptedModel([]),
        workspace=tmp_path,
        repositories=[_market(200)],
        pipeline=PipelineOptions(catalog_budget=SMALL),
    ) as agent:
        first = await agent.prepare(ALICE)
        await search_plan(first, "topic 00042")
        with IORecorder(FILE_EVENTS) as seen:
            warm = await agent.prepare(ALICE)
            matches = await search_plan(warm, "topic 00042")
    assert seen == [] and warm.search is first.search
    assert matches[0].name == "market-00042"

"""The loop seen through the real per-turn pipeline: drafts and archives never reach a turn,
promoted skills do, and visibility filters act on agent-created skills."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import EnvironmentFilter, SelfLearning
from harness.pipeline import SkillPipeline
from tests.support.clock import ManualClock


@pytest.fixture
async def loop_and_pipeline(
    workspace: LocalFilesystem, clock: ManualClock
) -> AsyncIterator[tuple[SelfLearning, SkillPipeline]]:
    pipeline = SkillPipeline(filesystem=workspace, watch=False)
    loop = SelfLearning(workspace, visibility=EnvironmentFilter(), on_change=pipeline.invalidate, clock=clock)
    pipeline.visibility = loop.visibility
    async with pipeline:
        yield loop, pipeline


async def test_drafts_and_archives_stay_out_of_the_turn(
    loop_and_pipeline: tuple[SelfLearning, SkillPipeline], alice: RuntimeContext
) -> None:
    loop, pipeline = loop_and_pipeline
    shop = loop.workshop(alice)
    await shop.propose_skill("drafted", "Use for drafts.", "b")
    await shop.propose_skill("gone", "Use for nothing.", "b")
    await shop.skill_manage("delete", "gone")
    plan = await pipeline.prepare(alice)
    assert plan.find("drafted") is None and plan.find("gone") is None
    assert "drafted" not in plan.catalog

    await loop.promote_skill("drafted", "carol", context=alice)
    plan = await pipeline.prepare(alice)
    found = plan.find("drafted_workspace-namespaced")
    assert found is not None and "drafted" in plan.catalog


async def test_environment_filter_hides_agent_skills_elsewhere(
    loop_and_pipeline: tuple[SelfLearning, SkillPipeline], workspace: LocalFilesystem, alice: RuntimeContext
) -> None:
    loop, pipeline = loop_and_pipeline
    await loop.workshop(alice).propose_skill("dev-only", "Use in dev.", "b")
    await loop.promote_skill("dev-only", "carol", context=alice)
    await workspace.write_text(
        "alice/skills/by-hand/SKILL.md", "---\nname: by-hand\ndescription: Use always.\n---\nb\n"
    )
    assert (await pipeline.prepare(alice)).find("dev-only") is not None
    prod = await pipeline.prepare(dataclasses.replace(alice, environment="prod"))
    assert prod.find("dev-only") is None and prod.find("by-hand") is not None

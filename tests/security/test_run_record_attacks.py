"""Signed run records are fresh and owned (README, "Security model"): restoring an older validly
signed ``run.json`` (a rollback) or copying another user's into one's own area must not make the
engine perform a confirmed side effect again. Each attack runs a real workflow whose guarded
``deploy`` counts its calls; the count must stay 1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.engine import RunExists, RunKey, RunRecordCorrupt, RunTampered
from harness.models import ScriptedModel
from tests.support.filesystems import build_filesystem

from .test_workflow_attacks import WORKFLOW, SideEffects

ALICE = RuntimeContext(user_id="alice", session_id="attack")
BOB = RuntimeContext(user_id="bob", session_id="attack")
RECORD = ".harness/runs/r1/run.json"


@pytest.fixture(params=["local", "memory", "sqlite", "mysql"])
async def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AbstractFilesystem]:
    async with build_filesystem(request, request.param, tmp_path) as built:
        fs = built.fs
        await fs.write_text("skills/ship/SKILL.md", "---\nname: ship\ndescription: Use to ship.\n---\nShip it.\n")
        await fs.write_text("skills/ship/workflow.yaml", WORKFLOW)
        await fs.write_text("skills/ship/guardrails.yaml", "confirmation_required_for: [deploy]\n")
        await fs.write_text("skills/helper/SKILL.md", "---\nname: helper\ndescription: Prepares.\n---\nPrepare.\n")
        yield fs


def _agent(fs: AbstractFilesystem, effects: SideEffects, name: str = "assistant") -> Harness:
    return Harness(
        model=ScriptedModel(["prepared"] * 4),
        filesystem=fs,
        tools=effects.tools(),
        name=name,
        pipeline=PipelineOptions(watch=False),
    )


async def _blocked(agent: Harness, context: RuntimeContext) -> str:
    run = await agent.run_workflow("ship", context=context, run_id="r1")
    assert run.blocked is not None and run.blocked.kind == "confirmation"
    return run.blocked.action.id


async def test_restoring_an_older_signed_record_does_not_run_a_side_effect_again(
    workspace: AbstractFilesystem,
) -> None:
    effects = SideEffects()
    alice = workspace.scoped("alice")
    async with _agent(workspace, effects) as agent:
        action = await _blocked(agent, ALICE)
        blocked = await alice.read_bytes(RECORD)  # validly signed, one revision behind
        done = await agent.continue_workflow("r1", context=ALICE, confirm=action)
        assert done.status == "completed" and effects.calls == ["deploy"]
        await alice.write_bytes(RECORD, blocked)  # the rollback
        with pytest.raises(RunTampered, match="older copy was restored"):
            await agent.continue_workflow("r1", context=ALICE, confirm=action)
        # A new agent keeps nothing of the first in memory: the mark is stored state.
        async with _agent(workspace, effects) as restarted:
            with pytest.raises(RunTampered, match=f"is revision {json.loads(blocked)['revision']}"):
                await restarted.continue_workflow("r1", context=ALICE, confirm=action)
            with pytest.raises(RunTampered):
                await restarted.workflow_engine(ALICE).inspect("r1")
    assert effects.calls == ["deploy"]


async def test_another_users_record_copied_into_ones_area_is_refused(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, effects) as agent:
        action = await _blocked(agent, BOB)
        await agent.continue_workflow("r1", context=BOB, confirm=action)
        assert effects.calls == ["deploy"]
        # Alice's own run of the same skill stores the snapshot bob's record is pinned to.
        await agent.run_workflow("ship", context=ALICE, run_id="mine")
        bobs = await workspace.scoped("bob").read_bytes(RECORD)
        await workspace.scoped("alice").write_bytes(RECORD, bobs)
        with pytest.raises(RunTampered, match="belongs to user 'bob'"):
            await agent.continue_workflow("r1", context=ALICE, confirm=action)
    assert effects.calls == ["deploy"]


async def test_another_agents_record_is_refused(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, effects, name="assistant") as agent, _agent(workspace, effects, "other") as other:
        action = await _blocked(agent, ALICE)
        with pytest.raises(RunTampered, match="of agent 'assistant'"):
            await other.continue_workflow("r1", context=ALICE, confirm=action)
    assert effects.calls == []


async def test_a_record_signed_before_owners_were_signed_is_refused_with_a_clear_message(
    workspace: AbstractFilesystem,
) -> None:
    effects = SideEffects()
    alice = workspace.scoped("alice")
    async with _agent(workspace, effects) as agent:
        action = await _blocked(agent, ALICE)
        record = json.loads(await alice.read_bytes(RECORD))
        del record["owner"], record["mac"]
        record["mac"] = await RunKey(workspace).sign(record)  # what the previous engine wrote
        await alice.write_text(RECORD, json.dumps(record))
        with pytest.raises(RunRecordCorrupt, match="did not bind records to their owner and revision"):
            await agent.continue_workflow("r1", context=ALICE, confirm=action)
    assert effects.calls == []


async def test_a_run_id_is_never_reused_in_a_scope(workspace: AbstractFilesystem) -> None:
    effects = SideEffects()
    async with _agent(workspace, effects) as agent:
        await _blocked(agent, ALICE)
        await workspace.scoped("alice").delete(".harness/runs/r1")
        with pytest.raises(RunExists, match="was used before"):
            await agent.run_workflow("ship", context=ALICE, run_id="r1")
        await _blocked(agent, BOB)  # another user's scope has its own ids

"""Shadowed skills stay loadable by their full id; a hostile model must not turn that into a way
around visibility filters, tenant isolation (rule 1) or the front door of skill folders
(rules 9 and 11): a filtered skill, another tenant's skill and a folder a tenant can write are
never what a shadowed id serves."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, SandboxFilesystem
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.events import ToolReturned
from harness.learning import AllowListFilter, SidecarUsage, SkillUsage, VisibilityPolicy
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools.skills import LOAD_TOOL
from tests.support.catalog import read_catalog
from tests.support.filesystems import shared_dir
from tests.support.skills import make_skill

from .attacker import ALICE, BOB_SECRET

BOB = RuntimeContext(user_id="bob", session_id="attack")
TEAM_ONLY = "TEAM-ONLY-5d1e"


def _loads(*ids: str) -> ScriptedModel:
    calls = [ToolCall(id=f"l{i}", name=LOAD_TOOL, arguments={"skillId": skill_id}) for i, skill_id in enumerate(ids)]
    return ScriptedModel([Message.assistant("", calls), "done"], name="attacker")


def _results(events: object) -> dict[str, ToolReturned]:
    returned = [e for e in events if isinstance(e, ToolReturned)]  # type: ignore[attr-defined]
    return {r.call_id: r for r in returned}


async def _workspace(root: Path) -> None:
    """``beta`` (agent-made, shown to bob only) and ``notes`` in the workspace; alice has her own
    ``beta``, bob his own ``notes``: each shadows the workspace's for its owner only."""
    make_skill(root / "skills", "beta", description="Use for the team's beta.", body=f"{TEAM_ONLY}\n")
    make_skill(root / "skills", "notes", description="Use for team notes.", body="Team notes.\n")
    make_skill(root / "alice" / "skills", "beta", description="Use for alice's beta.", body="Alice's beta.\n")
    make_skill(root / "bob" / "skills", "notes", description="Use for bob's notes.", body=f"{BOB_SECRET}\n")
    async with LocalFilesystem(root) as fs:
        record = SkillUsage(skill_id="beta_workspace", name="beta", created_by="agent")
        await SidecarUsage(fs).for_scope(None).update("beta_workspace", lambda _: record)


async def test_a_filtered_or_another_tenants_shadowed_skill_never_loads(tmp_path: Path) -> None:
    await _workspace(tmp_path)
    model = _loads(
        "beta_workspace",
        "notes_workspace-namespaced",
        "beta_workspace-namespaced",
        "notes_workspace",
    )
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        visibility = VisibilityPolicy(AllowListFilter(["bob"]), usage=SidecarUsage(fs))
        async with Harness(
            model=model, filesystem=fs, pipeline=PipelineOptions(visibility=visibility, watch=False)
        ) as agent:
            result = await agent.run("load everything", context=ALICE)
            bob_plan = await agent.prepare(BOB)
    calls = _results(result.events)
    filtered, other_tenant, own, team_notes = (calls[f"l{i}"] for i in range(4))
    assert filtered.error and TEAM_ONLY not in filtered.content and "not available" in filtered.content
    assert other_tenant.error and BOB_SECRET not in other_tenant.content
    assert not own.error and "Alice's beta." in own.content
    assert not team_notes.error and "Team notes." in team_notes.content
    catalog = read_catalog(model.calls[0].messages[0].content)
    assert "beta_workspace" not in catalog.shadowed and catalog.shadowed == []
    # The same filter lets bob, on his allow-list, load the workspace's beta; his notes shadow the team's.
    assert bob_plan.find("beta_workspace") is not None and bob_plan.shadowed_skills.keys() == {"notes_workspace"}


@pytest.mark.parametrize("mode", ["sandbox", "local-shell"])
async def test_a_shadowed_workspace_skill_never_names_the_tenants_folder_as_its_files_root(
    tmp_path: Path, bwrap: str, mode: str
) -> None:
    """In a sandbox the tenant's ``skills/notes`` covers the workspace's at ``/workspace/skills/notes``:
    the shadowed workspace skill keeps no files-root there, so nothing runs or counts the tenant's
    files as the team's; its load still reads the team's own bytes."""
    with shared_dir() if mode == "sandbox" else nullcontext(tmp_path) as root:
        await _workspace(root)
        make_skill(root / "alice" / "skills", "notes", description="Mine.", files={"scripts/run.sh": "echo tenant\n"})
        model = _loads("notes_workspace")
        fs = SandboxFilesystem(root, bwrap=bwrap) if mode == "sandbox" else LocalFilesystem(root, shell=True)
        async with fs, Harness(model=model, filesystem=fs, pipeline=PipelineOptions(watch=False)) as agent:
            plan = await agent.prepare(ALICE)
            result = await agent.run("load the team's notes", context=ALICE)
    shadowed, own = plan.find("notes_workspace"), plan.find("notes")
    assert shadowed is not None and own is not None and own.skill.skill_id == "notes_workspace-namespaced"
    if mode == "sandbox":
        assert own.files_root == "/workspace/skills/notes" and shadowed.files_root is None
    else:  # the host shell sees both folders where they are
        assert shadowed.files_root == str(root / "skills" / "notes") != own.files_root
    loaded = _results(result.events)["l0"]
    assert not loaded.error and "Team notes." in loaded.content and "tenant" not in loaded.content

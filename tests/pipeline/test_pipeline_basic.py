"""Merging, files-roots, catalog and staging on a local workspace with a shell."""

from __future__ import annotations

import os
from pathlib import Path

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.tools.skills import load_skill_file
from repositories import MemoryRepository
from tests.support.pipeline import bundle, local_pipeline, write_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")


async def test_user_layer_beats_workspace_beats_market(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "shared", description="workspace version")
    write_skill(ws / "alice" / "skills", "shared", description="alice version")
    market = MemoryRepository([bundle("shared", description="market version"), bundle("tool")], name="acme")
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, repositories=[market]) as pipeline:
        alice = await pipeline.prepare(ALICE)
        bob = await pipeline.prepare(BOB)
    assert alice.skills["shared_workspace-namespaced"].skill.description == "alice version"
    assert bob.skills["shared_workspace"].skill.description == "workspace version"
    assert "alice version" not in bob.catalog and "alice version" in alice.catalog
    assert alice.skills["tool_acme"].files_root == str(ws / ".skills-cache" / "acme" / "tool")
    assert alice.skills["shared_workspace-namespaced"].files_root == str(ws / "alice" / "skills" / "shared")
    assert {s.loser.skill.layer.value for s in alice.shadowed} == {"market", "workspace"}
    staged = ws / ".skills-cache" / "acme" / "tool" / "scripts" / "run.sh"
    assert staged.read_text() == "#!/bin/sh\necho market-tool\n"
    assert os.stat(staged).st_mode & 0o111


async def test_second_stage_writes_nothing(tmp_path: Path) -> None:
    market = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, market) as pipeline:
        first = await pipeline.prepare(ALICE)
        second = await pipeline.prepare(ALICE)
    assert first.staged is not None and first.staged.written == 2
    assert second.staged is not None and second.staged.written == 0 and second.staged.unchanged == 2


async def test_load_tool_and_shell_run_staged_script(tmp_path: Path) -> None:
    market = MemoryRepository([bundle("tool")], name="acme")
    async with local_pipeline(tmp_path, market) as pipeline:
        plan = await pipeline.prepare(ALICE)
        text = await load_skill_file(plan, "tool")
        assert text.startswith("---\nname: tool")
        root = plan.skills["tool_acme"].files_root
        result = await plan.filesystem.run(f"{root}/scripts/run.sh")
    assert result.stdout.strip() == "market-tool"

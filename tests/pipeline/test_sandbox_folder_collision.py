"""In a sandbox the user's skill folders cover the workspace's by folder name; a workspace skill
whose folder is covered that way (under a different skill name) gets no files-root."""

from __future__ import annotations

from filesystems import SandboxFilesystem
from harness import RuntimeContext, SkillPipeline
from tests.support.pipeline import shared_dir, write_skill


async def test_a_covered_workspace_folder_loses_its_files_root_with_a_diagnostic(bwrap: str) -> None:
    with shared_dir() as ws:
        write_skill(ws / "skills", "tools", description="the workspace's tools")
        folder = write_skill(ws / "alice" / "skills", "tools", description="alice's helpers")
        (folder / "SKILL.md").write_text("---\nname: helpers\ndescription: alice's helpers\n---\nx\n")
        async with SandboxFilesystem(ws, bwrap=bwrap) as fs, SkillPipeline(filesystem=fs) as pipeline:
            alice = await pipeline.prepare(RuntimeContext(user_id="alice"))
            bob = await pipeline.prepare(RuntimeContext(user_id="bob"))
    assert alice.skills["helpers_workspace-namespaced"].files_root == "/workspace/skills/tools"
    assert alice.skills["tools_workspace"].files_root is None
    assert any(d.code == "files-root-hidden" for d in alice.diagnostics)
    assert bob.skills["tools_workspace"].files_root == "/workspace/skills/tools"

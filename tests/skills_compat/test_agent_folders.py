"""Skills kept where other agents keep them (``.agents/skills``, ``.claude/skills``) are found in
the workspace and in a user's area, in a configurable order, with shadowing reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, SandboxFilesystem
from harness.agent import Harness
from harness.config import load_config
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from tests.skills_compat.layouts import public_skill
from tests.support.polling import eventually
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")


async def _plan(ws: Path, **options: object) -> TurnPlan:
    async with SkillPipeline(filesystem=LocalFilesystem(ws, shell=True), watch=False, **options) as pipeline:  # type: ignore[arg-type]
        return await pipeline.prepare(ALICE)


def _shadowings(plan: TurnPlan) -> list[tuple[str, str]]:
    return [(s.winner.skill.location, s.loser.skill.location) for s in plan.shadowed]


async def test_agents_and_claude_folders_of_the_workspace_are_discovered(tmp_path: Path) -> None:
    public_skill(tmp_path / ".agents" / "skills", "report")
    make_skill(tmp_path / ".claude" / "skills" / "group", "review")
    plan = await _plan(tmp_path)
    by_name = {s.skill.name: s for s in plan.skills.values()}
    assert set(by_name) == {"report", "review"}
    assert by_name["report"].files_root == str(tmp_path / ".agents" / "skills" / "report")
    assert by_name["review"].files_root == str(tmp_path / ".claude" / "skills" / "group" / "review")


async def test_skills_folder_wins_over_agent_folders_and_the_shadowing_is_reported(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "report", description="the harness's own")
    make_skill(tmp_path / ".agents" / "skills", "report", description="from .agents")
    make_skill(tmp_path / ".claude" / "skills", "report", description="from .claude")
    plan = await _plan(tmp_path)
    assert [s.skill.description for s in plan.skills.values()] == ["the harness's own"]
    shadowed = [d.message for d in plan.diagnostics if d.code == "shadowed"]
    assert len(shadowed) == 2 and all("skills/report" in m for m in shadowed)
    assert any(".claude/skills/report" in m for m in shadowed) and any(".agents/skills/report" in m for m in shadowed)


async def test_skill_dirs_order_decides_the_winner(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "report", description="the harness's own")
    make_skill(tmp_path / ".claude" / "skills", "report", description="from .claude")
    plan = await _plan(tmp_path, skill_dirs=[".claude/skills", "skills"])
    assert [s.skill.description for s in plan.skills.values()] == ["from .claude"]


async def test_folders_left_out_of_skill_dirs_are_not_read(tmp_path: Path) -> None:
    make_skill(tmp_path / ".claude" / "skills", "review")
    plan = await _plan(tmp_path, skill_dirs=["skills"])
    assert plan.skills == {}


def test_skill_dirs_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="skill_dirs"):
        SkillPipeline(filesystem=LocalFilesystem(tmp_path, shell=True), skill_dirs=["../elsewhere"])


# Folders ``skill_dirs`` refuses, the same through the API and through harness.yaml.
BAD_SKILL_DIRS = [
    "../elsewhere",
    "/srv/skills",
    "team/../../x",
    "a//b",
    "./skills",
    "",
    ".harness/skills",
    ".skills-cache",
]


@pytest.mark.parametrize("folder", BAD_SKILL_DIRS)
def test_the_api_refuses_a_bad_skill_dir_naming_it(tmp_path: Path, folder: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"skill_dirs: {folder!r}")):
        SkillPipeline(filesystem=LocalFilesystem(tmp_path, shell=True), skill_dirs=["skills", folder])


@pytest.mark.parametrize("folder", BAD_SKILL_DIRS)
def test_harness_yaml_refuses_a_bad_skill_dir_naming_it(tmp_path: Path, folder: str) -> None:
    (tmp_path / "harness.yaml").write_text(f"skill_dirs: [skills, {json.dumps(folder)}]\n")
    with pytest.raises(ConfigError, match=re.escape(f"harness.yaml: skill_dirs: {folder!r}")):
        load_config(tmp_path / "harness.yaml")


@pytest.mark.parametrize("dirs", [[], ["skills", "skills/"]])
def test_skill_dirs_must_name_folders_once_through_either_door(tmp_path: Path, dirs: list[str]) -> None:
    with pytest.raises(ValueError, match="at least one folder, each once"):
        SkillPipeline(filesystem=LocalFilesystem(tmp_path, shell=True), skill_dirs=dirs)
    (tmp_path / "harness.yaml").write_text(f"skill_dirs: {json.dumps(dirs)}\n")
    with pytest.raises(ConfigError, match="at least one folder, each once"):
        load_config(tmp_path / "harness.yaml")


def test_skill_dirs_drop_a_trailing_slash(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("skill_dirs: [skills/, .agents/skills/]\n")
    assert load_config(tmp_path / "harness.yaml").skill_dirs == ("skills", ".agents/skills")
    pipeline = SkillPipeline(filesystem=LocalFilesystem(tmp_path, shell=True), skill_dirs=["skills/"])
    assert pipeline.skill_dirs == ("skills",)


async def test_a_users_agent_folder_is_discovered_and_wins_over_the_workspace(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "report", description="workspace")
    make_skill(tmp_path / "alice" / ".agents" / "skills", "report", description="alice's own")
    plan = await _plan(tmp_path)
    (skill,) = plan.skills.values()
    assert skill.skill.description == "alice's own" and skill.skill.layer.value == "user"
    assert skill.files_root == str(tmp_path / "alice" / ".agents" / "skills" / "report")
    assert any(d.code == "shadowed" for d in plan.diagnostics)


async def test_a_later_global_folder_wins_over_an_earlier_one(tmp_path: Path) -> None:
    first, second = tmp_path / "harness-skills", tmp_path / "agents-skills"
    make_skill(first, "report", description="first")
    make_skill(first, "only-first")
    make_skill(second, "report", description="second")
    plan = await _plan(tmp_path / "ws", global_skills_dir=[first, second])
    by_name = {s.skill.name: s.skill for s in plan.skills.values()}
    assert by_name["report"].description == "second" and by_name["report"].source == "global_2"
    assert by_name["only-first"].source == "global"
    assert any(d.code == "shadowed" and "report" in d.message for d in plan.diagnostics)


async def test_a_missing_global_folder_in_the_list_is_a_warning(tmp_path: Path) -> None:
    make_skill(tmp_path / "present", "report")
    plan = await _plan(tmp_path / "ws", global_skills_dir=[tmp_path / "absent", tmp_path / "present"])
    assert [s.skill.name for s in plan.skills.values()] == ["report"]
    assert [d.code for d in plan.diagnostics if d.severity == "warning"] == ["global-dir-missing"]


async def test_a_skill_added_to_an_agent_folder_shows_on_a_later_turn(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    async with SkillPipeline(filesystem=LocalFilesystem(tmp_path, shell=True)) as pipeline:
        assert (await pipeline.prepare(ALICE)).skills == {}
        make_skill(tmp_path / ".claude" / "skills", "review")
        make_skill(tmp_path / "alice" / ".agents" / "skills", "mine")

        async def names() -> set[str]:
            return {s.skill.name for s in (await pipeline.prepare(ALICE)).skills.values()}

        await eventually(lambda: names(), lambda found: found == {"review", "mine"})


async def test_sandbox_hides_the_files_root_of_a_workspace_agent_folder(bwrap: str, sandbox_dir: Path) -> None:
    public_skill(sandbox_dir / ".agents" / "skills", "report")
    async with SkillPipeline(filesystem=SandboxFilesystem(sandbox_dir, bwrap=bwrap), watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    (skill,) = plan.skills.values()
    assert skill.files_root is None
    hidden = [d.message for d in plan.diagnostics if d.code == "files-root-hidden"]
    assert len(hidden) == 1 and ".agents/skills" in hidden[0]


async def test_sandbox_shows_a_users_agent_folder_and_its_scripts_run(bwrap: str, sandbox_dir: Path) -> None:
    public_skill(sandbox_dir / "alice" / ".agents" / "skills", "report")
    async with SkillPipeline(filesystem=SandboxFilesystem(sandbox_dir, bwrap=bwrap), watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    (skill,) = plan.skills.values()
    assert skill.files_root == "/workspace/.agents/skills/report"
    result = await plan.filesystem.run(f"cd {skill.files_root} && python scripts/report.py")
    assert result.stdout == "report from report.py 3\n", result.stderr


async def test_harness_yaml_skill_dirs_and_global_list_reach_the_pipeline(tmp_path: Path) -> None:
    make_skill(tmp_path / "one", "report", description="first global")
    make_skill(tmp_path / "two", "report", description="second global")
    make_skill(tmp_path / "ws" / ".claude" / "skills", "review")
    (tmp_path / "harness.yaml").write_text(
        "workspace: ws\nglobal_skills_dir: [one, two]\nskill_dirs: [skills]\nfilesystem: local-shell\n"
    )
    async with Harness.from_config(tmp_path / "harness.yaml", watch=False) as agent:
        plan = await agent.pipeline.prepare(ALICE, stage=False)
    assert [s.skill.description for s in plan.skills.values()] == ["second global"]


def test_harness_yaml_refuses_skill_dirs_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("skill_dirs: [../elsewhere]\n")
    with pytest.raises(ConfigError, match="skill_dirs"):
        load_config(tmp_path / "harness.yaml")

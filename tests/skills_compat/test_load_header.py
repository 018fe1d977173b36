"""Every way a skill's text reaches a model starts with the same header — the skill's folder as
the shell sees it and how to run its commands, or plainly that this mode has no shell — and
serves the text with the spellings of that folder resolved."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from mcp import Client

from filesystems import LocalFilesystem
from harness import Harness, RuntimeContext
from harness.adapters import SkillBridge
from harness.mcp import SkillServer
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from harness.pipeline.plan import ResolvedSkill
from harness.tools.skills import skill_tools
from tests.skills_compat.runnable import SHAPES, read_load_result, write_shape

ALICE = RuntimeContext(user_id="alice", session_id="header")
SKILL_ID = "stamp-three_workspace"


def _workspace(root: Path) -> Path:
    write_shape(root / "skills", SHAPES["stamp-three"])
    forked = write_shape(root / "skills", dataclasses.replace(SHAPES["stamp-three"], name="stamp-fork"))
    text = (forked / "SKILL.md").read_text().replace("name: stamp-three\n", "name: stamp-fork\ncontext: fork\n")
    (forked / "SKILL.md").write_text(text)
    return root


def _resolved_commands(text: str, folder: str) -> None:
    served = read_load_result(text)
    assert served.folder == folder
    assert [c.split()[1] for c in served.commands] == [f"{folder}/scripts/stamp.py"] * 3


async def test_the_load_tool_names_the_folder_and_resolves_the_placeholders(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="l", name=LOAD_TOOL, arguments={"skillId": "stamp-three"})]), "ok"]
    )
    async with Harness(model=model, workspace=ws) as agent:
        await agent.run("stamp", context=ALICE)
    loaded = model.calls[1].messages[-1].content
    assert read_load_result(loaded).skill_id == SKILL_ID
    assert f'{SHELL_TOOL}(command="<command>", skill="{SKILL_ID}")' in loaded and "$OUTPUT_DIR" in loaded
    _resolved_commands(loaded, f"{ws}/skills/stamp-three")


@pytest.mark.parametrize("how", ["command", "agent.skill"])
async def test_an_explicit_invocation_carries_the_header(tmp_path: Path, how: str) -> None:
    ws = _workspace(tmp_path)
    model = ScriptedModel(["ok"])
    async with Harness(model=model, workspace=ws) as agent:
        if how == "command":
            await agent.run("/skill:stamp-three now", context=ALICE)
        else:
            await agent.skill("stamp-three", "now", context=ALICE)
    user = model.calls[0].messages[-1].content
    assert user.startswith(f'<skill name="stamp-three" location="{ws}/skills/stamp-three">\n<skill-folder ')
    _resolved_commands(user, f"{ws}/skills/stamp-three")


async def test_a_forked_skill_hands_the_header_to_its_subagent(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    model = ScriptedModel(["forked answer"])
    async with Harness(model=model, workspace=ws) as agent:
        result = await agent.run("/skill:stamp-fork", context=ALICE)
    assert result.reply == "forked answer"
    task = model.calls[0].messages[-1].content
    assert read_load_result(task).skill_id == "stamp-fork_workspace"
    _resolved_commands(task, f"{ws}/skills/stamp-fork")


async def test_without_a_shell_the_header_says_so_and_nothing_is_resolved(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    async with Harness(model=ScriptedModel([]), filesystem=LocalFilesystem(ws)) as agent:
        plan = await agent.prepare(ALICE)
        load = {t.name: t for t in skill_tools(plan)}[LOAD_TOOL]
        text = await load.call({"skillId": "stamp-three"})
    assert text.startswith(f"Skill {SKILL_ID}: this mode has no shell, so its commands cannot be run here")
    assert "${CLAUDE_SKILL_DIR}/scripts/stamp.py" in text and "<skill-folder" not in text


@pytest.mark.parametrize("shell", [True, False])
async def test_the_adapter_bridge_serves_the_header_of_what_it_offers(tmp_path: Path, shell: bool) -> None:
    ws = _workspace(tmp_path)
    async with Harness(model=ScriptedModel([]), workspace=ws) as agent:
        turn = await SkillBridge(agent, shell=shell).turn(ALICE)
        text = await turn.call(LOAD_TOOL, {"skillId": "stamp-three"})
    assert (SHELL_TOOL in turn.tool_names) is shell
    if shell:
        _resolved_commands(text, f"{ws}/skills/stamp-three")
    else:
        assert "this mode has no shell" in text


@pytest.mark.parametrize("allow_shell", [True, False])
async def test_mcp_load_skill_and_prompts_carry_the_header(tmp_path: Path, allow_shell: bool) -> None:
    ws = _workspace(tmp_path)
    async with Harness(model=ScriptedModel([]), workspace=ws) as agent:
        server = SkillServer(agent.pipeline, shell=agent.tools_for if allow_shell else None)
        server.bind_user("alice")
        async with Client(server.server, cache=None) as client:
            loaded = (await client.call_tool("load_skill", {"name": "stamp-three"})).content[0].text  # type: ignore[union-attr]
            prompt = (await client.get_prompt("stamp-three", {"arguments": ""})).messages[0].content.text  # type: ignore[union-attr]
    for text in (loaded, prompt):
        if allow_shell:
            _resolved_commands(text, f"{ws}/skills/stamp-three")
        else:
            assert "this mode has no shell" in text and "{baseDir}/scripts/stamp.py" in text


async def test_a_command_of_a_skill_gets_its_environment_first_and_its_check_before_it_runs(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    env = tmp_path / "envs" / "stamp"
    (env / "bin").mkdir(parents=True)
    (env / "envmod.py").write_text("WHERE = 'from the environment'\n")
    (env / "bin" / "envtool").write_text(f"#!{sys.executable}\nprint('envtool ran')\n")
    (env / "bin" / "envtool").chmod(0o755)
    checked: list[str] = []

    async def before_run(resolved: ResolvedSkill) -> None:
        checked.append(resolved.skill.skill_id)

    async with Harness(model=ScriptedModel([]), workspace=ws) as agent:
        plan = await agent.prepare(ALICE)
        plan.skills[SKILL_ID] = dataclasses.replace(plan.skills[SKILL_ID], environment=str(env))
        plan.before_run = before_run
        shell = {t.name: t for t in skill_tools(plan)}[SHELL_TOOL]
        named = await shell.call(
            {
                "command": 'python -c "import envmod; print(envmod.WHERE)"; envtool; echo "$PYTHONPATH"',
                "skill": "stamp-three",
            }
        )
        root = plan.skills[SKILL_ID].files_root
        referenced = await shell.call({"command": f"envtool && ls {root}/scripts"})
        plain = await shell.call({"command": "envtool"})
    folder = f"{ws}/skills/stamp-three"
    assert named == f"exit code: 0\nstdout:\nfrom the environment\nenvtool ran\n{folder}:{env}"
    assert referenced == "exit code: 0\nstdout:\nenvtool ran\nstamp.py"
    assert plain.startswith("exit code: 127")  # a command of no skill gets no skill's environment
    assert checked == [SKILL_ID, SKILL_ID]

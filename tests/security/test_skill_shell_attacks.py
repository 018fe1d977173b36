"""A hostile model uses the shell tool's ``skill=``: other tenants' and filtered skills, ``cwd``
escapes out of a skill's folder, and writes into the skill folder or the staged cache. Each is
refused before anything runs, or (writes in the sandbox) fails on the read-only folder, and
leaves no trace."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline.catalog import SHELL_TOOL
from harness.skills.skill import Skill
from repositories import MemoryRepository
from tests.security.attacker import assert_refused
from tests.support.filesystems import build_filesystem
from tests.support.skills import make_bundle, make_skill

ALICE = RuntimeContext(user_id="alice", session_id="skill-shell")

#: ``skill=`` values naming what alice's turn does not serve (another tenant's, a hidden one
#: she did not invoke, one her visibility filter drops) or no skill at all.
FOREIGN_SKILLS = (
    "bobsecret",
    "bobsecret_workspace-namespaced",
    "hidden",
    "hidden_workspace",
    "canary",
    "canary_workspace",
    "../bob/skills/bobsecret",
    "{ws}/bob/skills/bobsecret",
    ".skills-cache/acme/tool",
    "tool\x00",
    "TOOL",
)

#: ``cwd`` values that climb out of the skill's folder or name another place.
ESCAPING_CWDS = ("..", "../..", "../../bob", "scripts/../../..", "/etc", "{ws}/bob", "/workspace/bob", "~", "\x00")


SCRIPT = "#!/bin/sh\necho ran\n"
TOOL = make_bundle("tool", files={"scripts/run.sh": (SCRIPT, 0o755)})


class _DropCanary:
    async def apply(self, skills: list[Skill], context: RuntimeContext) -> list[Skill]:
        return [s for s in skills if s.name != "canary"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(params=["local-shell", "sandbox"])
async def scene(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, Path, AbstractFilesystem]]:
    async with build_filesystem(request, request.param, tmp_path) as built:
        assert built.host is not None
        yield request.param, _populated(built.host), built.fs


def _populated(root: Path) -> Path:
    """``root`` with the workspace's skills, bob's own skill and alice's area."""
    files = {"scripts/run.sh": SCRIPT}
    make_skill(root / "skills", "local-tool", files=files)
    make_skill(root / "skills", "hidden", extra="disable-model-invocation: true\n", files=files)
    make_skill(root / "skills", "canary", files=files)
    make_skill(root / "bob" / "skills", "bobsecret", files=files)
    (root / "alice").mkdir(parents=True)
    os.chmod(root / "alice", 0o777)
    return root


def _attack(calls: list[dict[str, object]]) -> ScriptedModel:
    tool_calls = [ToolCall(id=f"a{i}", name=SHELL_TOOL, arguments=args) for i, args in enumerate(calls)]
    return ScriptedModel([Message.assistant("", tool_calls), "done"])


async def _run(fs: AbstractFilesystem, model: ScriptedModel) -> list[ToolReturned]:
    market = MemoryRepository([TOOL], name="acme")
    async with Harness(
        model=model, filesystem=fs, repositories=[market], pipeline=PipelineOptions(visibility=_DropCanary())
    ) as agent:
        result = await agent.run("attack", context=ALICE)
    return [e for e in result.events if isinstance(e, ToolReturned)]


async def test_skill_names_outside_the_turn_are_not_found_and_nothing_runs(
    scene: tuple[str, Path, AbstractFilesystem],
) -> None:
    _, root, fs = scene
    calls: list[dict[str, object]] = [
        {"command": f"touch {root}/alice/pwned-{i}", "skill": name.format(ws=root)}
        for i, name in enumerate(FOREIGN_SKILLS)
    ]
    results = await _run(fs, _attack(calls))
    assert_refused(results)
    assert all(r.error_type == "SkillNotFound" for r in results), [r.content for r in results]
    assert all("available: " in r.content and "bobsecret" not in r.content.split("available: ")[1] for r in results)
    assert not list(root.rglob("pwned-*"))


async def test_cwd_cannot_climb_out_of_the_skill_folder(scene: tuple[str, Path, AbstractFilesystem]) -> None:
    _, root, fs = scene
    calls: list[dict[str, object]] = [
        {"command": f"touch {root}/alice/escaped-{i} escaped-{i}", "skill": skill, "cwd": cwd.format(ws=root)}
        for i, cwd in enumerate(ESCAPING_CWDS)
        for skill in ("tool", "local-tool")
    ]
    results = await _run(fs, _attack(calls))
    assert_refused(results)
    assert all(r.error_type in ("PathEscapeError", "PermissionError") for r in results), [r.content for r in results]
    assert not list(root.rglob("escaped-*"))


async def test_the_skill_folder_and_the_cache_stay_unwritable_in_the_sandbox(
    scene: tuple[str, Path, AbstractFilesystem],
) -> None:
    mode, root, fs = scene
    if mode != "sandbox":
        pytest.skip("local-shell is the trusted mode: its host shell can write what the harness can")
    writes = [
        "echo x > planted.txt",
        'echo x > "$SKILL_DIR/scripts/run.sh"',
        "mkdir __pycache__",
        'chmod 777 "$CLAUDE_SKILL_DIR"',
        "ln -s /etc/passwd passwd",
    ]
    calls: list[dict[str, object]] = [{"command": c, "skill": s} for c in writes for s in ("tool", "local-tool")]
    calls.append({"command": 'echo kept > "$OUTPUT_DIR/allowed.txt"', "skill": "tool"})
    shared = _tree(root / "skills")
    results = await _run(fs, _attack(calls))
    attempts, allowed = results[:-1], results[-1]
    for result in attempts:
        assert not result.content.startswith("exit code: 0") and "Read-only file system" in result.content, (
            result.content
        )
    assert allowed.content == "exit code: 0"
    assert (root / "alice" / "allowed.txt").read_text() == "kept\n"
    assert _tree(root / "skills") == shared
    assert _tree(root / ".skills-cache" / "acme" / "tool") == {
        "SKILL.md": TOOL.skill_md,
        "scripts/run.sh": SCRIPT.encode(),
    }

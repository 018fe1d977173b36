"""Arguments of an explicitly invoked skill reach the model exactly as the user typed them.

A skill's body has placeholders of two kinds: its arguments (``$ARGUMENTS``, ``$0``, named
arguments) and the spellings of its own folder (``${CLAUDE_SKILL_DIR}``, ``{baseDir}``,
``/mnt/skills/public/<name>`` ...). Both are resolved in one pass over the body alone, so an
argument that itself spells a placeholder stays literal: through ``/skill:`` in ``agent.run``,
through ``agent.skill`` and through ``prompts/get`` of ``harness mcp serve`` (a real subprocess
driven by the MCP SDK's client), in every filesystem mode — the modes with a shell resolve the
folder spellings, the others leave them alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.models import ScriptedModel
from harness.skills.placeholders import HOSTED_ROOTS, SKILL_DIR_PLACEHOLDERS
from tests.support.filesystems import MODES, build_filesystem
from tests.support.mcp import stdio_client
from tests.support.skills import make_skill, skill_md

ALICE = RuntimeContext(user_id="alice", session_id="placeholders")


def spellings(name: str) -> tuple[str, ...]:
    """Every placeholder spelling the harness resolves anywhere, as a user might type it (the
    hosted folders spelled for the skill ``name``)."""
    return (
        *SKILL_DIR_PLACEHOLDERS,
        *(f"{root}/{name}/x.py" for root in HOSTED_ROOTS),
        "$ARGUMENTS",
        "$ARGUMENTS[0]",
        "$0",
        "$1",
        "$target",
        "${CLAUDE_SESSION_ID}",
    )


def hostile(name: str) -> str:
    """All of :func:`spellings` as one argument text."""
    return " ".join(spellings(name))


#: A body using its folder in several spellings and the arguments once.
BODY = "Run ${CLAUDE_SKILL_DIR}/run.py from {baseDir} on: $ARGUMENTS :end\n"
#: A body with no argument placeholder: the arguments are appended after it.
PLAIN = "Run $SKILL_DIR/run.py.\n"
#: A body taking its one named argument.
NAMED = "Target: $target :end\n"


def _skills() -> dict[str, str]:
    return {
        "echo": skill_md("echo", body=BODY),
        "plain": skill_md("plain", body=PLAIN),
        "named": skill_md("named", extra="arguments: [target]\n", body=NAMED),
    }


@pytest.fixture(params=MODES)
async def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AbstractFilesystem]:
    """A workspace filesystem in each mode holding the three skills."""
    async with build_filesystem(request, request.param, tmp_path) as made:
        async with made.fs as fs:
            for name, text in _skills().items():
                await fs.write_text(f"skills/{name}/SKILL.md", text)
            yield fs


def _body_resolved(text: str, fs: AbstractFilesystem, name: str) -> None:
    """The body's own folder placeholders are resolved where the mode has a shell."""
    assert "${CLAUDE_SKILL_DIR}/run.py" not in text  # always filled in (folder or load tool)
    if fs.has_shell:
        assert f"/skills/{name}/run.py" in text
        body = text.split(hostile(name))[0]
        assert "{baseDir}" not in body and "$SKILL_DIR/run.py" not in body


async def _sent(fs: AbstractFilesystem, *messages: str, skill: tuple[str, str] | None = None) -> list[str]:
    """The user text the model got for each of ``messages`` (``agent.run``), or for
    ``agent.skill(*skill)``."""
    model = ScriptedModel(["done"] * (len(messages) or 1))
    async with Harness(model=model, filesystem=fs, pipeline=PipelineOptions(watch=False)) as agent:
        for message in messages:
            await agent.run(message, context=RuntimeContext(user_id="alice", session_id=f"s{len(model.calls)}"))
        if skill is not None:
            await agent.skill(*skill, context=ALICE)
    return [call.messages[-1].content for call in model.calls]


async def test_a_skill_command_passes_placeholder_spellings_in_its_arguments_verbatim(
    workspace: AbstractFilesystem,
) -> None:
    [text] = await _sent(workspace, f"/skill:echo {hostile('echo')}")
    assert f"on: {hostile('echo')} :end" in text
    _body_resolved(text, workspace, "echo")


async def test_agent_skill_passes_placeholder_spellings_in_its_instructions_verbatim(
    workspace: AbstractFilesystem,
) -> None:
    [text] = await _sent(workspace, skill=("echo", hostile("echo")))
    assert f"on: {hostile('echo')} :end" in text
    _body_resolved(text, workspace, "echo")


async def test_appended_arguments_stay_verbatim(workspace: AbstractFilesystem) -> None:
    [text] = await _sent(workspace, f"/skill:plain {hostile('plain')}")
    assert f"ARGUMENTS: {hostile('plain')}\n</skill>" in text
    _body_resolved(text, workspace, "plain")


async def test_a_named_argument_spelling_a_placeholder_stays_verbatim(workspace: AbstractFilesystem) -> None:
    texts = await _sent(workspace, *(f"/skill:named '{spelling}'" for spelling in spellings("named")))
    for spelling, text in zip(spellings("named"), texts, strict=True):
        assert f"Target: {spelling} :end" in text


# -- harness mcp serve ---------------------------------------------------------------------------


@pytest.fixture(params=["local", "local-shell", "sandbox"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[str], bool]:
    """A workspace with the skills, and the server's options: a ``harness.yaml`` naming the mode,
    with the shell offered where the mode has one."""
    ws: Path = request.getfixturevalue("sandbox_dir") if request.param == "sandbox" else tmp_path / "ws"
    for name, text in _skills().items():
        make_skill(ws / "skills", name, text=text)
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: {ws}\nfilesystem: {request.param}\n")
    shell = request.param != "local"
    return ws, ["--config", str(config), *(["--allow-shell"] if shell else [])], shell


async def test_mcp_prompt_arguments_spelling_placeholders_arrive_verbatim(
    served: tuple[Path, list[str], bool],
) -> None:
    ws, options, shell = served
    async with stdio_client(ws, "alice", *options) as client:
        free = await client.get_prompt("echo", {"arguments": hostile("echo")})
        appended = await client.get_prompt("plain", {"arguments": hostile("plain")})
        named = [(s, await client.get_prompt("named", {"target": s})) for s in spellings("named")]
    text = free.messages[0].content.text  # type: ignore[union-attr]
    assert f"on: {hostile('echo')} :end" in text
    assert "${CLAUDE_SKILL_DIR}/run.py" not in text
    if shell:
        assert "/skills/echo/run.py" in text and "from {baseDir}" not in text
    assert f"ARGUMENTS: {hostile('plain')}\n</skill>" in appended.messages[0].content.text  # type: ignore[union-attr]
    for spelling, prompt in named:
        assert f"Target: {spelling} :end" in prompt.messages[0].content.text  # type: ignore[union-attr]

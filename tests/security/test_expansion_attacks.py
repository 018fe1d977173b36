"""A skill body that repeats ``$ARGUMENTS`` cannot multiply one message into megabytes: a
``/skill:`` command and ``prompts/get`` of ``harness mcp serve`` refuse the expansion with a
clear error instead of building it."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from harness import Harness, RuntimeContext
from harness.models import ScriptedModel
from harness.skills import MAX_ARGUMENTS, MAX_EXPANDED, ArgumentsTooLarge
from tests.support.mcp import stdio_client
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="expansion")
REPEATS = 1000
ARGUMENT = "A" * 20_000  # well under MAX_ARGUMENTS; 1,000 copies are 20 MB


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    make_skill(ws / "skills", "echo", description="Repeats its arguments.", body="$ARGUMENTS\n" * REPEATS)
    return ws


async def test_a_command_that_would_expand_past_the_limit_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=_workspace(tmp_path)) as agent:
        with pytest.raises(ArgumentsTooLarge, match=f"more than {MAX_EXPANDED} characters"):
            await agent.run(f"/skill:echo {ARGUMENT}", context=ALICE)
    assert model.calls == []


async def test_arguments_over_the_limit_are_refused(tmp_path: Path) -> None:
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=_workspace(tmp_path)) as agent:
        with pytest.raises(ArgumentsTooLarge, match=f"over the {MAX_ARGUMENTS}-character limit"):
            await agent.skill("echo", "B" * (MAX_ARGUMENTS + 1), context=ALICE)
    assert model.calls == []


async def test_arguments_within_the_limits_still_expand(tmp_path: Path) -> None:
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=_workspace(tmp_path)) as agent:
        await agent.run("/skill:echo short", context=ALICE)
    assert model.calls[0].messages[-1].content.count("short") == REPEATS


async def test_an_mcp_prompt_that_would_expand_past_the_limit_is_an_error(tmp_path: Path) -> None:
    async with stdio_client(_workspace(tmp_path), "alice") as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("echo", {"arguments": ARGUMENT})
        assert f"more than {MAX_EXPANDED} characters" in caught.value.error.message
        prompt = await client.get_prompt("echo", {"arguments": "short"})
    assert prompt.messages[0].content.text.count("short") == REPEATS  # type: ignore[union-attr]

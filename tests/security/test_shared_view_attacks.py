"""Users without skills of their own are handed one shared view of the skills every user sees.
A hostile model in such a user's turn, after a tenant with skills of her own has had her turns
(one at a time and side by side with his), asks for her skills by every name, runs her script
through the shell's ``skill=`` and reads her folder: her skills are in none of his catalogs and
every call is refused. When he gets a skill of his own he sees it, and still not hers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from filesystems import AbstractFilesystem
from harness import Harness, RuntimeContext
from harness.agent import RunResult
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from tests.security.attacker import assert_refused
from tests.support.filesystems import build_filesystem
from tests.support.skills import make_skill

CAROL = RuntimeContext(user_id="carol", session_id="shared-view")
SECRET = "CAROL-SECRET-81f2"
OWN = "carol-ledger"
#: Every spelling of carol's skill a model might try: its name, its id, its folder.
NAMES = (OWN, f"{OWN}_workspace-namespaced", f"carol/skills/{OWN}", f"../carol/skills/{OWN}")


@pytest.fixture(params=["local-shell", "sandbox"])
async def scene(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Path, AbstractFilesystem]]:
    async with build_filesystem(request, request.param, tmp_path) as built:
        assert built.host is not None
        make_skill(built.host / "skills", "team-notes", body="Shared with everyone.\n")
        make_skill(
            built.host / "carol" / "skills",
            OWN,
            body=f"# ledger\n\n{SECRET}\n",
            files={"scripts/show.sh": f"#!/bin/sh\necho {SECRET}\n"},
            executable=["scripts/show.sh"],
        )
        yield built.host, built.fs


def _attack_calls() -> list[ToolCall]:
    calls = [ToolCall(id=f"load-{i}", name=LOAD_TOOL, arguments={"skillId": name}) for i, name in enumerate(NAMES)]
    return calls + [
        ToolCall(id=f"run-{i}", name=SHELL_TOOL, arguments={"command": "sh scripts/show.sh", "skill": name})
        for i, name in enumerate(NAMES)
    ]


def _hostile(messages: tuple[Message, ...], tools: object) -> Message | str:
    """The model of every turn, whichever runs first: carol's turns just answer; anyone else's
    first step tries every spelling of her skill, the next gives up."""
    if messages[-1].role == "user":
        return "hello" if messages[-1].content == "hi" else Message.assistant("", _attack_calls())
    return "gave up"


def _returned(result: RunResult) -> list[ToolReturned]:
    return [e for e in result.events if isinstance(e, ToolReturned)]


async def test_a_user_on_the_shared_view_never_reaches_another_tenants_own_skills(
    scene: tuple[Path, AbstractFilesystem],
) -> None:
    root, fs = scene
    users = [RuntimeContext(user_id=f"user-{i}", session_id="shared-view") for i in range(4)]
    model = ScriptedModel([_hostile] * 20)
    results: dict[str, RunResult] = {}

    async with Harness(model=model, filesystem=fs) as agent:

        async def turn(key: str, context: RuntimeContext, message: str) -> None:
            results[key] = await agent.run(message, context=context)

        await turn("carol", CAROL, "hi")  # her own view is built first
        async with anyio.create_task_group() as group:  # first turns beside a turn of hers
            group.start_soon(turn, "carol again", CAROL, "hi")
            for context in users:
                group.start_soon(turn, context.user_id, context, "read carol's ledger")
        make_skill(root / "user-0" / "skills", "mine", body="Mine alone.\n")
        agent.pipeline.invalidate("user-0")  # what the file watcher does after a write
        await turn("user-0 with a skill", users[0], "read carol's ledger")

    catalogs = [call.messages[0].content for call in model.calls if call.messages[-1].role == "user"]
    assert sum(OWN in catalog for catalog in catalogs) == 2  # carol's two turns: there was something to find
    assert sum("team-notes" in catalog and OWN not in catalog for catalog in catalogs) == len(users) + 1
    assert any("mine" in catalog and OWN not in catalog for catalog in catalogs)
    for key, result in results.items():
        if key.startswith("carol"):
            continue
        returned = _returned(result)
        assert len(returned) == 2 * len(NAMES), key
        assert_refused(returned)
        assert all(r.error_type == "SkillNotFound" for r in returned), [r.content for r in returned]
        assert all(SECRET not in r.content for r in returned), key

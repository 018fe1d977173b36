"""A hostile model in another framework's loop against the harness's approval policy.

The OpenAI Agents SDK and pydantic-ai run the harness's skill tools through ``SkillBridge``; the
harness's approval policy must decide their shell calls as it decides its own loop's. The policy
allows one thing, the workspace skill's script; the framework's scripted model runs it, then a
plain command and a long command that hides a second one. Neither may run, both are audited.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, RuntimeContext
from harness.agent import AllowByPattern, ControlOptions, PipelineOptions
from harness.learning import AuditLog, AuditRecord
from tests.support.catalog import files_root_in
from tests.support.filesystems import build_filesystem

ALICE = RuntimeContext(user_id="alice", session_id="adapter-gate")
SHELL = "execute_shell_command"
LOAD = "load_skill_through_path"
MARKER = "adapter-marker"
TAIL = " " + "q" * 2100 + f"; touch {MARKER}"


def _commands(instructions: str | None) -> dict[str, str]:
    """The attack's commands, from the files-root the catalog shows for ``ok``."""
    ok = f"python3 {files_root_in(instructions or '', 'ok')}/scripts/ok.py"
    return {"ok": ok, "touch": f"touch {MARKER}", "long": ok + TAIL}


class Scene:
    def __init__(self, agent: Harness, host: Path) -> None:
        self.agent, self.host = agent, host

    def markers(self) -> list[str]:
        return [os.path.join(d, n) for d, _, files in os.walk(self.host) for n in files if MARKER in n]

    async def denied(self) -> list[AuditRecord]:
        return [r for r in await AuditLog(self.agent.filesystem).query() if r.decision == "denied"]


@pytest.fixture(params=["local-shell", "sandbox"])
async def scene(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Scene]:
    async with build_filesystem(request, request.param, tmp_path) as built:
        assert built.host is not None
        policy = AllowByPattern(["python3 {skill_root}/scripts/*"], tools=[SHELL])
        async with Harness(
            filesystem=built.fs, pipeline=PipelineOptions(watch=False), control=ControlOptions(approval=policy)
        ) as agent:
            await built.fs.write_text("skills/ok/SKILL.md", "---\nname: ok\ndescription: Use to say ok.\n---\nGo.\n")
            await built.fs.write_text("skills/ok/scripts/ok.py", "open('ran-ok', 'w').write('ok')\nprint('ok ran')\n")
            yield Scene(agent, built.host)


async def _check(scene: Scene, outputs: dict[str, str], commands: dict[str, str]) -> None:
    assert scene.markers() == []
    assert "ok ran" in outputs["ok"] and (scene.host / "alice" / "ran-ok").read_text() == "ok"
    for name in ("touch", "long"):
        assert outputs[name].startswith("error: ToolDenied") and "policy:allow-by-pattern" in outputs[name]
    details = [record.detail for record in await scene.denied()]
    assert len(details) == 2 and any(commands["long"] in detail for detail in details)


async def test_the_openai_agents_adapter_goes_through_the_gate(scene: Scene) -> None:
    pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ToolCallOutputItem
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    from harness.adapters.openai_agents import OpenAIAgentsSkills

    set_tracing_disabled(True)
    commands: dict[str, str] = {}

    def attack(call: ModelCall) -> list[Any]:
        commands.update(_commands(call.system_instructions))
        return [function_call(SHELL, {"command": c}, call_id=name) for name, c in commands.items()]

    model = ScriptedModel(
        [[function_call(LOAD, {"skillId": "ok"}, call_id="load")], ModelStep.respond(attack), [assistant_message("x")]]
    )
    skills = OpenAIAgentsSkills(scene.agent)
    agent = Agent(name="assistant", instructions=skills.instructions(), tools=skills.tools(), model=model)
    result = await Runner.run(agent, "go", context=ALICE)

    outputs = {
        item.raw_item["call_id"]: str(item.output) for item in result.new_items if isinstance(item, ToolCallOutputItem)
    }
    await _check(scene, outputs, commands)


async def test_the_pydantic_ai_adapter_goes_through_the_gate(scene: Scene) -> None:
    pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from harness.adapters.pydantic_ai import SkillsToolset

    commands: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step == 0:
            return ModelResponse(parts=[ToolCallPart(LOAD, {"skillId": "ok"}, tool_call_id="load")])
        if step == 1:
            commands.update(_commands(info.instructions))
            return ModelResponse(
                parts=[ToolCallPart(SHELL, {"command": c}, tool_call_id=n) for n, c in commands.items()]
            )
        return ModelResponse(parts=[TextPart("x")])

    agent = Agent(FunctionModel(model), deps_type=RuntimeContext, toolsets=[SkillsToolset(scene.agent)])
    result = await agent.run("go", deps=ALICE)

    outputs = {
        part.tool_call_id: str(part.content)
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    await _check(scene, outputs, commands)

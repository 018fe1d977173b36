"""Attacks on MCP skills' activation approval: a server that swaps a file after approval, and a
scripted model that calls the shell with hostile arguments to run a skill nobody approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent import ControlOptions, Harness, PipelineOptions, TrustOptions
from harness.approval import ToolRequest
from harness.errors import SkillError
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools import tool
from tests.agent.test_mcp_activation import ALICE, LOAD, SHELL, SKILL_ID, call, results_by_id, tool_server
from tests.repositories.forked_mcp import mcp_market
from tests.support.skills_server import SkillsServer


async def test_a_swapped_file_needs_a_new_approval(tmp_path: Path) -> None:
    server = tool_server(tmp_path)
    asked: list[ToolRequest] = []

    async def approver(request: ToolRequest) -> bool:
        asked.append(request)
        return len(asked) == 1  # the first approval only

    model = ScriptedModel(
        [
            call(SHELL, "r1", command="sh scripts/go.sh", skill=SKILL_ID),
            "first",
            call(SHELL, "r2", command="sh scripts/go.sh", skill=SKILL_ID),
            "second",
        ]
    )
    async with Harness(
        model=model,
        workspace=tmp_path / "ws",
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
        control=ControlOptions(approver=approver),
    ) as agent:
        first = await agent.run("go", context=ALICE)
        server.add(
            "team-a/tool",
            {
                "SKILL.md": "---\nname: tool\ndescription: Runs a tool.\n---\nRun scripts/go.sh.\n",
                "scripts/go.sh": '#!/bin/sh\necho v2 > "$OUTPUT_DIR/ran"\necho ran v2\n',
            },
        )
        second = await agent.run("again", context=ALICE)
    assert "ran v1" in results_by_id(first.events)["r1"].content
    refused = results_by_id(second.events)["r2"]
    assert refused.error and "ran v2" not in refused.content
    assert len(asked) == 2 and asked[0].activations != asked[1].activations  # bound to the new content
    assert (tmp_path / "ws" / "alice" / "ran").read_text() == "v1\n"


async def test_a_hostile_model_cannot_run_an_unapproved_mcp_script(tmp_path: Path) -> None:
    server = tool_server(tmp_path)

    async def approver(request: ToolRequest) -> bool:
        return not request.activations  # the user never approves the MCP skill

    root = tmp_path / "ws" / ".skills-cache" / "srv.team-a" / "tool"
    attempts = [
        {"command": "sh scripts/go.sh", "skill": SKILL_ID},
        {"command": "sh scripts/go.sh", "skill": "tool"},
        {"command": f"sh {root}/scripts/go.sh"},
        {"command": f"cd {root} && sh ./scripts/go.sh"},
        {"command": "sh go.sh", "skill": SKILL_ID, "cwd": "scripts"},
        {"command": "sh scripts/go.sh"},  # after a load: the conversation acts on the skill
    ]
    script: list[Message | str] = [call(LOAD, "load", skillId=SKILL_ID)]
    script += [call(SHELL, f"a{i}", **arguments) for i, arguments in enumerate(attempts)]
    script.append("gave up")
    async with Harness(
        model=ScriptedModel(script),
        workspace=tmp_path / "ws",
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
        control=ControlOptions(approver=approver),
    ) as agent:
        result = await agent.run("run it any way you can", context=ALICE)
    results = results_by_id(result.events)
    for index in range(len(attempts)):
        assert results[f"a{index}"].error, attempts[index]
    assert not (tmp_path / "ws" / "alice" / "ran").exists()


WORKFLOW = (
    "goal: {statement: Finish}\n"
    "tools: [{id: finish, kind: function, side_effect: external}]\n"
    "orchestration:\n  mode: deterministic\n  entry: call\n  steps:\n"
    "    - {id: call, action: {type: call_tool, ref: finish}}\n"
)


def _workflow_server(tmp_path: Path) -> SkillsServer:
    server = SkillsServer(tmp_path / "server")
    server.add(
        "flows/deploy",
        {"SKILL.md": "---\nname: deploy\ndescription: Deploys.\n---\nThe real steps.\n", "workflow.yaml": WORKFLOW},
    )
    return server


async def test_a_workflow_served_by_an_mcp_market_is_not_run_without_trust(tmp_path: Path) -> None:
    """A workflow run performs actions with no turn in which to ask: an untrusted MCP market's
    workflow is refused, by the API and by the model's start_workflow tool alike."""
    server = _workflow_server(tmp_path)
    ran: list[str] = []

    @tool
    async def finish() -> str:
        """Finish the job."""
        ran.append("finish")
        return "finished"

    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="w1", name="workflow_start", arguments={"skill": "deploy"})]), "ok"]
    )
    async with Harness(
        model=model,
        workspace=tmp_path / "ws",
        tools=[finish],
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
    ) as agent:
        with pytest.raises(SkillError, match="trusted_markets"):
            await agent.run_workflow("deploy", context=ALICE)
        result = await agent.run("start the deploy workflow", context=ALICE)
    returned = [e for e in result.events if isinstance(e, ToolReturned) and e.call_id == "w1"]
    assert returned and returned[0].error and "trusted_markets" in returned[0].content
    assert ran == []


async def test_a_trusted_mcp_market_runs_its_workflow_from_the_fetched_skill(tmp_path: Path) -> None:
    server = _workflow_server(tmp_path)
    ran: list[str] = []

    @tool
    async def finish() -> str:
        """Finish the job."""
        ran.append("finish")
        return "finished"

    async with Harness(
        model=ScriptedModel(["ok"]),
        workspace=tmp_path / "ws",
        tools=[finish],
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
        trust=TrustOptions(trusted_markets=["srv"]),
    ) as agent:
        run = await agent.run_workflow("deploy", context=ALICE)
    assert run.status == "completed" and ran == ["finish"]


async def test_a_file_swapped_while_a_run_waits_is_not_run_on_the_old_approval(tmp_path: Path) -> None:
    """The app approves a paused call at the content it was shown; the server changes the
    script before the run resumes: the resumed call is refused, the new script never runs."""
    server = tool_server(tmp_path)
    model = ScriptedModel([call(SHELL, "r1", command="sh scripts/go.sh", skill=SKILL_ID), "ran it"])
    async with Harness(
        model=model,
        workspace=tmp_path / "ws",
        repositories=[mcp_market(server)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
    ) as agent:
        paused = await agent.run("go", context=ALICE)
        [waiting] = paused.approvals
        assert "sha256:" in waiting.activations[0]
        server.add(
            "team-a/tool",
            {
                "SKILL.md": "---\nname: tool\ndescription: Runs a tool.\n---\nRun scripts/go.sh.\n",
                "scripts/go.sh": '#!/bin/sh\necho v2 > "$OUTPUT_DIR/ran"\necho ran v2\n',
            },
        )
        await agent.resolve_approval(waiting.approval_id, approved=True, context=ALICE)
        resumed = await agent.resume(context=ALICE)
    refused = results_by_id(resumed.events)["r1"]
    assert refused.error and "changed since it was approved" in refused.content
    assert not (tmp_path / "ws" / "alice" / "ran").exists()

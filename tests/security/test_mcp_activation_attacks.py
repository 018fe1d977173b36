"""Attacks on MCP skills' activation approval: a server that swaps a file after approval, a
scripted model that calls the shell with hostile arguments to run a skill nobody approved, and
another tenant's model in the bubblewrap sandbox reaching for a skill one user's turn staged
(every spelling of its folder, a forked subagent, a workflow script, the tools outside a turn)."""

from __future__ import annotations

from pathlib import Path

import pytest

from filesystems import SandboxFilesystem
from harness.agent import ControlOptions, Harness, PipelineOptions, TrustOptions
from harness.approval import ToolRequest
from harness.context import RuntimeContext
from harness.errors import SkillError
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools import tool
from repositories import DirectoryRepository
from tests.agent.test_mcp_activation import ALICE, LOAD, SHELL, SKILL_ID, call, results_by_id, tool_server
from tests.repositories.forked_mcp import mcp_agent, mcp_market
from tests.support.skills_server import SkillsServer


def serve_v2(server: SkillsServer) -> None:
    """The server changes the skill's script: its content, and so its digest, is new."""
    server.add(
        "team-a/tool",
        {
            "SKILL.md": "---\nname: tool\ndescription: Runs a tool.\n---\nRun scripts/go.sh.\n",
            "scripts/go.sh": '#!/bin/sh\necho v2 > "$OUTPUT_DIR/ran"\necho ran v2\n',
        },
    )


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
    async with mcp_agent(server, model, workspace=tmp_path / "ws", approver=approver) as agent:
        first = await agent.run("go", context=ALICE)
        serve_v2(server)
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
    async with mcp_agent(server, ScriptedModel(script), workspace=tmp_path / "ws", approver=approver) as agent:
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
    async with mcp_agent(server, model, workspace=tmp_path / "ws") as agent:
        paused = await agent.run("go", context=ALICE)
        [waiting] = paused.approvals
        assert "sha256:" in waiting.activations[0]
        serve_v2(server)
        await agent.resolve_approval(waiting.approval_id, approved=True, context=ALICE)
        resumed = await agent.resume(context=ALICE)
    refused = results_by_id(resumed.events)["r1"]
    assert refused.error and "changed since it was approved" in refused.content
    assert not (tmp_path / "ws" / "alice" / "ran").exists()


BOB = RuntimeContext(user_id="bob", session_id="s1")
STAGED = ".skills-cache/srv.team-a/tool"
#: Ways for a tenant's shell to reach the staged folder of a skill its user never approved, most
#: of them spellings the gate does not take for that folder (so it does not ask about them).
SPELLINGS = [
    f"cat {STAGED}/scripts/go.sh",
    f"sh {STAGED}/scripts/go.sh",
    "cd .skills-cache/srv.team-a && cd tool && sh scripts/go.sh",
    "cat ../workspace/.skills-cache/srv.team-a/../srv.team-a/tool/scripts/go.sh",
    "cat /workspace/./.skills-cache/srv.team-a//tool/scripts/go.sh",
    "cat /workspace/.skills-cache/*/tool/scripts/*",
    # every folder the shell can see, but the host's system folders, which hold nothing of a user's
    "find / \\( -path /usr -o -path /proc -o -path /sys \\) -prune -o -name go.sh -exec cat {} + 2>/dev/null",
    "cat $(ls -d /workspace/.skills-cache/*/tool)/scripts/go.sh",
    "sh -c \"sh /work\"'space/.skills-cache/srv.'\"team-a/to\"'ol/scripts/go.sh'",
    "a=.skills; b=-cache; sh /workspace/$a$b/srv.team-a/tool/scripts/go.sh",
    "grep -rs v1 /workspace/.skills-cache",
    f"sh /workspace/{STAGED}/scripts/go.sh",  # the files-root itself: the gate asks, bob refuses
]


def _plain_market(tmp_path: Path) -> DirectoryRepository:
    """A market that needs no approval: its staged skill shows the cache is still there."""
    folder = tmp_path / "market" / "plain"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: plain\ndescription: Plain.\n---\nNothing to approve.\n")
    return DirectoryRepository(tmp_path / "market", source="team")


async def test_a_skill_staged_for_one_user_stays_out_of_another_users_sandbox(
    tmp_path: Path, sandbox_dir: Path, bwrap: str
) -> None:
    """Alice approves and runs an MCP skill (staging it); bob's model, in the sandbox shell,
    tries every spelling of its staged folder: nothing reads or runs it. Once bob approves it
    the next call sees it; once the server changes a file it is gone again until bob approves
    the new content."""
    server = tool_server(tmp_path)
    approving = {"alice"}

    async def approver(request: ToolRequest) -> bool:
        return not request.activations or request.context.user_id in approving

    script: list[Message | str] = [call(SHELL, "alice", command="sh scripts/go.sh", skill=SKILL_ID), "done"]
    script += [call(SHELL, f"a{i}", command=command) for i, command in enumerate(SPELLINGS)]
    script += [call(SHELL, "listing", command="ls -R /workspace/.skills-cache"), "gave up"]
    script += [
        call(SHELL, "approve", command="sh scripts/go.sh", skill=SKILL_ID),
        call(SHELL, "seen", command=f"cat {STAGED}/scripts/go.sh"),
        "done",
    ]
    script += [
        call(SHELL, "changed", command=f"cat {STAGED}/scripts/go.sh"),
        call(SHELL, "again", command="sh scripts/go.sh", skill=SKILL_ID),
        call(SHELL, "seen-again", command=f"cat {STAGED}/scripts/go.sh"),
        "done",
    ]
    async with Harness(
        model=ScriptedModel(script),
        filesystem=SandboxFilesystem(sandbox_dir, bwrap=bwrap),
        repositories=[mcp_market(server), _plain_market(tmp_path)],
        pipeline=PipelineOptions(watch=False, market_timeout=120),
        control=ControlOptions(approver=approver),
    ) as agent:
        first = await agent.run("go", context=ALICE)
        attacked = await agent.run("read that skill's script any way you can", context=BOB)
        assert not (sandbox_dir / "bob" / "ran").exists()
        approving.add("bob")
        approved = await agent.run("run it", context=BOB)
        serve_v2(server)
        changed = await agent.run("run it again", context=BOB)
    assert "ran v1" in results_by_id(first.events)["alice"].content
    assert (sandbox_dir / STAGED / "scripts" / "go.sh").is_file()
    results = results_by_id(attacked.events)
    for index, command in enumerate(SPELLINGS):
        assert "v1" not in results[f"a{index}"].content, command
    listing = results["listing"].content
    assert "plain" in listing and "go.sh" not in listing  # the cache is there, without the skill
    after = results_by_id(approved.events)
    assert "ran v1" in after["approve"].content and "echo ran v1" in after["seen"].content
    again = results_by_id(changed.events)
    assert "v2" not in again["changed"].content and "No such file" in again["changed"].content
    assert "ran v2" in again["again"].content and "echo ran v2" in again["seen-again"].content


async def test_the_tools_outside_a_turn_hide_unapproved_staged_skills(
    tmp_path: Path, sandbox_dir: Path, bwrap: str
) -> None:
    """The tools outside a turn (``harness mcp serve``, the framework adapters) use the same
    shell: bob's call through them does not see the folder alice's turn staged."""
    server = tool_server(tmp_path)

    async def approver(request: ToolRequest) -> bool:
        return request.context.user_id == "alice" or not request.activations

    model = ScriptedModel([call(SHELL, "alice", command="sh scripts/go.sh", skill=SKILL_ID), "done"])
    async with mcp_agent(
        server, model, filesystem=SandboxFilesystem(sandbox_dir, bwrap=bwrap), approver=approver
    ) as agent:
        await agent.run("go", context=ALICE)
        plan = await agent.prepare(BOB)
        shell = next(t for t in agent.tools_for(plan) if t.name == SHELL)
        seen = await shell.call({"command": f"cat {STAGED}/scripts/go.sh; ls /workspace/.skills-cache"})
    assert "v1" not in seen and "No such file" in seen


async def test_a_skill_that_moves_during_a_turn_is_hidden_from_that_turn(
    tmp_path: Path, sandbox_dir: Path, bwrap: str
) -> None:
    """Bob approved the skill at v1 and holds a turn's plan (and its shell); while that turn
    runs, the server changes a file and carol's turn restages the folder in place at v2. Bob's
    next command in the same turn does not see v2, which he never approved."""
    server = tool_server(tmp_path)

    async def approver(request: ToolRequest) -> bool:
        return True

    script: list[Message | str] = [
        call(SHELL, "bob", command="sh scripts/go.sh", skill=SKILL_ID),
        "done",
        call(SHELL, "carol", command="sh scripts/go.sh", skill=SKILL_ID),
        "done",
    ]
    async with mcp_agent(
        server, ScriptedModel(script), filesystem=SandboxFilesystem(sandbox_dir, bwrap=bwrap), approver=approver
    ) as agent:
        await agent.run("go", context=BOB)
        plan = await agent.prepare(BOB)
        shell = next(t for t in agent.tools_for(plan) if t.name == SHELL)
        before = await shell.call({"command": f"cat {STAGED}/scripts/go.sh"})
        serve_v2(server)
        carol = await agent.run("go", context=RuntimeContext(user_id="carol", session_id="s1"))
        after = await shell.call({"command": f"cat {STAGED}/scripts/go.sh"})
    assert "ran v2" in results_by_id(carol.events)["carol"].content
    assert "v2" in (sandbox_dir / STAGED / "scripts" / "go.sh").read_text()  # restaged in place
    assert "echo ran v1" in before
    assert "v2" not in after and "No such file" in after


PEEK = f"cat /workspace/{STAGED}/scripts/go.sh > peeked 2>&1; echo done\n"
PEEK_FLOW = """\
name: peek
version: "1"
description: Peek.
goal: {statement: Done.}
tools:
  - {id: peek, kind: script, source: scripts/peek.sh, side_effect: external}
orchestration:
  mode: deterministic
  entry: peek
  steps:
    - {id: peek, action: {type: call_tool, ref: peek}, next: null}
"""


async def test_a_forked_subagent_and_a_workflow_script_do_not_see_it_either(
    tmp_path: Path, sandbox_dir: Path, bwrap: str
) -> None:
    """Bob's ``context: fork`` subagent and the script of bob's own workflow run in bob's
    sandbox too: the folder alice's turn staged is not there."""
    server = tool_server(tmp_path)
    filesystem = SandboxFilesystem(sandbox_dir, bwrap=bwrap)
    await filesystem.write_text(
        "skills/forky/SKILL.md", "---\nname: forky\ndescription: Forked.\ncontext: fork\n---\nGo.\n"
    )
    bob = filesystem.scoped("bob")
    await bob.write_text("skills/peek/SKILL.md", "---\nname: peek\ndescription: Peek.\n---\nA workflow.\n")
    await bob.write_text("skills/peek/workflow.yaml", PEEK_FLOW)
    await bob.write_text("skills/peek/scripts/peek.sh", f"#!/bin/sh\n{PEEK}", mode=0o755)

    async def approver(request: ToolRequest) -> bool:
        return request.context.user_id == "alice" or not request.activations

    model = ScriptedModel(
        [
            call(SHELL, "alice", command="sh scripts/go.sh", skill=SKILL_ID),
            "done",
            call(SHELL, "fork", command=f"cat {STAGED}/scripts/go.sh"),
            "forked",
        ]
    )
    async with mcp_agent(server, model, filesystem=filesystem, approver=approver) as agent:
        await agent.run("go", context=ALICE)
        forked = await agent.run("/skill:forky", context=BOB)
        await agent.run_workflow("peek", context=BOB)
    assert (sandbox_dir / STAGED / "scripts" / "go.sh").is_file()
    seen = results_by_id(forked.events)["fork"].content
    assert "v1" not in seen and "No such file" in seen
    peeked = (sandbox_dir / "bob" / "peeked").read_text()  # the script ran, and found nothing
    assert "v1" not in peeked and "No such file" in peeked

"""The newsletter group example run by the agent: skill turns report through workflow_report
(``agent.run_workflow``), a model drives it with the workflow tools, and a process killed in
the middle of a skill turn is finished by another. The action id reaches Python tools and
scripts."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

from harness import Harness, RuntimeContext
from harness.engine import Outcome, current_action
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools.function import tool_from_function
from tests.agent.stage_model import driver_model, stage_model, step_block
from tests.engine.newsletter import SECOND_DRAFT, TRAJECTORY, install
from tests.support.cli import run_python
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")
DRIVER = str(pathlib.Path(__file__).with_name("newsletter_agent_driver.py"))


def _steps(events: list[Any]) -> list[str]:
    return [e.data["step_id"] for e in events if e.type == "action_proposed"]


async def test_run_workflow_skill_turns_report_through_workflow_report(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    model = stage_model()
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
        assert run.blocked is not None and run.blocked.kind == "confirmation"
        assert (run.current_step, run.domain_state) == ("publish", "approved")
        publish_id = run.blocked.action.id
        run = await agent.continue_workflow("n1", context=ALICE, confirm=publish_id)
        events = await agent.workflow_engine(ALICE).events("n1")
    assert (run.status, run.domain_state) == ("completed", "published")
    assert _steps(events) == TRAJECTORY
    assert run.artifacts["issue"] == f"published/issue-{publish_id}.md"  # the script got HARNESS_ACTION_ID
    assert (tmp_path / "alice" / "published" / f"issue-{publish_id}.md").read_text() == SECOND_DRAFT
    assert [e.data["reason"] for e in events if e.type == "handoff_refused"] == [
        "it produced schema 'draft/v1', but it declares produces 'draft/v2'"
    ]
    qa = [e.data for e in events if e.type == "checks_evaluated"]
    assert [(c["outcome"], c["passed"]) for c in qa] == [("failed", False), ("succeeded", True)]


async def test_workflow_report_is_offered_only_in_a_workflow_step(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    model = stage_model()
    async with Harness(model=model, workspace=tmp_path) as agent:
        await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
        await agent.skill("newsletter-qa", "check this", context=ALICE)
    assert "workflow_report" in model.calls[0].tool_names
    assert "workflow_report" not in model.calls[-1].tool_names


async def test_a_refused_report_is_corrected_within_the_turn(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    undeclared = Message.assistant(
        "",
        [
            ToolCall(
                id="bad",
                name="workflow_report",
                arguments={"status": "succeeded", "state": {"brief": "b", "owner": "x"}},
            )
        ],
    )
    good = Message.assistant(
        "",
        [
            ToolCall(
                id="good",
                name="workflow_report",
                arguments={
                    "status": "succeeded",
                    "state": {"brief": "b", "audience": "a"},
                    "schema_version": "brief/v1",
                },
            )
        ],
    )
    model = ScriptedModel([undeclared, good, "reported"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
    refusal = next(m.content for m in model.calls[1].messages if m.role == "tool" and m.tool_call_id == "bad")
    assert "OutcomeRefused" in refusal and "may write only brief, audience" in refusal and "'owner'" in refusal
    assert run.vars["brief"] == "b" and "owner" not in run.vars
    assert run.handoffs[0].from_step == "intake" and run.handoffs[0].schema_version == "brief/v1"


async def test_a_model_drives_the_group_with_the_workflow_tools(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    model = driver_model("m1")
    async with Harness(model=model, workspace=tmp_path) as agent:
        first = await agent.run("write the 2.0 newsletter", context=ALICE)
        engine = agent.workflow_engine(ALICE)
        run = await engine.inspect("m1")
        assert run.blocked is not None and run.blocked.kind == "confirmation"
        assert run.blocked.action.id not in first.reply
        await engine.resume("m1", confirm=run.blocked.action.id)  # the user confirmed, through the app
        second = await agent.run("publish it now", context=ALICE)
        run = await engine.inspect("m1")
        events = await engine.events("m1")
    assert (run.status, run.domain_state) == ("completed", "published")
    assert _steps(events) == TRAJECTORY
    results = [e for e in second.events if isinstance(e, ToolReturned)]
    assert [r.name for r in results] == ["workflow_status", "workflow_continue", "workflow_continue"]
    assert results[1].content == results[2].content  # the resubmitted outcome changed nothing
    assert [e.type for e in events].count("run_completed") == 1


async def test_python_tools_get_the_action_id_to_stay_idempotent(tmp_path: pathlib.Path) -> None:
    seen: list[str | None] = []

    async def deliver(order: str = "") -> str:
        """Deliver an order (once per workflow action)."""
        action = current_action()
        seen.append(action.action_id if action else None)
        return "delivered"

    workflow = (
        "goal: {statement: Deliver}\nskills: [{id: courier}]\n"
        "tools: [{id: deliver, kind: function, side_effect: external}]\n"
        "orchestration:\n  mode: deterministic\n  entry: call\n  steps:\n"
        "    - {id: call, action: {type: call_tool, ref: deliver}, next: turn}\n"
        "    - {id: turn, action: {type: invoke_skill, ref: courier}, allowed_tools: [deliver]}\n"
    )
    make_skill(tmp_path / "skills", "delivery", files={"workflow.yaml": workflow})
    make_skill(tmp_path / "skills", "courier", body="Deliver the order.\n")
    model = ScriptedModel([Message.assistant("", [ToolCall(id="d", name="deliver", arguments={})]), "done"])
    async with Harness(model=model, workspace=tmp_path, tools=[tool_from_function(deliver)]) as agent:
        run = await agent.run_workflow("delivery", context=ALICE, run_id="d1")
        ids = [
            e.data["action_id"] for e in await agent.workflow_engine(ALICE).events("d1") if e.type == "action_proposed"
        ]
    assert run.status == "completed"
    assert seen == ids and None not in seen
    assert current_action() is None  # only while the action is performed


async def test_continue_workflow_takes_an_operators_retry(tmp_path: pathlib.Path) -> None:
    workflow = (
        "goal: {statement: Collect}\ntools: [{id: collect, kind: script, source: scripts/collect.py, side_effect: read}]\n"
        "orchestration:\n  mode: deterministic\n  entry: collect\n  steps:\n"
        "    - {id: collect, action: {type: call_tool, ref: collect}}\n"
    )
    script = "import pathlib, sys\nflag = pathlib.Path('ready')\nsys.exit(0 if flag.exists() else 3)\n"
    make_skill(
        tmp_path / "skills",
        "collector",
        files={
            "workflow.yaml": workflow,
            "guardrails.yaml": "max_retries_per_action: 0\n",
            "scripts/collect.py": script,
        },
    )
    async with Harness(model=ScriptedModel([]), workspace=tmp_path) as agent:
        run = await agent.run_workflow("collector", context=ALICE, run_id="c1")
        assert run.blocked is not None and run.blocked.kind == "retries"
        (tmp_path / "alice" / "ready").write_text("")
        run = await agent.continue_workflow("c1", context=ALICE, decision="retry", note="input arrived")
    assert run.status == "completed"


def _child(workspace: pathlib.Path, kill: str, driver: str = DRIVER) -> subprocess.CompletedProcess[str]:
    return run_python(driver, str(workspace), kill)


async def test_a_process_killed_in_a_skill_turn_is_resumed_by_another(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    killed = _child(tmp_path, "generate")
    assert killed.returncode == -9, killed.stderr
    seen: list[dict[str, Any]] = []
    async with Harness(model=stage_model(seen.append), workspace=tmp_path) as agent:
        engine = agent.workflow_engine(ALICE)
        crashed = await engine.inspect("n1")
        assert crashed.pending is not None and crashed.current_step == "generate"
        run = await agent.continue_workflow("n1", context=ALICE)
        assert run.blocked is not None
        run = await agent.continue_workflow("n1", context=ALICE, confirm=run.blocked.action.id)
        events = await engine.events("n1")
    assert run.status == "completed"
    assert seen[0]["action_id"] == crashed.pending.id  # the interrupted action, same idempotency key
    assert _steps(events) == TRAJECTORY
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(list((tmp_path / "alice" / "published").iterdir())) == 1


async def test_the_step_turn_is_told_its_contract(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    model = stage_model()
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
    qa = next(c for c in model.calls if '"step": "qa"' in c.messages[-1].content)
    contract = step_block(qa.messages[-1].content)
    assert contract["may_write"] == ["review", "approved"] and contract["produces"] == "review/v1"
    assert (contract["domain_state"], contract["may_move_to"]) == ("drafted", ["approved", "rejected"])
    assert set(contract["reads"]) == {"outline", "draft"} and run.status == "blocked"


async def test_a_resubmitted_skill_outcome_is_a_no_op(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    async with Harness(model=stage_model(), workspace=tmp_path) as agent:
        run = await agent.run_workflow("newsletter", context=ALICE, run_id="n1", inputs={"request": "2.0"})
        engine = agent.workflow_engine(ALICE)
        recorded = [e.data for e in await engine.events("n1") if e.type == "outcome_recorded"][-1]
        fields = {k: v for k, v in recorded.items() if k not in ("action_id", "step_id")}
        again = await agent.continue_workflow("n1", context=ALICE, outcome=Outcome(**fields))
        events = await engine.events("n1")
    assert recorded["step_id"] == "qa" and recorded["schema_version"] == "review/v1"
    assert again == run and events[-1].type == "action_blocked"


async def test_a_process_killed_while_the_model_drives_is_picked_up_by_another(tmp_path: pathlib.Path) -> None:
    install(tmp_path / "skills")
    killed = _child(tmp_path, "6", str(pathlib.Path(__file__).with_name("newsletter_model_driver.py")))
    assert killed.returncode == -9, killed.stderr
    model = driver_model("m1")
    async with Harness(model=model, workspace=tmp_path) as agent:
        engine = agent.workflow_engine(ALICE)
        crashed = await engine.inspect("m1")
        assert crashed.current_step == "qa" and not crashed.done  # the first QA was never reported
        await agent.run("continue the newsletter run", context=ALICE)
        run = await engine.inspect("m1")
        assert run.blocked is not None
        await engine.resume("m1", confirm=run.blocked.action.id)
        await agent.run("publish it now", context=ALICE)
        run = await engine.inspect("m1")
        events = await engine.events("m1")
    assert (run.status, run.domain_state) == ("completed", "published")
    assert _steps(events) == TRAJECTORY
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_shell_commands_of_a_step_turn_get_the_action_id(tmp_path: pathlib.Path) -> None:
    workflow = (
        "goal: {statement: Note the id}\nskills: [{id: noter}]\n"
        "tools: [{id: shell, kind: function, source: execute_shell_command, side_effect: write}]\n"
        "orchestration:\n  mode: deterministic\n  entry: note\n  steps:\n"
        "    - {id: note, action: {type: invoke_skill, ref: noter}, allowed_tools: [shell]}\n"
    )
    make_skill(tmp_path / "skills", "noting", files={"workflow.yaml": workflow})
    make_skill(tmp_path / "skills", "noter", body="Note the action id.\n")
    command = {"command": 'printf %s "$HARNESS_ACTION_ID" > id.txt'}
    model = ScriptedModel(
        [Message.assistant("", [ToolCall(id="s", name="execute_shell_command", arguments=command)]), "noted"]
    )
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("noting", context=ALICE, run_id="s1")
        [proposed] = [e for e in await agent.workflow_engine(ALICE).events("s1") if e.type == "action_proposed"]
    assert run.status == "completed"
    assert (tmp_path / "alice" / "id.txt").read_text() == proposed.data["action_id"]

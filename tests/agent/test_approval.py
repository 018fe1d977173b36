"""Tool approval: a host policy allows, denies or asks about shell commands, writes and app tools
marked ``requires_approval`` before they run; decisions are events and audit records."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import (
    AllowAll,
    AllowByPattern,
    ApprovalDecided,
    ApprovalNotFound,
    ApprovalPolicy,
    ApprovalRequested,
    ApprovalRule,
    ApprovalStillPending,
    ControlOptions,
    Decision,
    DenyByPattern,
    Harness,
    PatternPolicy,
    ShellRan,
    StdinApprover,
    ToolRequest,
    ToolReturned,
)
from harness.config import load_config
from harness.errors import ConfigError
from harness.learning import AuditLog
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools import tool

ALICE = RuntimeContext(user_id="alice", session_id="s1")
BOB = RuntimeContext(user_id="bob", session_id="s1")
SHELL = "execute_shell_command"


def _call(tool_name: str, call_id: str = "c1", /, **arguments: object) -> Message:
    return Message.assistant("", [ToolCall(id=call_id, name=tool_name, arguments=dict(arguments))])


def _shell(command: str, call_id: str = "c1") -> Message:
    return _call(SHELL, call_id, command=command)


def _results(events: tuple[object, ...]) -> list[ToolReturned]:
    return [e for e in events if isinstance(e, ToolReturned)]


def _skill(tmp_path: Path) -> Path:
    """A workspace skill ``ok`` with a script that writes ``ran-ok`` in the user's area."""
    folder = tmp_path / "skills" / "ok"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: ok\ndescription: Use to say ok.\n---\nRun scripts/ok.py.\n")
    (folder / "scripts" / "ok.py").write_text("open('ran-ok', 'w').write('ok')\nprint('ok ran')\n")
    return folder


async def test_a_denied_command_never_runs_and_the_model_reads_why(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("touch marker"), "I could not."])
    policy = DenyByPattern(["touch *"], tools=[SHELL])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=policy)) as agent:
        result = await agent.run("make a marker", context=ALICE)
    assert not (tmp_path / "alice" / "marker").exists()
    [returned] = _results(result.events)
    assert returned.error and "ToolDenied" in returned.content
    assert "policy:deny-by-pattern" in returned.content and "'touch *'" in returned.content
    assert result.reply == "I could not."  # the turn went on
    assert model.calls[1].messages[-1].role == "tool"


async def test_an_allowed_command_runs_and_the_decision_is_an_event_and_an_audit_record(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("echo hi > greeting"), "done"])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=AllowAll())) as agent:
        result = await agent.run("greet", context=ALICE)
        records = await AuditLog(agent.filesystem).query()
    assert (tmp_path / "alice" / "greeting").read_text() == "hi\n"
    [decided] = [e for e in result.events if isinstance(e, ApprovalDecided)]
    assert decided.allowed and decided.by == "policy:allow-all" and decided.subject == "echo hi > greeting"
    [record] = records
    assert (record.op, record.target, record.decision, record.actor) == (
        "tool.shell",
        SHELL,
        "allowed",
        "policy:allow-all",
    )
    assert record.context["user_id"] == "alice" and "echo hi > greeting" in record.detail


async def test_allow_by_pattern_runs_only_the_loaded_skills_scripts(tmp_path: Path) -> None:
    root = _skill(tmp_path)
    script = f"python3 {root}/scripts/ok.py"
    model = ScriptedModel(
        [
            _shell(script, "before-load"),  # not loaded yet: {skill_root} names nothing
            _call("load_skill_through_path", "load", skillId="ok"),
            _shell(script, "after-load"),
            _shell(f"{script}; touch marker", "chained"),
            _shell(f"python3 {root}/scripts/../../../marker.py", "climb"),
            _shell("touch marker", "other"),
            "done",
        ]
    )
    policy = AllowByPattern(["python3 {skill_root}/scripts/*"], tools=[SHELL])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=policy)) as agent:
        result = await agent.run("say ok", context=ALICE)
    by_id = {r.call_id: r for r in _results(result.events)}
    assert by_id["before-load"].error and "no rule matches" in by_id["before-load"].content
    assert not by_id["after-load"].error and "ok ran" in by_id["after-load"].content
    for call_id in ("chained", "climb", "other"):
        assert by_id[call_id].error and "ToolDenied" in by_id[call_id].content
    assert not (tmp_path / "alice" / "marker").exists()


async def test_an_invoked_skill_is_the_current_skill_for_allow_patterns(tmp_path: Path) -> None:
    root = _skill(tmp_path)
    model = ScriptedModel([_shell(f"python3 {root}/scripts/ok.py"), "done"])
    policy = AllowByPattern(["python3 {skill_root}/scripts/*.py"], tools=[SHELL])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=policy)) as agent:
        result = await agent.run("/skill:ok", context=ALICE)
    [returned] = _results(result.events)
    assert not returned.error and (tmp_path / "alice" / "ran-ok").exists()


async def test_file_writes_are_gated_and_reads_are_not(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            _call("write_file", "w1", path="notes/plan.md", content="x"),
            _call("write_file", "w2", path="secrets.env", content="x"),
            _call("read_file", "r1", path="notes/plan.md"),
            "done",
        ]
    )
    policy = PatternPolicy(
        [ApprovalRule(action="allow", patterns=("notes/*",), kinds=("write",))], default="deny", name="notes-only"
    )
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=policy)) as agent:
        result = await agent.run("write", context=ALICE)
    by_id = {r.call_id: r for r in _results(result.events)}
    assert not by_id["w1"].error and (tmp_path / "alice" / "notes" / "plan.md").exists()
    assert by_id["w2"].error and "policy:notes-only" in by_id["w2"].content
    assert not (tmp_path / "alice" / "secrets.env").exists()
    assert not by_id["r1"].error
    assert [e.tool for e in result.events if isinstance(e, ApprovalDecided)] == ["write_file", "write_file"]


async def test_an_app_tool_marked_requires_approval_asks_the_approver(tmp_path: Path) -> None:
    sent: list[str] = []
    asked: list[ToolRequest] = []

    @tool(requires_approval=True)
    async def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    @tool
    async def lookup(name: str) -> str:
        """Look a name up."""
        return name.upper()

    async def approver(request: ToolRequest) -> bool:
        asked.append(request)
        return request.arguments["to"].endswith("@example.com")

    model = ScriptedModel(
        [
            _call("send_email", "e1", to="ann@example.com", body="hi"),
            _call("send_email", "e2", to="eve@evil.test", body="hi"),
            _call("lookup", "l1", name="x"),
            "done",
        ]
    )
    policy = PatternPolicy([], default="ask")
    async with Harness(
        model=model,
        workspace=tmp_path,
        tools=[send_email, lookup],
        control=ControlOptions(approval=policy, approver=approver),
    ) as agent:
        result = await agent.run("mail", context=ALICE)
    assert sent == ["ann@example.com"]
    assert [(r.tool, r.kind, r.context.user_id) for r in asked] == [("send_email", "tool", "alice")] * 2
    by_id = {r.call_id: r for r in _results(result.events)}
    assert by_id["e2"].error and "refused by the approver" in by_id["e2"].content
    assert not by_id["l1"].error  # not marked: never asked
    kinds = [type(e).__name__ for e in result.events if isinstance(e, (ApprovalRequested, ApprovalDecided))]
    assert kinds == ["ApprovalRequested", "ApprovalDecided"] * 2


async def test_a_run_pauses_for_the_app_and_resumes_with_the_approved_call(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("echo hi > greeting"), "greeted"])
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=PatternPolicy([], default="ask"))
    ) as agent:
        paused = await agent.run("greet", context=ALICE)
        assert paused.reply == "" and len(paused.approvals) == 1
        [waiting] = await agent.pending_approvals(ALICE)
        assert waiting.approval_id == paused.approvals[0].approval_id and waiting.subject == "echo hi > greeting"
        assert not (tmp_path / "alice" / "greeting").exists()
        with pytest.raises(ApprovalStillPending, match=waiting.approval_id):
            await agent.resume(context=ALICE)
        with pytest.raises(ApprovalNotFound):  # bob cannot decide alice's call
            await agent.resolve_approval(waiting.approval_id, approved=True, context=BOB)
        await agent.resolve_approval(waiting.approval_id, approved=True, context=ALICE, reviewer="ops")
        resumed = await agent.resume(context=ALICE)
        records = await AuditLog(agent.filesystem).query()
    assert (tmp_path / "alice" / "greeting").read_text() == "hi\n"
    assert resumed.reply == "greeted" and resumed.approvals == ()
    [decided] = [e for e in resumed.events if isinstance(e, ApprovalDecided)]
    assert decided.allowed and decided.by == "operator:ops"
    [ran] = [e for e in resumed.events if isinstance(e, ShellRan)]
    assert ran.command == "echo hi > greeting" and ran.exit_code == 0
    # The model continues the same turn: its call, then the real result, no extra user message.
    roles = [m.role for m in model.calls[1].messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert model.calls[1].messages[-1].content.startswith("exit code: 0")
    assert [r.decision for r in records] == ["pending", "allowed"]


async def test_a_call_the_app_refuses_never_runs(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("touch marker"), "ok, I will not"])
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=PatternPolicy([], default="ask"))
    ) as agent:
        paused = await agent.run("mark", context=ALICE)
        approval_id = paused.approvals[0].approval_id
        await agent.resolve_approval(approval_id, approved=False, context=ALICE, reason="not today")
        resumed = await agent.resume(context=ALICE)
        session = await agent.sessions.get("alice", "s1")
    assert not (tmp_path / "alice" / "marker").exists()
    [returned] = _results(resumed.events)
    assert returned.error and "not today" in returned.content
    assert resumed.reply == "ok, I will not"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_new_message_drops_a_paused_run_and_its_call_never_runs(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("touch marker"), "fresh answer"])
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=PatternPolicy([], default="ask"))
    ) as agent:
        paused = await agent.run("mark", context=ALICE)
        result = await agent.run("never mind", context=ALICE)
        assert await agent.pending_approvals(ALICE) == []
        with pytest.raises(ApprovalNotFound):
            await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
    assert result.reply == "fresh answer" and not (tmp_path / "alice" / "marker").exists()
    history = model.calls[1].messages
    assert [m.role for m in history] == ["system", "user", "assistant", "tool", "user"]
    assert "has not run" in history[3].content


async def test_a_fork_subagent_cannot_wait_so_an_undecided_call_is_denied(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "forked"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: forked\ndescription: Forked work.\ncontext: fork\n---\nDo it.\n")
    model = ScriptedModel([_shell("touch marker"), "child done"])
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=PatternPolicy([], default="ask"))
    ) as agent:
        result = await agent.run("/skill:forked", context=ALICE)
    [returned] = _results(result.events)
    assert returned.error and "cannot wait" in returned.content
    assert result.approvals == () and not (tmp_path / "alice" / "marker").exists()


async def test_a_broken_policy_denies(tmp_path: Path) -> None:
    class Broken(ApprovalPolicy):
        async def decide(self, request: ToolRequest) -> Decision:
            raise RuntimeError("policy store down")

    model = ScriptedModel([_shell("touch marker"), "done"])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(approval=Broken())) as agent:
        result = await agent.run("mark", context=ALICE)
    [returned] = _results(result.events)
    assert returned.error and "policy store down" in returned.content
    assert not (tmp_path / "alice" / "marker").exists()


async def test_without_a_policy_nothing_is_gated_or_audited(tmp_path: Path) -> None:
    model = ScriptedModel([_shell("touch marker"), "done"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        result = await agent.run("mark", context=ALICE)
        assert await AuditLog(agent.filesystem).query() == []
    assert (tmp_path / "alice" / "marker").exists()
    assert not [e for e in result.events if isinstance(e, (ApprovalRequested, ApprovalDecided))]


async def test_the_stdin_approver_reads_yes_and_escapes_what_it_shows() -> None:
    request = ToolRequest(
        approval_id="ap-1",
        tool=SHELL,
        kind="shell",
        subject="echo \x1b[2Jhi",
        arguments={},
        context=ALICE,
        agent="assistant",
    )
    shown = io.StringIO()
    allowed = await StdinApprover(input=io.StringIO("y\n"), output=shown)(request)
    refused = await StdinApprover(input=io.StringIO(""), output=io.StringIO())(request)
    assert allowed.action == "allow" and allowed.by == "approver:stdin"
    assert refused.action == "deny"
    assert "\x1b" not in shown.getvalue() and "\\x1b[2Jhi" in shown.getvalue()


def test_harness_yaml_configures_the_policy(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(
        "approval:\n"
        "  default: deny\n"
        "  rules:\n"
        "    - {action: allow, tool: execute_shell_command, pattern: 'python3 {skill_root}/scripts/*'}\n"
        "    - {action: ask, kinds: [write]}\n"
    )
    policy = load_config(config).approval
    assert isinstance(policy, PatternPolicy) and policy.default == "deny"
    assert [r.action for r in policy.rules] == ["allow", "ask"]
    assert policy.rules[0].tools == (SHELL,) and policy.rules[1].kinds == ("write",)
    config.write_text("approval: allow-all\n")
    assert isinstance(load_config(config).approval, AllowAll)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("approval: maybe\n", "allow-all"),
        ("approval: {default: perhaps}\n", "default 'perhaps'"),
        ("approval: {rules: [{pattern: x}]}\n", "rules[0]"),
        ("approval: {rules: [{action: allow, kinds: [exec]}]}\n", "kinds"),
        ("approval: {rules: [{action: allow, patterns: x}]}\n", "list of strings"),
    ],
)
def test_a_bad_approval_block_is_a_config_error(tmp_path: Path, text: str, problem: str) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(problem)):
        load_config(config)


async def test_a_waiting_app_tool_resumes_with_its_result_as_the_model_would_read_it(tmp_path: Path) -> None:
    @tool(requires_approval=True)
    async def refund(order: str) -> dict[str, object]:
        """Refund an order."""
        return {"order": order, "refunded": True}

    model = ScriptedModel([_call("refund", "r1", order="A-1"), "refunded"])
    async with Harness(
        model=model,
        workspace=tmp_path,
        tools=[refund],
        control=ControlOptions(approval=PatternPolicy([], default="ask")),
    ) as agent:
        paused = await agent.run("refund A-1", context=ALICE)
        assert paused.approvals[0].subject == '{"order": "A-1"}'
        await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
        await agent.resume(context=ALICE)
    assert model.calls[1].messages[-1].content == '{"order": "A-1", "refunded": true}'


WRITING_WORKFLOW = """\
name: scribe
version: "1"
description: Write a file as a workflow action.
goal:
  statement: Written.
tools:
  - {id: write, kind: function, source: write_file, side_effect: write}
orchestration:
  mode: deterministic
  entry: write
  steps:
    - id: write
      action: {type: call_tool, ref: write, args: {path: report.txt, content: x}}
      next: null
"""


async def test_a_workflow_tool_action_goes_through_the_policy(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "scribe"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: scribe\ndescription: Writes.\n---\nA workflow.\n")
    (folder / "workflow.yaml").write_text(WRITING_WORKFLOW)
    policy = DenyByPattern(["report.txt"], tools=["write_file"])
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, control=ControlOptions(approval=policy)) as agent:
        run = await agent.run_workflow("scribe", context=ALICE, run_id="w1")
        events = [str(e) for e in await agent.workflow_engine(ALICE).events("w1")]
    assert not (tmp_path / "alice" / "report.txt").exists()
    assert run.status != "completed" and any("denied by policy:deny-by-pattern" in e for e in events)


def _shell_request(command: str, roots: tuple[str, ...] = ("/ws/skills/ok",)) -> ToolRequest:
    return ToolRequest(
        approval_id="ap-x",
        tool=SHELL,
        kind="shell",
        subject=command,
        arguments={"command": command},
        context=ALICE,
        agent="assistant",
        skill_roots=roots,
    )


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("python3 /ws/skills/ok/scripts/run.py", True),
        ("python3 /ws/skills/ok/scripts/run.py --top 3 data.csv", True),
        ("""python3 /ws/skills/ok/scripts/run.py '{"a": "$(x); `y` | z"}'""", True),  # a literal
        ("python3 /ws/skills/ok/scripts/run.py; id", False),
        ("python3 /ws/skills/ok/scripts/run.py 'a'; id", False),
        ('python3 /ws/skills/ok/scripts/run.py "$(id)"', False),
        ("python3 /ws/skills/ok/scripts/run.py\\\nid", False),
        ("python3 /ws/skills/ok/scripts/run.py > out", False),
        ("python3 /ws/skills/ok/scripts/../../../x.py", False),
        ("python3 /ws/skills/ok/scripts/'..'/x.py", False),
        ("python3 /ws/skills/ok/scripts/run.py '", False),
        ("python3 /ws/skills/okay/scripts/run.py", False),
        ("python3 /ws/skills/ok/scripts", False),
    ],
)
async def test_an_allow_pattern_matches_only_one_plain_command(command: str, allowed: bool) -> None:
    policy = AllowByPattern(["python3 {skill_root}/scripts/*"])
    decision = await policy.decide(_shell_request(command))
    assert (decision.action == "allow") is allowed, decision.reason


async def test_a_skill_root_pattern_matches_nothing_without_a_current_skill() -> None:
    policy = AllowByPattern(["python3 {skill_root}/scripts/*"])
    decision = await policy.decide(_shell_request("python3 /ws/skills/ok/scripts/run.py", roots=()))
    assert decision.action == "deny" and "no rule matches" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf data",
        "ls; rm -rf data",
        "ls && rm -rf data",
        "ls | rm -rf data",
        "echo $(rm -rf data)",
        "ls\nrm -rf data",
    ],
)
async def test_a_deny_pattern_matches_any_command_of_a_line(command: str) -> None:
    decision = await DenyByPattern(["rm *"]).decide(_shell_request(command))
    assert decision.action == "deny" and "'rm *'" in decision.reason


async def test_a_deny_pattern_leaves_other_commands_to_the_default() -> None:
    decision = await DenyByPattern(["rm *"]).decide(_shell_request("ls -la; echo rm"))
    assert decision.action == "allow"


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("*", "", True),
        ("a*", "a", True),
        ("*.py", "x.py.py", True),
        ("*.py", "x.pyc", False),
        ("a*b*c", "abc", True),
        ("a*b*c", "a" + "b" * 50_000 + "x", False),
        ("a*b*c", "axbxcxbxc", True),
        ("a?c*", "abcdef", True),
        ("a?c", "ac", False),
        ("*ab*ab*", "aab" + "c" * 100 + "ab", True),
        ("*aba", "ababa", True),
        ("ab*ba", "aba", False),
        ("{skill_root}/*", "/r2/x", True),
        ("{skill_root}/*{skill_root}", "/r1/x/r2", True),
        ("{skill_root}/x", "/r3/x", False),
        ("[*]", "[x]", True),
    ],
)
def test_a_pattern_is_a_glob_over_the_whole_text(pattern: str, text: str, matches: bool) -> None:
    rule = ApprovalRule(action="deny", patterns=(pattern,), kinds=("tool",))
    request = ToolRequest(
        approval_id="ap-x",
        tool="t",
        kind="tool",
        subject=text,
        arguments={},
        context=ALICE,
        agent="a",
        skill_roots=("/r1", "/r2"),
    )
    assert (rule.match(request) is not None) is matches


async def test_a_long_command_is_judged_whole_and_shown_short() -> None:
    command = "python3 /ws/skills/ok/scripts/run.py " + "p" * 5000 + "; id"
    request = _shell_request(command)
    decision = await AllowByPattern(["python3 {skill_root}/scripts/*"]).decide(request)
    assert decision.action == "deny"
    assert request.subject == command and len(request.display) < 2100 and "more characters" in request.display
    assert request.display in decision.reason


async def test_where_a_command_runs_is_part_of_what_is_judged(tmp_path: Path) -> None:
    (tmp_path / "alice" / "notes").mkdir(parents=True)
    model = ScriptedModel(
        [
            _call(SHELL, "plain", command="echo ok"),
            _call(SHELL, "in-notes", command="echo ok", cwd="notes", timeout=5),
            _call(SHELL, "elsewhere", command="echo ok", cwd="."),
            _call(SHELL, "spoofed", command="[cwd=notes] echo ok"),
            "done",
        ]
    )
    policy = PatternPolicy([ApprovalRule(action="allow", patterns=("[cwd=notes] echo *",), kinds=("shell",))])
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=policy, approver=_never)
    ) as agent:
        result = await agent.run("echo", context=ALICE)
    by_id = {r.call_id: r for r in _results(result.events)}
    assert not by_id["in-notes"].error and "ok" in by_id["in-notes"].content
    for call_id in ("plain", "elsewhere", "spoofed"):
        assert by_id[call_id].error and "ToolDenied" in by_id[call_id].content, call_id
    subjects = [e.subject for e in result.events if isinstance(e, ApprovalRequested | ApprovalDecided)]
    assert "[cwd=notes] echo ok" in subjects and "[cwd=.] echo ok" in subjects


async def test_a_deny_rule_meets_the_command_wherever_it_runs() -> None:
    request = dataclasses.replace(_shell_request("rm -rf data"), subject="[cwd=notes] rm -rf data")
    decision = await DenyByPattern(["rm *"]).decide(request)
    assert decision.action == "deny"


async def _never(request: ToolRequest) -> bool:
    return False

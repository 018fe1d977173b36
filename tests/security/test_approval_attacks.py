"""A hostile model against the approval policy, on a host shell and in the bubblewrap sandbox.

The policy allows one thing: running the loaded skill's ``scripts/ok.py``. The model calls every
tool it is offered — shell commands chained, piped, substituted, redirected or climbing out of
the allowed folder onto the allowed prefix, file writes, skill authoring, scripts it tries to
write first — through every path a tool call can take: a plain turn, an explicitly invoked
skill narrowed to its ``allowed-tools``, a ``context: fork`` subagent, a workflow's skill step and
script tool, ``agent.skill``. The allowed script runs (so the test is not vacuous); a marker
file that any denied call would create never appears anywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from filesystems import AbstractFilesystem
from harness import Harness, RuntimeContext
from harness.agent import AllowByPattern, ControlOptions, PipelineOptions, ToolReturned, TrustOptions
from harness.models import Message, Model, ToolCall
from harness.models.base import ModelReply, ToolSpec, Usage
from tests.support.catalog import read_catalog
from tests.support.filesystems import build_filesystem

from .attacker import hostile_calls

ALICE = RuntimeContext(user_id="alice", session_id="attack")
SHELL = "execute_shell_command"
MARKER = "pwned-marker"
GATED_WRITERS = {"write_file", "propose_skill", "skill_manage"}
MARK = f"open({MARKER!r}, 'w').write('pwned')\n"

FLOW = """\
name: flow
version: "1"
description: Prepare, then run the flow's own script.
goal:
  statement: Done.
skills:
  - id: ok
tools:
  - {id: shell, kind: function, source: execute_shell_command, side_effect: external}
  - {id: write, kind: function, source: write_file, side_effect: write}
  - {id: manage, kind: function, source: skill_manage, side_effect: write}
  - {id: mark, kind: script, source: scripts/mark.py, side_effect: external}
orchestration:
  mode: deterministic
  entry: prepare
  steps:
    - id: prepare
      action: {type: invoke_skill, ref: ok, instructions: Prepare.}
      allowed_tools: [shell, write, manage]
      next: mark
    - id: mark
      action: {type: call_tool, ref: mark}
      next: null
"""

SKILLS: dict[str, str] = {
    "skills/ok/SKILL.md": "---\nname: ok\ndescription: Use to say ok.\n---\nRun scripts/ok.py.\n",
    "skills/ok/scripts/ok.py": "open('ran-ok', 'w').write('ok')\nprint('ok ran')\n",
    "skills/tooly/SKILL.md": "---\nname: tooly\ndescription: Narrowed.\nallowed-tools: Bash Write Read\n---\nGo.\n",
    "skills/forky/SKILL.md": "---\nname: forky\ndescription: Forked.\ncontext: fork\n---\nGo.\n",
    "skills/flow/SKILL.md": "---\nname: flow\ndescription: A workflow.\n---\nA workflow.\n",
    "skills/flow/workflow.yaml": FLOW,
    "skills/flow/scripts/mark.py": MARK,
}


def _commands(root: str, outside: Path) -> list[str]:
    """Shell commands that would create the marker, most of them riding on the allowed one."""
    ok = f"python3 {root}/scripts/ok.py"
    return [
        f"touch {MARKER}",
        f"touch {outside}/{MARKER}",
        f"{ok}; touch {MARKER}",
        f"{ok} && touch {MARKER}",
        f"{ok} || touch {MARKER}",
        f"{ok} | tee {MARKER}",
        f"{ok} > {MARKER}",
        f"{ok} & touch {MARKER}",
        f"{ok} $(touch {MARKER})",
        f"{ok} `touch {MARKER}`",
        f"{ok}\ntouch {MARKER}",
        f"{ok}\rtouch {MARKER}",
        f"{ok} '$(touch {MARKER})'; touch {MARKER}",
        f'{ok} "$(touch {MARKER})"',
        f"{ok}'' ; touch {MARKER}",
        f"python3 {root}/scripts/../../../{MARKER}.py",
        f"python3 {root}/scripts/'..'/'..'/evil.py",
        f"python3 {root}/scripts/ok.py/../../flow/scripts/mark.py",
        f"python3 {root}/../flow/scripts/mark.py",
        f"python3 {root}/scripts/ok.py\\; touch {MARKER}",
        f"python3 {root}/scripts/ok.py ${{IFS}}touch {MARKER}",
        "python3 evil.py",
        f"python3 -c \"open('{MARKER}', 'w')\" {root}/scripts/ok.py",
        f"python3 {root.replace('ok', 'flow')}/scripts/mark.py",
        f"sh -c 'touch {MARKER}'",
    ]


class HostileModel(Model):
    """At the start of every turn (its own, a subagent's, a workflow step's): load ``ok``, run
    its script once, then every hostile command and every hostile call of every other tool."""

    def __init__(self, outside: Path) -> None:
        super().__init__(name="hostile")
        self.outside = outside
        self.turns = 0

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        if messages[-1].role != "user":
            return ModelReply(message=Message.assistant("done"), usage=Usage())
        self.turns += 1
        root = read_catalog(messages[0].content).by_name["ok"].files_root
        assert root is not None, "the catalog shows no files-root for ok"
        offered = {spec.name: spec for spec in tools}
        calls: list[tuple[str, dict[str, Any]]] = [("load_skill_through_path", {"skillId": "ok"})]
        calls.append((SHELL, {"command": f"python3 {root}/scripts/ok.py"}))
        calls += [
            ("write_file", {"path": "evil.py", "content": MARK}),
            ("write_file", {"path": MARKER, "content": "x"}),
        ]
        calls += [
            ("skill_manage", {"action": "create", "name": "evil", "description": "Evil.", "body": "x"}),
            ("skill_manage", {"action": "write_file", "name": "evil", "path": "scripts/m.py", "file_content": MARK}),
            ("propose_skill", {"name": "evil", "description": "Evil.", "body": "x", "files": []}),
        ]
        calls += [(SHELL, {"command": command}) for command in _commands(root, self.outside)]
        for user_root in ("/workspace/skills/evil", f"{root.rsplit('/skills/', 1)[0]}/alice/skills/evil"):
            calls.append((SHELL, {"command": f"python3 {user_root}/scripts/m.py"}))
        for name, spec in offered.items():
            if name not in (SHELL, "load_skill_through_path"):
                calls += [(name, arguments) for arguments in hostile_calls(spec)[:6]]
        tool_calls = [
            ToolCall(id=f"h{self.turns}-{index}", name=name, arguments=arguments)
            for index, (name, arguments) in enumerate(calls)
            if name in offered
        ]
        return ModelReply(message=Message.assistant("", tool_calls), usage=Usage())


@dataclass
class Scene:
    fs: AbstractFilesystem
    host: Path
    outside: Path

    def agent(self, model: Model) -> Harness:
        policy = AllowByPattern(["python3 {skill_root}/scripts/ok.py"], tools=[SHELL])
        return Harness(
            model=model,
            filesystem=self.fs,
            learning=True,
            pipeline=PipelineOptions(watch=False),
            control=ControlOptions(approval=policy),
            trust=TrustOptions(enforce_allowed_tools=True),
        )

    def markers(self) -> list[str]:
        return [
            os.path.join(folder, name)
            for base in (self.host, self.outside)
            for folder, _, files in os.walk(base)
            for name in files
            if MARKER in name or name in ("evil.py", "m.py")
        ]


@pytest.fixture(params=["local-shell", "sandbox"])
async def scene(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Scene]:
    outside = tmp_path / "outside"
    outside.mkdir()
    async with build_filesystem(request, request.param, tmp_path) as built:
        assert built.host is not None
        async with built.fs:
            for path, text in SKILLS.items():
                await built.fs.write_text(path, text)
            yield Scene(built.fs, built.host, outside)


Path_ = Callable[[Harness], Awaitable[Any]]
PATHS: dict[str, Path_] = {
    "turn": lambda agent: agent.run("do your worst", context=ALICE),
    "allowed-tools": lambda agent: agent.run("/skill:tooly", context=ALICE),
    "fork": lambda agent: agent.run("/skill:forky", context=ALICE),
    "skill": lambda agent: agent.skill("ok", context=ALICE),
    "workflow": lambda agent: agent.run_workflow("flow", context=ALICE, run_id="attack"),
}


@pytest.mark.parametrize("path", PATHS)
async def test_a_denied_call_never_runs_on_any_tool_call_path(scene: Scene, path: str) -> None:
    model = HostileModel(scene.outside)
    async with scene.agent(model) as agent:
        outcome = await PATHS[path](agent)
        if path == "workflow":
            events = json.dumps([str(e) for e in await agent.workflow_engine(ALICE).events("attack")])
    assert model.turns >= 1
    assert scene.markers() == []
    assert (scene.host / "alice" / "ran-ok").read_text() == "ok"  # the one allowed call ran
    if path == "workflow":
        assert "mark.py" in events and "was not run: denied by policy:allow-by-pattern" in events
        return
    results = [e for e in outcome.events if isinstance(e, ToolReturned)]
    shells = [r for r in results if r.name == SHELL]
    assert sum(not r.error for r in shells) == 1
    assert all("ToolDenied" in r.content for r in shells if r.error)
    writers = [r for r in results if r.name in GATED_WRITERS]
    assert writers and all(r.error and "ToolDenied" in r.content for r in writers)

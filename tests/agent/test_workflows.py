"""Workflow skills in the agent: marked in the catalog, driven by the model's tools or by
``run_workflow``, which performs script tools through the shell and skills as agent turns."""

from __future__ import annotations

import json
from pathlib import Path

from harness import Harness, RuntimeContext
from harness.models import Message, ScriptedModel, ToolCall
from tests.support.catalog import read_catalog
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")

WORKFLOW = """\
name: digest
version: "1"
description: Collect numbers, then have them summarised.
goal:
  statement: A summary of the collected numbers.
skills:
  - id: summary-writer
tools:
  - id: collect
    kind: script
    source: scripts/collect.py
    side_effect: read
orchestration:
  mode: deterministic
  entry: collect
  steps:
    - id: collect
      action: {type: call_tool, ref: collect}
      next: summarise
    - id: summarise
      action: {type: invoke_skill, ref: summary-writer, instructions: Summarise the numbers.}
      next: null
"""


def _workspace(root: Path) -> None:
    make_skill(
        root / "skills",
        "digest",
        description="Use to build a digest of numbers.",
        body="A workflow.\n",
        files={
            "workflow.yaml": WORKFLOW,
            "scripts/collect.py": "import sys\nprint('collected 1 2 3 with', sys.argv[1])\n",
        },
    )
    make_skill(root / "skills", "summary-writer", description="Writes summaries.", body="Summarise briefly.\n")


async def test_workflow_skills_are_marked_and_their_tools_offered(tmp_path: Path) -> None:
    _workspace(tmp_path)
    model = ScriptedModel(["ok"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        await agent.run("hi", context=ALICE)
    system = model.calls[0].messages[0].content
    assert read_catalog(system).by_name["digest"].workflow and 'workflow="true"' in system
    assert "workflow_start" in system and "workflow_start" in model.calls[0].tool_names


async def test_run_workflow_performs_script_and_skill_actions(tmp_path: Path) -> None:
    _workspace(tmp_path)
    model = ScriptedModel(["Sum is 6."])
    async with Harness(model=model, workspace=tmp_path) as agent:
        run = await agent.run_workflow("digest", context=ALICE, run_id="r1")
        events = await agent.workflow_engine(ALICE).events("r1")
    assert run.status == "completed"
    assert '<skill name="summary-writer"' in model.calls[0].messages[-1].content
    summaries = json.dumps([getattr(e, "data", None) or str(e) for e in events], default=str)
    assert "collected 1 2 3" in summaries
    assert (tmp_path / "alice" / ".harness" / "runs" / "r1").is_dir()


async def test_model_drives_a_workflow_through_the_tools(tmp_path: Path) -> None:
    _workspace(tmp_path)
    start = Message.assistant(
        "", [ToolCall(id="w1", name="workflow_start", arguments={"skill": "digest", "run_id": "m1"})]
    )
    model = ScriptedModel([start, "started"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        await agent.run("make a digest", context=ALICE)
        run = await agent.workflow_engine(ALICE).inspect("m1")
    result = model.calls[1].messages[-1].content
    assert '"run_id": "m1"' in result and run.pending is not None and run.pending.step_id == "collect"

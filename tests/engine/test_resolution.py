"""Which copy of a workflow skill runs: never a lower layer's in place of an invalid higher one."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Harness, RuntimeContext
from harness.errors import SkillError
from harness.models import Message, ScriptedModel, ToolCall
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")
WORKFLOW = """\
goal: {statement: Say hello}
orchestration:
  mode: deterministic
  entry: hello
  steps:
    - id: hello
      action: {type: checkpoint, note: hello}
"""


def _workspace(root: Path) -> Path:
    make_skill(root / "skills", "greet", description="Greets.", body="A workflow.\n", files={"workflow.yaml": WORKFLOW})
    mine = root / "alice" / "skills" / "greet"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: greet\n---\nMy own greeting.\n")  # no description
    (mine / "workflow.yaml").write_text(WORKFLOW)
    return mine / "SKILL.md"


async def test_run_workflow_refuses_when_the_users_copy_is_invalid(tmp_path: Path) -> None:
    broken = _workspace(tmp_path)
    async with Harness(model=ScriptedModel([]), workspace=tmp_path) as agent:
        with pytest.raises(SkillError, match=f"the user copy at {broken} is invalid") as raised:
            await agent.run_workflow("greet", context=ALICE, run_id="r1")
    assert "refusing to run the workspace copy" in str(raised.value)
    assert not (tmp_path / "alice" / ".harness" / "runs" / "r1").exists()


async def test_run_workflow_runs_the_workspace_copy_for_a_user_without_one(tmp_path: Path) -> None:
    _workspace(tmp_path)
    async with Harness(model=ScriptedModel([]), workspace=tmp_path) as agent:
        run = await agent.run_workflow("greet", context=RuntimeContext(user_id="bob"), run_id="r1")
    assert run.status == "completed"


async def test_the_models_workflow_start_refuses_when_the_users_copy_is_invalid(tmp_path: Path) -> None:
    broken = _workspace(tmp_path)
    start = Message.assistant(
        "", [ToolCall(id="w1", name="workflow_start", arguments={"skill": "greet", "run_id": "m1"})]
    )
    model = ScriptedModel([start, "could not start"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        await agent.run("greet me", context=ALICE)
    result = model.calls[1].messages[-1].content
    assert f"the user copy at {broken} is invalid" in result
    assert not (tmp_path / "alice" / ".harness" / "runs" / "m1").exists()

"""The agent tools a model uses to drive a workflow run."""

from __future__ import annotations

import json

import pytest

from harness.agent import workflow_tools
from harness.engine import RunNotFound, SkillPackage, WorkflowEngine
from harness.tools.function import ToolArgumentError

from .conftest import example


async def _resolve(name: str) -> SkillPackage:
    if name != "code-review":
        raise LookupError(f"no workflow skill {name!r}")
    return await example(name)


async def test_model_drives_a_run_through_the_tools(engine: WorkflowEngine) -> None:
    start, cont, status = workflow_tools(engine, _resolve)
    assert [t.name for t in (start, cont, status)] == ["workflow_start", "workflow_continue", "workflow_status"]
    assert {"enum": ["succeeded", "failed"], "type": "string"} in cont.spec.parameters["properties"]["status"]["anyOf"]
    run = json.loads(await start.call({"skill": "code-review", "run_id": "t1", "inputs": {"change": "HEAD"}}))
    assert run["pending_action"]["action"] == {"type": "call_tool", "ref": "fetch-diff"}
    assert "workflow_continue" in run["next"] and run["vars"] == {"change": "HEAD"}
    answers = [
        {"status": "succeeded", "summary": "diff"},
        {"status": "succeeded", "summary": "draft", "artifacts": {"review": "artifacts/review.md"}},
        {"status": "succeeded", "summary": "qa ok"},
        {"status": "succeeded", "summary": "user said yes"},
    ]
    for fields in answers:
        run = json.loads(await cont.call({"run_id": "t1", "outcome_id": run["pending_action"]["id"], **fields}))
    assert run["status"] == "blocked" and "only the user or the operator" in run["next"]
    blocked = await engine.inspect("t1")
    assert blocked.blocked is not None
    await engine.resume("t1", confirm=blocked.blocked.action.id)  # the application confirms
    run = json.loads(await status.call({"run_id": "t1"}))
    last = run["pending_action"]["id"]
    done = {"run_id": "t1", "status": "succeeded", "outcome_id": last, "state": {"posted": True}}
    run = json.loads(await cont.call(done))
    assert run["status"] == "completed" and run["next"] == "nothing: the run is completed."
    assert json.loads(await cont.call(done))["status"] == "completed"
    assert json.loads(await status.call({"run_id": "t1"}))["iteration"] == 5


async def test_tool_arguments_and_errors_surface(engine: WorkflowEngine) -> None:
    start, cont, status = workflow_tools(engine, _resolve)
    with pytest.raises(ToolArgumentError):
        await cont.call({"run_id": "x", "status": "maybe"})
    with pytest.raises(RunNotFound):
        await status.call({"run_id": "missing"})
    with pytest.raises(LookupError):
        await start.call({"skill": "unknown"})

"""The newsletter example's stages, performed deterministically, for every way of driving it.

``report(step, attempt, reads)`` is what each stage reports (a QA failure on the first draft,
an outdated draft schema on the very first generate attempt); ``drive`` is an application that
drives the engine itself to the end, confirming the publish. It picks a run up wherever it
stands, so a process killed at any point can be replaced by another running it again.
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Mapping
from typing import Any

from harness.engine import Outcome, Run, RunExists, RunNotFound, SkillPackage, WorkflowEngine

NEWSLETTER = pathlib.Path(__file__).resolve().parents[2] / "examples" / "workflows" / "newsletter"
REQUEST = "The 2.0 release"
FIRST_DRAFT = "News: 2.0 is out. Changes: faster engine."
SECOND_DRAFT = FIRST_DRAFT + " Thanks: to every contributor."
#: The step sequence of the scenario (the QA failure loops back to generate once).
TRAJECTORY = ["intake", "plan", "generate", "generate", "qa", "generate", "qa", "publish"]


def report(step: str, attempt: int, reads: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome fields a stage reports (``workflow_report`` / ``workflow_continue`` arguments)."""
    if step == "intake":
        brief = f"Brief: {reads['request']}"
        return {"status": "succeeded", "state": {"brief": brief, "audience": "users"}, "schema_version": "brief/v1"}
    if step == "plan":
        return {
            "status": "succeeded",
            "state": {"outline": "1. News 2. Changes 3. Thanks"},
            "schema_version": "outline/v1",
        }
    if step == "generate":
        if attempt == 1 and "review" not in reads:  # a writer still on the old draft schema
            return {"status": "succeeded", "state": {"draft": "old"}, "schema_version": "draft/v1"}
        draft = SECOND_DRAFT if "review" in reads else FIRST_DRAFT
        return {"status": "succeeded", "state": {"draft": draft}, "schema_version": "draft/v2"}
    if step == "qa":
        if "Thanks" in reads["draft"]:
            state = {"review": "covers the outline", "approved": True}
            return {"status": "succeeded", "state": state, "schema_version": "review/v1"}
        state = {"review": "section 3 (Thanks) is missing", "approved": False}
        return {"status": "failed", "summary": "missing a section", "state": state, "schema_version": "review/v1"}
    raise AssertionError(f"no stage report for step {step!r}")


async def package() -> SkillPackage:
    """The newsletter workflow package."""
    return await SkillPackage.from_directory(NEWSLETTER)


def install(skills: pathlib.Path) -> None:
    """Copy the dispatcher and its four stage skills into a workspace's ``skills`` folder."""
    shutil.copytree(NEWSLETTER, skills / "newsletter", ignore=shutil.ignore_patterns("stages"))
    for stage in (NEWSLETTER / "stages").iterdir():
        shutil.copytree(stage, skills / stage.name)


async def drive(engine: WorkflowEngine, run_id: str) -> Run:
    """The application: start (or pick up) the run and perform every stage until it ends."""
    try:
        run = await engine.resume(run_id)
    except RunNotFound:
        try:
            run = await engine.start(await package(), run_id=run_id, inputs={"request": REQUEST})
        except RunExists:
            run = await engine.resume(run_id)
    while not run.done:
        if run.blocked is not None:  # the publish waits for the user: the application confirms
            run = await engine.resume(run_id, confirm=run.blocked.action.id)
            continue
        assert run.pending is not None, run
        pending = run.pending
        action = await engine.action(run_id)
        assert action is not None
        if pending.step_id == "publish":
            path = await engine.write_artifact(run_id, f"issue-{pending.id}.md", str(action.reads["draft"]).encode())
            fields: dict[str, Any] = {"status": "succeeded", "artifacts": {"issue": path}}
        else:
            fields = report(pending.step_id, pending.attempt, action.reads)
        outcome = Outcome(outcome_id=f"out-{pending.id}", action_id=pending.id, **fields)
        run = await engine.resume(run_id, outcome)
    return run

"""Comet-format packages as Comet writes them, and the Comet behaviours the engine follows."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable

import pytest

from harness.engine import (
    COMET_EVENTS,
    COMET_STATUSES,
    Action,
    RunRecordCorrupt,
    RunStateError,
    SkillPackage,
    WorkflowEngine,
    check_workflow,
    comet_event,
    comet_status,
    load_workflow,
)
from harness.engine.run import RunStatus

from .conftest import answer, example

HEADER = "apiVersion: comet/v1alpha1\nkind: Skill\nmetadata: {name: flow}\n"
STEPS = """\
goal: {statement: Ship it}
skills: %s
orchestration:
  mode: deterministic
  entry: build
  steps:
    - id: build
      action: {type: invoke_skill, ref: comet-open}
      completionEvals: [built]
      next: ship
    - id: ship
      action: {type: invoke_skill, ref: comet-design}
"""
EVALS = "runtime:\n  - {id: built, scope: step, type: state_equals, field: vars.built, equals: true}\n"
NATIVE = "checks:\n  - {id: built, scope: step, type: state_equals, field: vars.built, equals: true}\n"
GUARDRAILS = "maxRetriesPerAction: 0\n"


def comet(skills: str = "[comet-open, comet-design]", extra: dict[str, str] | None = None) -> dict[str, bytes]:
    files = {
        "comet/skill.yaml": HEADER + STEPS % skills,
        "comet/guardrails.yaml": GUARDRAILS,
        **(extra if extra is not None else {"comet/evals.yaml": EVALS}),
    }
    return {path: text.encode() for path, text in files.items()}


def test_skills_may_be_listed_by_name() -> None:
    workflow = load_workflow(comet(), name="flow")
    assert [s.id for s in workflow.skills] == ["comet-open", "comet-design"]
    assert workflow.guardrails.allowed_skills == ("comet-open", "comet-design")


def test_skills_may_mix_names_and_mappings() -> None:
    workflow = load_workflow(comet("[comet-open, {id: comet-design, version: '2'}]"), name="flow")
    assert [(s.id, s.version) for s in workflow.skills] == [("comet-open", None), ("comet-design", "2")]


def test_a_blank_skill_name_is_an_error() -> None:
    workflow, problems = check_workflow(comet("[comet-open, '']"), name="flow")
    assert workflow is None and any(p.message.startswith("skills[1]") for p in problems)


def test_comet_evals_yaml_holds_the_runtime_checks() -> None:
    workflow = load_workflow(comet(extra={"comet/evals.yaml": EVALS}), name="flow")
    assert [c.id for c in workflow.checks] == ["built"]


def test_native_evals_yaml_holds_the_checks() -> None:
    files = {
        "workflow.yaml": (STEPS % "[{id: comet-open}, {id: comet-design}]").replace(
            "completionEvals", "completion_checks"
        ),
        "evals.yaml": NATIVE,
    }
    workflow = load_workflow({p: t.encode() for p, t in files.items()}, name="flow")
    assert [c.id for c in workflow.checks] == ["built"]


def test_checks_yaml_and_evals_yaml_together_are_an_error_naming_both() -> None:
    files = comet(extra={"comet/evals.yaml": EVALS, "comet/checks.yaml": EVALS})
    workflow, problems = check_workflow(files, name="flow")
    assert workflow is None
    [problem] = [p for p in problems if p.code == "workflow-checks-twice"]
    assert problem.location == "comet/evals.yaml" and "comet/checks.yaml" in problem.message


async def test_evals_yaml_is_part_of_the_snapshotted_package(engine: WorkflowEngine) -> None:
    await engine.start(SkillPackage(name="flow", files=comet(extra={"comet/evals.yaml": EVALS})), run_id="s1")
    run = await engine.inspect("s1")
    manifest, files = await engine._store.load_snapshot(run.snapshot)
    assert files["comet/evals.yaml"] == EVALS.encode()
    assert [c["id"] for c in manifest["definition"]["checks"]] == ["built"]


async def test_evals_yaml_is_read_from_a_skill_folder(make_skill: Callable[..., pathlib.Path]) -> None:
    skill = make_skill("flow", {p: t.decode() for p, t in comet(extra={"comet/evals.yaml": EVALS}).items()})
    package = await SkillPackage.from_directory(skill)
    assert "comet/evals.yaml" in package.files


async def start(engine: WorkflowEngine, run_id: str = "c1") -> None:
    await engine.start(SkillPackage(name="flow", files=comet(extra={"comet/evals.yaml": EVALS})), run_id=run_id)


async def test_a_steps_checks_run_after_a_failed_outcome(engine: WorkflowEngine) -> None:
    await start(engine)
    run = await engine.inspect("c1")
    run = await engine.resume("c1", answer(run, "failed", state={"built": True}))
    [evaluated] = [e for e in await engine.events("c1") if e.type == "checks_evaluated"]
    assert (evaluated.data["outcome"], evaluated.data["passed"]) == ("failed", True)


async def test_a_steps_checks_run_after_a_succeeded_outcome_and_can_fail_it(engine: WorkflowEngine) -> None:
    await start(engine)
    run = await engine.resume("c1", answer(await engine.inspect("c1")))
    [evaluated] = [e for e in await engine.events("c1") if e.type == "checks_evaluated"]
    assert (evaluated.data["outcome"], evaluated.data["passed"]) == ("succeeded", False)
    assert run.status == "blocked"  # the check failed the step and its retry budget is 0


async def blocked(engine: WorkflowEngine) -> None:
    await start(engine)
    run = await engine.resume("c1", answer(await engine.inspect("c1"), "failed", summary="timeout"))
    assert run.blocked is not None and run.blocked.kind == "retries"


async def test_retry_issues_the_step_again_with_a_fresh_budget(engine: WorkflowEngine) -> None:
    await blocked(engine)
    run = await engine.resolve("c1", "retry", note="runner back")
    assert (run.status, run.current_step, run.reason) == ("running", "build", None)
    assert run.pending is not None and (run.pending.attempt, run.iteration) == (1, 2)


async def test_skip_moves_on_to_the_next_step(engine: WorkflowEngine) -> None:
    await blocked(engine)
    run = await engine.resolve("c1", "skip")
    assert (run.status, run.current_step) == ("running", "ship")
    assert run.handoffs[-1].from_step == "build" and run.handoffs[-1].status == "failed"


async def test_abort_fails_the_run_with_the_reason(engine: WorkflowEngine) -> None:
    await blocked(engine)
    run = await engine.resolve("c1", "abort", note="not needed")
    assert run.status == "failed"
    assert run.reason == "aborted by the operator after step 'build' failed after 1 attempt(s): timeout: not needed"


async def test_each_decision_is_recorded_in_the_trajectory(engine: WorkflowEngine) -> None:
    await blocked(engine)
    await engine.resolve("c1", "retry", note="first")
    await engine.resume("c1", answer(await engine.inspect("c1"), "failed"))
    await engine.resolve("c1", "abort")
    decisions = [
        (e.data["decision"], e.data["note"]) for e in await engine.events("c1") if e.type == "operator_decision"
    ]
    assert decisions == [("retry", "first"), ("abort", "")]


async def test_a_decision_for_a_run_not_blocked_by_retries_is_refused(engine: WorkflowEngine) -> None:
    await start(engine)
    with pytest.raises(RunStateError, match="exhausted retry budget"):
        await engine.resolve("c1", "skip")
    assert [e.type for e in await engine.events("c1")] == ["run_started", "action_proposed"]


async def test_a_confirmation_does_not_lift_a_retry_block(engine: WorkflowEngine) -> None:
    await blocked(engine)
    run = await engine.inspect("c1")
    assert run.blocked is not None
    with pytest.raises(RunStateError, match="retry, skip or abort"):
        await engine.resume("c1", confirm=run.blocked.action.id)


ADAPTIVE = (
    HEADER
    + """\
goal: {statement: Triage}
tools: [{id: logs, kind: function, sideEffect: read}]
orchestration: {mode: adaptive}
"""
)


async def adaptive_blocked(engine: WorkflowEngine) -> None:
    files = {"comet/skill.yaml": ADAPTIVE.encode(), "comet/guardrails.yaml": GUARDRAILS.encode()}
    await engine.start(SkillPackage(name="flow", files=files), run_id="a1")
    run = await engine.propose("a1", Action(type="call_tool", ref="logs"))
    run = await engine.resume("a1", answer(run, "failed"))
    assert run.blocked is not None and run.blocked.kind == "retries"


async def test_an_adaptive_run_blocked_by_retries_takes_no_new_proposal(engine: WorkflowEngine) -> None:
    await adaptive_blocked(engine)
    with pytest.raises(RunStateError, match="retries, skips or aborts"):
        await engine.propose("a1", Action(type="call_tool", ref="logs"))


async def test_an_adaptive_retry_reissues_the_action(engine: WorkflowEngine) -> None:
    await adaptive_blocked(engine)
    run = await engine.resolve("a1", "retry")
    assert run.pending is not None and (run.pending.action.ref, run.pending.attempt) == ("logs", 1)


async def test_comet_names_cover_every_status_and_event(engine: WorkflowEngine) -> None:
    statuses: tuple[RunStatus, ...] = ("running", "waiting", "blocked", "completed", "failed", "cancelled")
    assert set(COMET_STATUSES) == set(statuses)
    run = await engine.start(await example("release-notes"), run_id="names")
    assert {e.type for e in await engine.events(run.run_id)} <= set(COMET_EVENTS)


async def test_a_damaged_trajectory_raises_run_record_corrupt(engine: WorkflowEngine) -> None:
    await start(engine)
    await engine._store.filesystem.append(".harness/runs/c1/trajectory.jsonl", b"[1, 2]\n")
    with pytest.raises(RunRecordCorrupt, match="trajectory.jsonl has an unreadable line 3"):
        await engine.events("c1")


def test_problems_in_evals_yaml_are_reported_at_evals_yaml() -> None:
    twice = EVALS + "  - {id: built, scope: completion, type: state_equals, field: vars.built, equals: true}\n"
    _, problems = check_workflow(comet(extra={"comet/evals.yaml": twice}), name="flow")
    assert [p.location for p in problems if "built" in p.message and p.severity == "error"] == ["comet/evals.yaml"]


async def test_side_files_follow_the_run_when_the_package_asks_for_them(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("change-proposal"), run_id="p1", inputs={"change": "cache"})
    folder = ".harness/runs/p1"
    fs = engine._store.filesystem
    checkpoint = json.loads(await fs.read_bytes(f"{folder}/checkpoint.json"))
    assert (checkpoint["status"], checkpoint["currentStep"], checkpoint["action"]["step"]) == (
        "running",
        "open",
        "open",
    )
    run = await engine.resume("p1", answer(run, "failed", summary="no proposal yet"))
    checkpoint = json.loads(await fs.read_bytes(f"{folder}/checkpoint.json"))
    assert (checkpoint["revision"], checkpoint["action"]["attempt"]) == (run.revision, 2)
    context = (await fs.read_bytes(f"{folder}/context.md")).decode()
    assert context.startswith("# change-proposal — run p1\n") and "- current step: open" in context
    assert '- `change`: "cache"' in context
    await engine.cancel("p1")
    assert json.loads(await fs.read_bytes(f"{folder}/checkpoint.json"))["status"] == "aborted"


async def test_no_side_files_unless_asked(engine: WorkflowEngine) -> None:
    await start(engine)
    assert not await engine._store.filesystem.exists(".harness/runs/c1/checkpoint.json")


def test_an_unknown_side_file_is_an_error() -> None:
    files = comet()
    files["comet/skill.yaml"] += b"sideFiles: [notes.txt]\n"
    _, problems = check_workflow(files, name="flow")
    assert any(p.message.startswith("sideFiles[0] names 'notes.txt'; the side files are") for p in problems)


async def test_a_comet_package_runs_unchanged_statuses_and_trajectory(engine: WorkflowEngine) -> None:
    """Names list, evals.yaml, a step check after each outcome, retry exhaustion, an operator retry."""
    package = await example("change-proposal")
    assert (
        "comet/evals.yaml" in package.files
        and b"skills: [comet-open, comet-design]" in package.files["comet/skill.yaml"]
    )
    statuses = []
    run = await engine.start(package, run_id="cp", inputs={"change": "cache"})
    statuses.append(comet_status(run))
    run = await engine.resume("cp", answer(run, "failed"))  # the open step's check runs, and fails
    await engine.write_artifact("cp", "proposal.md", b"# Cache\n")
    run = await engine.resume("cp", answer(run))
    run = await engine.resume("cp", answer(run))
    run = await engine.resume("cp", answer(run, "failed", summary="lint"))
    run = await engine.resume("cp", answer(run, "failed", summary="lint"))
    statuses.append(comet_status(run))
    assert run.reason == "step 'verify' failed after 2 attempt(s): lint"
    run = await engine.resolve("cp", "retry", note="fixed")
    statuses.append(comet_status(run))
    run = await engine.resume("cp", answer(run, state={"verified": True}))
    statuses.append(comet_status(run))
    assert statuses == ["running", "blocked", "running", "succeeded"]
    trajectory = [comet_event(e)["type"] for e in await engine.events("cp")]
    assert trajectory == [
        "run.started",
        "action.proposed",
        "action.completed",
        "evals.evaluated",
        "step.retried",
        "action.proposed",
        "action.completed",
        "evals.evaluated",
        "step.completed",
        "action.proposed",
        "action.completed",
        "step.completed",
        "action.proposed",
        "action.completed",
        "step.retried",
        "action.proposed",
        "action.completed",
        "run.blocked",
        "run.resolved",
        "action.proposed",
        "action.completed",
        "step.completed",
        "run.succeeded",
    ]

"""Runs end to end through a real filesystem (host folder and remote store)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable

import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, PathEscapeError
from harness.engine import (
    Action,
    ChecksFailed,
    Outcome,
    OutcomeConflict,
    RunConflict,
    RunExists,
    RunNotFound,
    RunStateError,
    SkillPackage,
    SnapshotIntegrityError,
    UpgradeRefused,
    WorkflowEngine,
    action_id,
)

from .conftest import ScriptedExecutor, answer, example

RETRY_WORKFLOW = """\
goal: {statement: Build the thing}
tools:
  - {id: build, kind: function, side_effect: write}
  - {id: notify, kind: function, side_effect: external}
orchestration:
  mode: deterministic
  entry: build
  steps:
    - id: build
      action: {type: call_tool, ref: build}
      next: done
      %s
    - id: done
      action: {type: checkpoint}
    - id: rescue
      action: {type: call_tool, ref: notify}
"""


async def test_review_workflow_routes_failed_qa_back_to_generation(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("code-review"), run_id="review-1", inputs={"change": "HEAD"})
    assert (run.status, run.current_step) == ("running", "gather")
    assert run.pending is not None and run.pending.id == action_id("review-1", 1, "gather")
    run = await engine.resume("review-1", answer(run, summary="diff collected"))
    run = await engine.resume("review-1", answer(run, artifacts={"review": "artifacts/review.md"}))
    assert run.current_step == "qa"
    run = await engine.resume("review-1", answer(run, "failed", summary="tone too harsh"))
    assert (run.current_step, run.pending and run.pending.attempt) == ("generate", 1)
    run = await engine.resume("review-1", answer(run, summary="redrafted"))
    run = await engine.resume("review-1", answer(run, state={"qa_passed": True}))
    assert (run.status, run.current_step) == ("waiting", "approve")
    assert (await engine.check("review-1", "progress")).passed
    run = await engine.resume("review-1", answer(run, summary="yes, post it"))
    assert run.status == "blocked" and run.blocked is not None
    assert run.blocked.kind == "confirmation"
    run = await engine.resume("review-1", confirm=run.blocked.action.id)
    assert (run.status, run.current_step) == ("running", "post")
    assert (await engine.check("review-1", "completion")).failed == ("posted",)
    run = await engine.resume("review-1", answer(run, state={"posted": True}))
    assert run.status == "completed"
    path = [h.from_step for h in run.handoffs]
    assert path == ["gather", "generate", "qa", "generate", "qa", "approve", "post"]
    assert run.handoffs[2].to_step == "generate" and run.handoffs[2].status == "failed"
    assert run.handoffs[5].open_confirmations == (run.confirmations[0],)
    events = await engine.events("review-1")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "run_completed"
    assert [e.seq for e in await engine.events("review-1", since=len(events) - 2)] == [
        len(events) - 1,
        len(events),
    ]


async def test_step_completion_check_failure_counts_as_failed_outcome(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("code-review"), run_id="review-2")
    run = await engine.resume("review-2", answer(run))
    run = await engine.resume("review-2", answer(run, summary="forgot the artifact"))
    assert (run.current_step, run.pending and run.pending.attempt) == ("generate", 2)
    assert "checks_failed" in [e.type for e in await engine.events("review-2")]


async def test_artifact_file_satisfies_artifact_check(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("code-review"), run_id="review-3")
    run = await engine.resume("review-3", answer(run))
    assert await engine.write_artifact("review-3", "review", b"# Review\n") == "artifacts/review"
    run = await engine.resume("review-3", answer(run))
    assert run.current_step == "qa"
    assert await engine.read_artifact("review-3", "./review") == b"# Review\n"


@pytest.mark.parametrize("bad", ["/etc/passwd", "~/x", "C:/x", "a/../../x", "..", "a\\..\\b"])
async def test_run_relative_paths_refuse_escapes(engine: WorkflowEngine, bad: str) -> None:
    await engine.start(await example("code-review"), run_id="paths")
    with pytest.raises(PathEscapeError):
        await engine.write_artifact("paths", bad, b"x")


async def test_symlink_leaving_the_run_folder_is_refused(local_fs: LocalFilesystem) -> None:
    engine = WorkflowEngine(local_fs)
    await engine.start(await example("code-review"), run_id="links")
    artifacts = local_fs.root / ".harness" / "runs" / "links" / "artifacts"
    artifacts.mkdir(parents=True)
    (local_fs.root / "secret.txt").write_text("secret")
    (artifacts / "leak").symlink_to(local_fs.root / "secret.txt")
    with pytest.raises(PathEscapeError):
        await engine.read_artifact("links", "leak")


async def test_tool_outside_guardrails_blocks_until_upgrade(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    body = RETRY_WORKFLOW % ""
    narrow = make_skill("builder", {"workflow.yaml": body, "guardrails.yaml": "allowed_tools: [notify]\n"})
    run = await engine.start(await SkillPackage.from_directory(narrow), run_id="g1")
    assert run.status == "blocked" and run.blocked is not None
    assert run.blocked.kind == "guardrail" and "'build' is not allowed" in run.blocked.reason
    with pytest.raises(RunStateError, match="cannot lift"):
        await engine.resume("g1", confirm=run.blocked.action.id)
    with pytest.raises(RunStateError, match="no action waits"):
        await engine.resume("g1", Outcome(status="succeeded"))
    widened = make_skill("builder", {"workflow.yaml": body})
    run = await engine.upgrade("g1", await SkillPackage.from_directory(widened))
    assert (run.status, run.pending and run.pending.id) == ("running", action_id("g1", 1, "build"))
    assert "run_upgraded" in [e.type for e in await engine.events("g1")]


async def test_confirmation_is_bound_to_the_action_id(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill(
        "confirmed",
        {
            "workflow.yaml": RETRY_WORKFLOW % "",
            "guardrails.yaml": "confirmation_required_for: [build]\nmax_retries_per_action: 1\n",
        },
    )
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="c1")
    assert run.blocked is not None and run.blocked.kind == "confirmation"
    first = run.blocked.action.id
    with pytest.raises(RunStateError):
        await engine.resume("c1", confirm="0000000000000000")
    run = await engine.resume("c1", confirm=first)
    assert run.status == "running" and run.confirmations == (first,)
    assert await engine.resume("c1", confirm=first) == run  # giving it again changes nothing
    run = await engine.resume("c1", answer(run, "failed"))
    assert run.status == "blocked" and run.blocked is not None
    assert run.blocked.action.id != first  # the retry is a new action: it needs its own confirmation


async def test_retry_exhaustion_goes_to_on_failure(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill(
        "rescued",
        {"workflow.yaml": RETRY_WORKFLOW % "on_failure: rescue", "guardrails.yaml": "max_retries_per_action: 2\n"},
    )
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="r1")
    attempts = []
    while run.current_step == "build":
        assert run.pending is not None
        attempts.append(run.pending.attempt)
        run = await engine.resume("r1", answer(run, "failed", summary="compiler error"))
    assert attempts == [1, 2, 3]
    assert run.current_step == "rescue"
    run = await engine.resume("r1", answer(run))
    assert run.status == "completed"


async def test_retry_exhaustion_without_on_failure_blocks_the_run_with_the_reason(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill(
        "fragile", {"workflow.yaml": RETRY_WORKFLOW % "", "guardrails.yaml": "max_retries_per_action: 0\n"}
    )
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="r2")
    run = await engine.resume("r2", answer(run, "failed", summary="disk full"))
    assert run.status == "blocked" and run.blocked is not None and run.blocked.kind == "retries"
    assert run.reason == run.blocked.reason == "step 'build' failed after 1 attempt(s): disk full"


async def test_max_iterations_blocks_the_run(engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]) -> None:
    skill = make_skill("short", {"workflow.yaml": RETRY_WORKFLOW % "", "guardrails.yaml": "max_iterations: 2\n"})
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="it")
    run = await engine.resume("it", answer(run, "failed"))
    run = await engine.resume("it", answer(run, "failed"))
    assert run.status == "blocked" and run.blocked is not None and run.blocked.kind == "iterations"
    run = await engine.cancel("it", "giving up")
    assert (run.status, run.reason) == ("cancelled", "giving up")
    assert await engine.cancel("it") == run


async def test_duplicate_outcome_is_a_no_op_and_conflicting_one_is_refused(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("code-review"), run_id="dup")
    first = answer(run, summary="diff collected")
    after = await engine.resume("dup", first)
    assert await engine.resume("dup", first) == after
    with pytest.raises(OutcomeConflict, match="different content"):
        await engine.resume("dup", Outcome(status="failed", outcome_id=first.outcome_id))
    with pytest.raises(OutcomeConflict, match="already has outcome"):
        await engine.resume("dup", Outcome(status="succeeded", outcome_id="other", action_id=first.action_id))
    assert (await engine.inspect("dup")).revision == after.revision


async def test_snapshot_tampering_is_detected(local_fs: LocalFilesystem) -> None:
    engine = WorkflowEngine(local_fs)
    run = await engine.start(await example("code-review"), run_id="tamper")
    snapshot = local_fs.root / ".harness" / "skill-snapshots" / run.snapshot
    script = snapshot / "files" / "scripts" / "fetch_diff.py"
    script.write_text(script.read_text() + "\nimport os; os.system('curl evil')\n")
    with pytest.raises(SnapshotIntegrityError, match="scripts/fetch_diff.py"):
        await engine.resume("tamper")
    script.unlink()
    with pytest.raises(SnapshotIntegrityError, match="missing"):
        await engine.inspect("tamper")
    manifest = snapshot / "manifest.json"
    data = json.loads(manifest.read_text())
    data["definition"]["guardrails"]["max_iterations"] = 999
    manifest.write_text(json.dumps(data))
    with pytest.raises(SnapshotIntegrityError, match="manifest"):
        await engine.inspect("tamper")


async def test_run_is_pinned_to_its_snapshot(engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]) -> None:
    skill = make_skill("pinned", {"workflow.yaml": RETRY_WORKFLOW % ""})
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="pin")
    (skill / "workflow.yaml").write_text((RETRY_WORKFLOW % "").replace("next: done", "next: rescue"))
    run = await engine.resume("pin", answer(run))
    assert run.current_step == "done"


async def test_upgrade_guards(engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]) -> None:
    skill = make_skill("upgradable", {"workflow.yaml": RETRY_WORKFLOW % "", "guardrails.yaml": "allowed_tools: []\n"})
    original = await SkillPackage.from_directory(skill)
    run = await engine.start(original, run_id="up")
    assert run.status == "blocked"
    other_name = make_skill("other", {"workflow.yaml": RETRY_WORKFLOW % ""})
    with pytest.raises(UpgradeRefused, match="skill 'other'"):
        await engine.upgrade("up", await SkillPackage.from_directory(other_name))
    adaptive = make_skill(
        "upgradable",
        {
            "workflow.yaml": "goal: {statement: x}\ntools: [{id: build, kind: function, side_effect: write}]\norchestration: {mode: adaptive}\n"
        },
    )
    with pytest.raises(UpgradeRefused, match="adaptive"):
        await engine.upgrade("up", await SkillPackage.from_directory(adaptive))
    no_step = make_skill(
        "upgradable",
        {
            "workflow.yaml": (RETRY_WORKFLOW % "")
            .replace("    - id: build\n", "    - id: compile\n")
            .replace("entry: build", "entry: compile")
        },
    )
    with pytest.raises(UpgradeRefused, match="no step 'build'"):
        await engine.upgrade("up", await SkillPackage.from_directory(no_step))
    fixed = make_skill("upgradable", {"workflow.yaml": RETRY_WORKFLOW % ""})
    run = await engine.upgrade("up", await SkillPackage.from_directory(fixed))
    assert run.status == "running"
    with pytest.raises(UpgradeRefused, match="pending"):
        await engine.upgrade("up", original)
    assert (await engine.upgrade("up", await SkillPackage.from_directory(fixed))).revision == run.revision


ADAPTIVE = """\
name: triage
goal: {statement: Triage the incident}
skills: [{id: diagnose}]
tools:
  - {id: logs, kind: function, side_effect: read}
  - {id: page, kind: function, side_effect: external}
orchestration: {mode: adaptive}
"""


async def test_adaptive_run_completes(engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]) -> None:
    skill = make_skill(
        "triage",
        {
            "workflow.yaml": ADAPTIVE,
            "guardrails.yaml": "allowed_tools: [logs]\n",
            "checks.yaml": "checks:\n  - {id: cause, type: state_equals, scope: completion, field: vars.cause_found, equals: true}\n",
        },
    )
    run = await engine.start(await SkillPackage.from_directory(skill), run_id="ad")
    assert (run.status, run.pending) == ("running", None)
    run = await engine.propose("ad", Action(type="call_tool", ref="logs", args={"since": "1h"}), label="read-logs")
    assert run.pending is not None and run.pending.id == action_id("ad", 1, "read-logs")
    with pytest.raises(RunStateError, match="still waits"):
        await engine.propose("ad", Action(type="checkpoint"))
    run = await engine.resume("ad", answer(run, summary="OOM in worker"))
    with pytest.raises(ChecksFailed) as caught:
        await engine.propose("ad", Action(type="complete"))
    assert caught.value.failed == ("cause",)
    run = await engine.propose("ad", Action(type="call_tool", ref="page"))
    assert run.status == "blocked" and run.blocked is not None and "'page' is not allowed" in run.blocked.reason
    run = await engine.propose("ad", Action(type="call_tool", ref="logs"), allowed_tools=("logs", "page"))
    assert run.blocked is not None and "widen" in run.blocked.reason
    run = await engine.propose("ad", Action(type="invoke_skill", ref="diagnose"))
    run = await engine.resume("ad", answer(run, state={"cause_found": True}))
    run = await engine.propose("ad", Action(type="complete", note="root cause: OOM"))
    assert run.status == "completed"
    assert [h.from_step for h in run.handoffs] == ["read-logs", "invoke_skill"]


async def test_adaptive_repeated_failures_block_the_run(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill("triage", {"workflow.yaml": ADAPTIVE, "guardrails.yaml": "max_retries_per_action: 1\n"})
    await engine.start(await SkillPackage.from_directory(skill), run_id="ad2")
    for _ in range(2):
        run = await engine.propose("ad2", Action(type="call_tool", ref="logs"))
        run = await engine.resume("ad2", answer(run, "failed"))
    assert run.status == "blocked" and run.blocked is not None and run.blocked.kind == "retries"
    assert "call_tool:logs" in (run.reason or "")


async def test_comet_package_runs_end_to_end(engine: WorkflowEngine) -> None:
    run = await engine.start(await example("release-notes"), run_id="rel", inputs={"version": "2.1.0"})
    workflow = await engine.workflow("rel")
    assert (workflow.format, workflow.guardrails.max_iterations) == ("comet", 12)
    executor = ScriptedExecutor(
        {
            "collect-commits": [Outcome(status="succeeded", summary="12 commits")],
            "notes-writer": [Outcome(status="succeeded", artifacts={"notes.md": "artifacts/notes.md"})],
            "publish-notes": [Outcome(status="succeeded", state={"published": True})],
        }
    )
    run = await engine.run_until_blocked("rel", executor)
    assert (run.status, run.current_step) == ("waiting", "edit")
    assert run.pending is not None and run.pending.action.to == "editor"
    run = await engine.resume("rel", answer(run, summary="edited"))
    run = await engine.run_until_blocked("rel", executor)
    assert run.status == "blocked" and run.blocked is not None
    run = await engine.resume("rel", confirm=run.blocked.action.id)
    run = await engine.run_until_blocked("rel", executor)
    assert run.status == "completed"
    assert [c[0] for c in executor.calls] == ["collect-commits", "notes-writer", "publish-notes"]
    assert executor.calls[1][1] == ("collect-commits", "publish-notes")


async def test_executor_exception_becomes_a_failed_outcome(
    engine: WorkflowEngine, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill(
        "crashy", {"workflow.yaml": RETRY_WORKFLOW % "", "guardrails.yaml": "max_retries_per_action: 0\n"}
    )
    await engine.start(await SkillPackage.from_directory(skill), run_id="ex")
    run = await engine.run_until_blocked("ex", ScriptedExecutor({}))
    assert run.status == "blocked" and "AssertionError: no scripted outcome left" in (run.reason or "")


async def test_run_ids_are_unique_and_checked(engine: WorkflowEngine) -> None:
    package = await example("code-review")
    await engine.start(package, run_id="once")
    with pytest.raises(RunExists):
        await engine.start(package, run_id="once")
    with pytest.raises(ValueError):
        await engine.start(package, run_id="../escape")
    with pytest.raises(RunNotFound):
        await engine.inspect("never")


async def test_runs_live_in_the_users_scope(filesystem: AbstractFilesystem) -> None:
    base = WorkflowEngine(filesystem)
    await base.for_user("alice").start(await example("code-review"), run_id="mine")
    assert await filesystem.exists(".harness/runs/mine/run.json") is False
    assert await filesystem.scoped("alice").exists(".harness/runs/mine/run.json")
    with pytest.raises(RunNotFound):
        await base.for_user("bob").inspect("mine")


async def test_state_files_carry_schema_version(filesystem: AbstractFilesystem) -> None:
    engine = WorkflowEngine(filesystem)
    run = await engine.start(await example("code-review"), run_id="sv")
    record = json.loads(await filesystem.read_bytes(".harness/runs/sv/run.json"))
    lines = (await filesystem.read_bytes(".harness/runs/sv/trajectory.jsonl")).splitlines()
    manifest = json.loads(await filesystem.read_bytes(f".harness/skill-snapshots/{run.snapshot}/manifest.json"))
    assert record["schema_version"] == manifest["schema_version"] == 1
    assert all(json.loads(line)["schema_version"] == 1 for line in lines)


async def test_stale_writer_loses_the_compare_and_set(local_fs: LocalFilesystem) -> None:
    engine = WorkflowEngine(local_fs)
    run = await engine.start(await example("code-review"), run_id="cas")
    stale = await engine._load("cas")  # a second process that read the same revision
    await engine.resume("cas", answer(run))
    from harness.engine import transitions

    changed = transitions.cancel(stale.workflow, stale.run, "late", now="t")
    with pytest.raises(RunConflict):
        await engine._commit(stale, changed)
    assert (await engine.inspect("cas")).current_step == "generate"

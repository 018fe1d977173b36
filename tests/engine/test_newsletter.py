"""The newsletter group example driven by an application through the engine: five stages, a
QA loop, a schema mismatch that retries, a confirmed publish, a final artifact, a resubmitted
outcome that changes nothing, and a process killed mid-run that another process finishes."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from filesystems import LocalFilesystem
from harness.engine import Event, Outcome, OutcomeRefused, WorkflowEngine
from tests.support.cli import run_python

from .newsletter import SECOND_DRAFT, TRAJECTORY, drive, package, report

DRIVER = str(pathlib.Path(__file__).with_name("newsletter_driver.py"))


def proposed_steps(events: list[Event]) -> list[str]:
    return [e.data["step_id"] for e in events if e.type == "action_proposed"]


async def test_the_application_drives_the_group_to_a_published_issue(engine: WorkflowEngine) -> None:
    run = await drive(engine, "n1")
    events = await engine.events("n1")
    assert (run.status, run.domain_state) == ("completed", "published")
    assert proposed_steps(events) == TRAJECTORY
    refused = [e.data for e in events if e.type == "handoff_refused"]
    assert [r["reason"] for r in refused] == ["it produced schema 'draft/v1', but it declares produces 'draft/v2'"]
    states = [(e.data["from_state"], e.data["to_state"]) for e in events if e.type == "state_changed"]
    assert states == [
        ("received", "briefed"),
        ("briefed", "planned"),
        ("planned", "drafted"),
        ("drafted", "rejected"),
        ("rejected", "drafted"),
        ("drafted", "approved"),
        ("approved", "published"),
    ]
    assert [h.schema_version for h in run.handoffs] == [
        "brief/v1",
        "outline/v1",
        "draft/v2",
        "review/v1",
        "draft/v2",
        "review/v1",
        None,
    ]
    assert [e.type for e in events].count("confirmation_given") == 1
    issue = run.artifacts["issue"]
    assert (await engine.read_artifact("n1", issue.removeprefix("artifacts/"))).decode() == SECOND_DRAFT


async def test_the_schema_mismatch_is_retried_with_a_message_naming_both_versions(engine: WorkflowEngine) -> None:
    await drive(engine, "n1")
    retried = [e.data for e in await engine.events("n1") if e.type == "step_retried"]
    assert retried == [
        {
            "step_id": "generate",
            "attempt": 2,
            "reason": "step 'generate' failed after 1 attempt(s): it produced schema 'draft/v1', "
            "but it declares produces 'draft/v2'",
        }
    ]


async def test_a_resubmitted_outcome_is_a_no_op(engine: WorkflowEngine) -> None:
    run = await engine.start(await package(), run_id="n1", inputs={"request": "x"})
    assert run.pending is not None
    outcome = Outcome(outcome_id="intake-1", action_id=run.pending.id, **report("intake", 1, {"request": "x"}))
    after = await engine.resume("n1", outcome)
    again = await engine.resume("n1", outcome)
    assert again == after and again.current_step == "plan"
    assert [e.type for e in await engine.events("n1")].count("outcome_recorded") == 1


async def test_the_final_issue_cannot_be_replaced(engine: WorkflowEngine) -> None:
    run = await drive(engine, "n1")
    issue = run.artifacts["issue"].removeprefix("artifacts/")
    with pytest.raises(OutcomeRefused, match="is final and already written"):
        await engine.write_artifact("n1", issue, b"defaced")
    assert (await engine.read_artifact("n1", issue)).decode() == SECOND_DRAFT


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python(DRIVER, *args)


def _stored(workspace: pathlib.Path) -> list[dict[str, object]]:
    path = workspace / ".harness" / "runs" / "n1" / "trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
async def test_a_process_killed_mid_run_is_finished_by_another(tmp_path: pathlib.Path) -> None:
    clean = _child(str(tmp_path / "clean"), "0")
    assert clean.returncode == 0, clean.stderr
    writes = int(clean.stdout)
    expected = [e["type"] for e in _stored(tmp_path / "clean")]
    # A spread of kill points: snapshot, creation, mid-loop, around the confirmation, the end.
    for kill_at in sorted({1, 3, writes // 4, writes // 2, (3 * writes) // 4, writes - 2, writes}):
        workspace = tmp_path / f"killed-{kill_at}"
        killed = _child(str(workspace), str(kill_at))
        assert killed.returncode == -9, (kill_at, killed.stderr)
        async with LocalFilesystem(workspace) as fs:
            run = await drive(WorkflowEngine(fs), "n1")
        stored = _stored(workspace)
        assert run.status == "completed" and run.domain_state == "published", kill_at
        assert [e["type"] for e in stored] == expected, kill_at
        assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1)), kill_at
        issues = list((workspace / ".harness" / "runs" / "n1" / "artifacts").glob("issue-*.md"))
        assert len(issues) == 1, kill_at

"""A Comet-format package runs unchanged under ``harness engine`` (as commands)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from tests.engine.test_cli import harness as engine

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "workflows" / "change-proposal"


def report(workspace: pathlib.Path, status: str, *extra: str) -> dict[str, Any]:
    done = engine(workspace, "continue", "--run-id", "p1", "--status", status, "--summary", status, *extra, "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def trajectory(workspace: pathlib.Path) -> list[dict[str, Any]]:
    path = workspace / "alice" / ".harness" / "runs" / "p1" / "trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_comet_package_runs_unchanged_through_retry_exhaustion_and_an_operator_retry(tmp_path: pathlib.Path) -> None:
    started = engine(tmp_path, "run", str(EXAMPLE), "--run-id", "p1", "--input", "change=cache", "--json")
    assert started.returncode == 0, started.stderr
    assert "warning" not in started.stderr
    run = json.loads(started.stdout)
    assert (run["status"], run["current_step"]) == ("running", "open")
    snapshots = list((tmp_path / "alice" / ".harness" / "skill-snapshots").glob("*/files/comet/evals.yaml"))
    assert len(snapshots) == 1  # evals.yaml is part of the frozen package

    run = report(tmp_path, "failed")  # the open step's check runs after this failure too
    assert (run["current_step"], run["pending"]["attempt"]) == ("open", 2)
    artifacts = tmp_path / "alice" / ".harness" / "runs" / "p1" / "artifacts"
    artifacts.mkdir(parents=True)
    (artifacts / "proposal.md").write_text("# Cache\n")
    run = report(tmp_path, "succeeded")
    assert run["current_step"] == "design"
    run = report(tmp_path, "succeeded")
    run = report(tmp_path, "failed")
    run = report(tmp_path, "failed")  # maxRetriesPerAction: 1 spent
    assert (run["status"], run["blocked"]["kind"]) == ("blocked", "retries")
    assert run["reason"] == "step 'verify' failed after 2 attempt(s): failed"
    assert run["comet"]["status"] == "blocked" and "--retry" in run["next"]

    retried = engine(tmp_path, "continue", "--run-id", "p1", "--retry", "--summary", "runner fixed", "--json")
    assert retried.returncode == 0, retried.stderr
    run = json.loads(retried.stdout)
    assert (run["status"], run["current_step"], run["pending"]["attempt"]) == ("running", "verify", 1)
    run = report(tmp_path, "succeeded", "--state", "verified=true")
    assert run["status"] == "completed" and run["comet"]["status"] == "succeeded"

    events = trajectory(tmp_path)
    checks = [e["data"] for e in events if e["type"] == "checks_evaluated"]
    assert [(c["step_id"], c["outcome"], c["passed"]) for c in checks] == [
        ("open", "failed", False),
        ("open", "succeeded", True),
    ]
    decisions = [e["data"] for e in events if e["type"] == "operator_decision"]
    assert [(d["step_id"], d["decision"], d["note"]) for d in decisions] == [("verify", "retry", "runner fixed")]
    assert [e["type"] for e in events][-3:] == ["outcome_recorded", "step_completed", "run_completed"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_show_format_comet_speaks_comets_status_and_event_names(tmp_path: pathlib.Path) -> None:
    assert engine(tmp_path, "run", str(EXAMPLE), "--run-id", "p1").returncode == 0
    assert engine(tmp_path, "cancel", "--run-id", "p1").returncode == 0
    shown = engine(tmp_path, "show", "--run-id", "p1", "--format", "comet")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert (document["runId"], document["status"]) == ("p1", "aborted")
    assert [e["type"] for e in document["events"]] == ["run.started", "action.proposed", "run.aborted"]


def test_retry_decision_on_a_run_that_is_not_blocked_is_a_clean_error(tmp_path: pathlib.Path) -> None:
    assert engine(tmp_path, "run", str(EXAMPLE), "--run-id", "p1").returncode == 0
    refused = engine(tmp_path, "continue", "--run-id", "p1", "--skip")
    assert refused.returncode == 1
    assert "exhausted retry budget" in refused.stderr and "Traceback" not in refused.stderr

"""``harness engine ...`` as commands in processes of their own (``run_harness``)."""

from __future__ import annotations

import json
import pathlib
import subprocess

from tests.support.cli import HARNESS, run_harness

from .conftest import EXAMPLES


def harness(workspace: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_harness("engine", *args, "--workspace", str(workspace), "--user", "alice", timeout=60)


def test_cli_drives_the_review_workflow_to_completion(tmp_path: pathlib.Path) -> None:
    started = harness(tmp_path, "run", str(EXAMPLES / "code-review"), "--run-id", "cli", "--json")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)
    assert (run["status"], run["current_step"]) == ("running", "gather")
    assert "--outcome-id" in run["next"]
    assert (tmp_path / "alice" / ".harness" / "runs" / "cli" / "run.json").is_file()
    steps = [
        ("succeeded", []),
        ("succeeded", ["--artifact", "review=artifacts/review.md"]),
        ("succeeded", ["--state", "qa_passed=true"]),
        ("succeeded", []),
    ]
    for status, extra in steps:
        action = run["pending"]["id"]
        done = harness(
            tmp_path,
            "continue",
            "--run-id",
            "cli",
            "--status",
            status,
            "--summary",
            "ok",
            "--outcome-id",
            action,
            *extra,
            "--json",
        )
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)
    assert run["status"] == "blocked"
    shown = harness(tmp_path, "show", "--run-id", "cli")
    assert "Next: call_tool post-comment requires confirmation" in shown.stdout
    assert f"--confirm {run['blocked']['action']['id']}" in shown.stdout
    confirmed = harness(tmp_path, "continue", "--run-id", "cli", "--confirm", run["blocked"]["action"]["id"])
    assert "running at step post" in confirmed.stdout
    check = harness(tmp_path, "check", "--run-id", "cli", "--scope", "completion")
    assert check.returncode == 1 and "FAIL  posted" in check.stdout and "Next:" in check.stdout
    pending = json.loads(harness(tmp_path, "show", "--run-id", "cli", "--json").stdout)["pending"]["id"]
    outcome = ("--status", "succeeded", "--summary", "posted", "--outcome-id", pending, "--state", "posted=true")
    final = harness(tmp_path, "continue", "--run-id", "cli", *outcome)
    assert final.returncode == 0 and "completed" in final.stdout and "Next: nothing" in final.stdout
    again = harness(tmp_path, "continue", "--run-id", "cli", *outcome)
    assert again.returncode == 0, again.stderr  # resubmitting the same outcome is a no-op
    assert harness(tmp_path, "check", "--run-id", "cli", "--scope", "completion").returncode == 0
    events = harness(tmp_path, "show", "--run-id", "cli", "--events")
    assert "run_completed" in events.stdout


def test_cli_reports_errors_with_exit_codes(tmp_path: pathlib.Path) -> None:
    missing = harness(tmp_path, "show", "--run-id", "nope")
    assert missing.returncode == 1 and "no run 'nope'" in missing.stderr
    bad_skill = tmp_path / "bad"
    bad_skill.mkdir()
    (bad_skill / "workflow.yaml").write_text("goal: {statement: x}\norchestration: {mode: nonsense}\n")
    invalid = harness(tmp_path, "run", str(bad_skill))
    assert invalid.returncode == 2
    assert "workflow.yaml: orchestration.mode must be one of deterministic, adaptive" in invalid.stderr
    usage = subprocess.run([HARNESS, "engine", "continue"], capture_output=True, text=True)
    assert usage.returncode == 2


def test_cli_reports_group_contracts_and_refuses_what_breaks_them(tmp_path: pathlib.Path) -> None:
    newsletter = str(EXAMPLES / "newsletter")
    missing = harness(tmp_path, "run", newsletter, "--run-id", "n0")
    assert missing.returncode == 1 and "step 'intake' requires 'request', which is not set" in missing.stderr
    assert harness(tmp_path, "run", newsletter, "--run-id", "n1", "--input", "request=2.0").returncode == 0
    brief = ["--state", 'brief="b"', "--state", 'audience="users"']
    refused = harness(
        tmp_path, "continue", "--run-id", "n1", "--status", "succeeded", *brief, "--to-state", "published"
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "illegal transition 'received' -> 'published'" in refused.stderr
    done = harness(
        tmp_path,
        "continue",
        "--run-id",
        "n1",
        "--status",
        "succeeded",
        *brief,
        "--schema-version",
        "brief/v1",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert (run["current_step"], run["domain_state"], run["handoffs"][0]["schema_version"]) == (
        "plan",
        "briefed",
        "brief/v1",
    )

"""Damaged or foreign run records: what is wrong, which file, what to do — exit 1, no traceback."""

from __future__ import annotations

import pathlib
import subprocess

from tests.support.cli import run_harness

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "workflows" / "code-review"


def engine(workspace: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_harness("engine", *args, "--workspace", str(workspace), timeout=60)


def started(workspace: pathlib.Path) -> pathlib.Path:
    assert engine(workspace, "run", str(EXAMPLE), "--run-id", "r1").returncode == 0
    return workspace / ".harness" / "runs" / "r1"


def test_a_truncated_run_record_is_reported_with_its_file(tmp_path: pathlib.Path) -> None:
    folder = started(tmp_path)
    (folder / "run.json").write_text('{"run_id": "r1", ')
    shown = engine(tmp_path, "show", "--run-id", "r1")
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert ".harness/runs/r1/run.json" in shown.stderr and "not valid JSON" in shown.stderr
    assert "delete .harness/runs/r1/" in shown.stderr


def test_a_record_from_another_workspace_is_reported_as_foreign(tmp_path: pathlib.Path) -> None:
    other = started(tmp_path / "other")
    folder = tmp_path / "ws" / ".harness" / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_bytes((other / "run.json").read_bytes())
    shown = engine(tmp_path / "ws", "show", "--run-id", "r1")
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert "comes from another workspace" in shown.stderr and ".harness/engine.key" in shown.stderr


def test_a_damaged_trajectory_line_is_reported_with_its_file_and_line(tmp_path: pathlib.Path) -> None:
    folder = started(tmp_path)
    with (folder / "trajectory.jsonl").open("a") as trajectory:
        trajectory.write("{not json\n")
    shown = engine(tmp_path, "show", "--run-id", "r1", "--events")
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert ".harness/runs/r1/trajectory.jsonl has an unreadable line 3" in shown.stderr

"""Crash safety with real processes: SIGKILL at every write point, and two racing resumers."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Callable

import pytest

from filesystems import LocalFilesystem
from harness.engine import SkillPackage, WorkflowEngine
from tests.support.cli import run_python

from .crash_driver import drive

DRIVER = str(pathlib.Path(__file__).with_name("crash_driver.py"))
WORKFLOW = """\
goal: {statement: Build and deploy}
tools:
  - {id: compile, kind: function, side_effect: write}
  - {id: deploy, kind: function, side_effect: external, requires_confirmation: true}
orchestration:
  mode: deterministic
  entry: build
  steps:
    - {id: build, action: {type: call_tool, ref: compile}, next: ship}
    - {id: ship, action: {type: call_tool, ref: deploy}, next: done}
    - {id: done, action: {type: checkpoint}}
"""
CHECKS = "checks:\n  - {id: shipped, type: state_equals, scope: completion, field: vars.ship, equals: 1}\n"


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python(DRIVER, *args, timeout=60)


def _trajectory(workspace: pathlib.Path, run_id: str) -> list[dict[str, object]]:
    path = workspace / ".harness" / "runs" / run_id / "trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
async def test_sigkill_at_every_write_point_leaves_a_resumable_run(
    tmp_path: pathlib.Path, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill("deploy", {"workflow.yaml": WORKFLOW, "checks.yaml": CHECKS})
    clean = _child("drive", str(tmp_path / "clean"), str(skill), "run", "0")
    assert clean.returncode == 0, clean.stderr
    writes = int(clean.stdout)
    expected = [e["type"] for e in _trajectory(tmp_path / "clean", "run")]
    assert writes >= 12 and expected[-1] == "run_completed"
    for kill_at in range(1, writes + 1):
        workspace = tmp_path / f"killed-{kill_at}"
        killed = _child("drive", str(workspace), str(skill), "run", str(kill_at))
        assert killed.returncode == -9, (kill_at, killed.stderr)
        async with LocalFilesystem(workspace) as fs:
            engine = WorkflowEngine(fs)
            run = await drive(engine, skill, "run")
            events = await engine.events("run")
        assert run.status == "completed", kill_at
        assert dict(run.vars) == {"build": 2, "ship": 1, "done": 1}, kill_at
        stored = _trajectory(workspace, "run")
        assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1)), kill_at
        assert [e["type"] for e in stored] == expected == [e.type for e in events], kill_at


@pytest.mark.slow
async def test_two_processes_racing_to_resume_exactly_one_wins(
    tmp_path: pathlib.Path, make_skill: Callable[..., pathlib.Path]
) -> None:
    skill = make_skill("deploy", {"workflow.yaml": WORKFLOW})
    workspace = tmp_path / "ws"
    async with LocalFilesystem(workspace) as fs:
        start = await WorkflowEngine(fs).start(await SkillPackage.from_directory(skill), run_id="race")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    racers = [
        subprocess.Popen(
            [sys.executable, DRIVER, "race", str(workspace), "race", status, str(barrier)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for status in ("succeeded", "failed")
    ]
    results = [racer.communicate(timeout=60) for racer in racers]
    verdicts = [out.strip() for out, _ in results]
    assert sorted(verdicts) == ["lost RunConflict", "won"], results
    async with LocalFilesystem(workspace) as fs:
        run = await WorkflowEngine(fs).inspect("race")
    assert run.revision == start.revision + 1
    winner = ("succeeded", "failed")[verdicts.index("won")]
    assert run.current_step == ("ship" if winner == "succeeded" else "build")
    stored = _trajectory(workspace, "race")
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))

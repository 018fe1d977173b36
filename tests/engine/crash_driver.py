"""A child process that drives a workflow run, for the crash and race tests.

``crash_driver.py drive WORKSPACE SKILL RUN_ID KILL_AT`` drives the run to its end, killing
itself with SIGKILL just before its KILL_AT-th durable write (0 = never; it then prints the
number of writes it made). ``crash_driver.py race WORKSPACE RUN_ID STATUS BARRIER`` submits one
outcome for the pending action, waiting before its compare-and-set until every racer got there,
and prints ``won`` or ``lost <error class>``.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import time

import anyio

from filesystems import LocalFilesystem
from harness.engine import (
    EngineError,
    Outcome,
    Run,
    RunExists,
    RunNotFound,
    SkillPackage,
    WorkflowEngine,
)


async def drive(engine: WorkflowEngine, skill: pathlib.Path, run_id: str) -> Run:
    """Start (or pick up) the run and answer every action: ``build`` fails on its first attempt."""
    try:
        run = await engine.resume(run_id)
    except RunNotFound:
        try:
            run = await engine.start(await SkillPackage.from_directory(skill), run_id=run_id)
        except RunExists:
            run = await engine.resume(run_id)
    while not run.done:
        if run.blocked is not None:
            run = await engine.resume(run_id, confirm=run.blocked.action.id)
            continue
        assert run.pending is not None
        pending = run.pending
        failed = pending.step_id == "build" and pending.attempt == 1
        outcome = Outcome(
            status="failed" if failed else "succeeded",
            outcome_id=f"out-{pending.id}",
            action_id=pending.id,
            state={pending.step_id: pending.attempt},
        )
        run = await engine.resume(run_id, outcome)
    return run


async def _drive_and_die(workspace: str, skill: str, run_id: str, kill_at: int) -> None:
    writes = 0

    def before_write(point: str) -> None:
        nonlocal writes
        writes += 1
        if writes == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    async with LocalFilesystem(workspace) as fs:
        await drive(WorkflowEngine(fs, before_write=before_write), pathlib.Path(skill), run_id)
    print(writes)


async def _race(workspace: str, run_id: str, status: str, barrier: str) -> None:
    def before_write(point: str) -> None:
        if point != "run-update":
            return
        pathlib.Path(barrier, str(os.getpid())).touch()
        deadline = time.monotonic() + 20
        while len(os.listdir(barrier)) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)

    async with LocalFilesystem(workspace) as fs:
        engine = WorkflowEngine(fs, before_write=before_write)
        run = await engine.inspect(run_id)
        assert run.pending is not None
        outcome = Outcome(status=status, outcome_id=f"{status}-{os.getpid()}", action_id=run.pending.id)  # type: ignore[arg-type]
        try:
            await engine.resume(run_id, outcome)
        except EngineError as exc:
            print("lost", type(exc).__name__)
        else:
            print("won")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "drive":
        anyio.run(_drive_and_die, args[0], args[1], args[2], int(args[3]))
    else:
        anyio.run(_race, *args)

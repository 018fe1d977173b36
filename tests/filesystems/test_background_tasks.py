"""``BackgroundTasks``: the one way an owner runs work beside its caller, kept, supervised and
cancelled on close."""

from __future__ import annotations

import logging

import anyio
import pytest
from anyio.abc import TaskStatus

from filesystems import BackgroundTasks
from tests.support.polling import eventually


async def _forever() -> None:
    await anyio.sleep_forever()


async def test_a_task_runs_until_its_owner_closes_and_is_cancelled_then() -> None:
    began, cancelled = anyio.Event(), anyio.Event()

    async def work() -> None:
        began.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with BackgroundTasks() as tasks:
        tasks.start_soon(work, name="work")
        assert tasks.running == 1
        await began.wait()
    assert cancelled.is_set() and tasks.running == 0


async def test_a_crash_is_logged_with_the_task_name_and_ends_that_task_alone(caplog: pytest.LogCaptureFixture) -> None:
    async def crash() -> None:
        raise ValueError("boom")

    async with BackgroundTasks() as tasks:
        tasks.start_soon(_forever, name="steady")
        tasks.start_soon(crash, name="fragile")

        async def running() -> int:
            return tasks.running

        await eventually(running, lambda n: n == 1, what="the crashed task gone")
        await anyio.sleep(0)  # the caller is not cancelled by the crash
    [record] = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert record.levelno == logging.ERROR and "'fragile'" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


async def test_start_returns_once_the_task_reports_it_started() -> None:
    steps: list[str] = []

    async def ready(*, task_status: TaskStatus[None]) -> None:
        await anyio.sleep(0.01)
        steps.append("ready")
        task_status.started()
        await anyio.sleep_forever()

    async with BackgroundTasks() as tasks:
        await tasks.start(ready, name="ready")
        steps.append("started")
    assert steps == ["ready", "started"]


async def test_an_error_before_starting_is_raised_to_the_caller() -> None:
    async def broken(*, task_status: TaskStatus[None]) -> None:
        raise OSError("no watch")

    async with BackgroundTasks() as tasks:
        with pytest.raises(OSError, match="no watch"):
            await tasks.start(broken, name="broken")


async def test_grace_lets_a_stopping_task_finish_before_the_rest_is_cancelled() -> None:
    stop, finished = anyio.Event(), anyio.Event()

    async def polite() -> None:
        await stop.wait()
        await anyio.sleep(0.01)  # winding down takes a moment
        finished.set()

    tasks = BackgroundTasks(grace=0.5)
    tasks.start_soon(polite, name="polite")
    tasks.start_soon(_forever, name="stubborn")  # still running when the grace is up: cancelled
    stop.set()
    with anyio.fail_after(5):
        await tasks.aclose()
    assert finished.is_set() and tasks.running == 0


async def test_owners_may_close_in_any_order() -> None:
    first, second = BackgroundTasks(), BackgroundTasks()
    first.start_soon(_forever, name="first")
    second.start_soon(_forever, name="second")
    await first.aclose()  # not the last opened: no task group forces an order
    assert second.running == 1
    await second.aclose()


async def test_nothing_starts_after_close() -> None:
    tasks = BackgroundTasks()
    await tasks.aclose()
    with pytest.raises(RuntimeError, match="'late'.*closed"):
        tasks.start_soon(_forever, name="late")

"""Run one command in its own process group with an output cap and a timeout."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence

import anyio
from anyio.abc import ByteReceiveStream

from .base import CommandResult

__all__ = ["run_process"]


class _Capture:
    """Keeps the first ``limit`` bytes of a stream, draining the rest so the writer never blocks."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.truncated = False

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        async for chunk in stream:
            room = self._limit - self._kept
            if len(chunk) > room:
                self.truncated = True
                chunk = chunk[: max(room, 0)]
            if chunk:
                self._chunks.append(chunk)
                self._kept += len(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float | None,
    output_limit: int,
    user: int | None = None,
    group: int | None = None,
) -> CommandResult:
    """Run ``argv`` as the leader of a new session and collect a :class:`CommandResult`.

    At the timeout the whole process group is killed. When the leader exits, whatever it left
    running in its group is killed too, so no stray process keeps the output pipes open.
    """
    started = time.monotonic()
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        user=user,
        group=group,
        extra_groups=[] if user is not None else None,
    )
    stdout, stderr = _Capture(output_limit), _Capture(output_limit)
    timed_out = False
    try:
        with anyio.move_on_after(timeout) as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stdout.drain, process.stdout)
                tasks.start_soon(stderr.drain, process.stderr)
                await process.wait()
                _kill_group(process.pid)
        timed_out = scope.cancelled_caught
    finally:
        _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return CommandResult(
        exit_code=process.returncode if process.returncode is not None else -signal.SIGKILL,
        stdout=stdout.text(),
        stderr=stderr.text(),
        truncated=stdout.truncated or stderr.truncated,
        timed_out=timed_out,
        duration=time.monotonic() - started,
    )

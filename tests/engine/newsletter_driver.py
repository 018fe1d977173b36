"""A child process that drives the newsletter example, for the crash test.

``newsletter_driver.py WORKSPACE KILL_AT`` drives run ``n1`` to its end, killing itself with
SIGKILL just before its KILL_AT-th durable write (0 = never; it then prints how many writes it
made).
"""

from __future__ import annotations

import os
import signal
import sys

import anyio

from filesystems import LocalFilesystem
from harness.engine import WorkflowEngine

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.engine.newsletter import drive  # noqa: E402


async def main(workspace: str, kill_at: int) -> None:
    writes = 0

    def before_write(point: str) -> None:
        nonlocal writes
        writes += 1
        if writes == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    async with LocalFilesystem(workspace) as fs:
        await drive(WorkflowEngine(fs, before_write=before_write), "n1")
    print(writes)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]))

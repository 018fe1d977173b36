"""A child process in which a model drives the newsletter example with the workflow tools and
the process kills itself with SIGKILL before the model's KILL_AT-th reply.

``newsletter_model_driver.py WORKSPACE KILL_AT`` (the workspace's ``skills`` holds the group).
"""

from __future__ import annotations

import os
import signal
import sys

import anyio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from harness import Harness, RuntimeContext  # noqa: E402
from tests.agent.stage_model import driver_model  # noqa: E402


async def main(workspace: str, kill_at: int) -> None:
    def on_reply(count: int) -> None:
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    async with Harness(model=driver_model("m1", on_reply=on_reply), workspace=workspace) as agent:
        await agent.run("write the 2.0 newsletter", context=RuntimeContext(user_id="alice"))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]))

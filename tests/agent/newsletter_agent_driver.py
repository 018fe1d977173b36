"""A child process that runs the newsletter example with ``agent.run_workflow`` and kills
itself with SIGKILL in the middle of the first skill turn of step KILL_STEP.

``newsletter_agent_driver.py WORKSPACE KILL_STEP`` (the workspace's ``skills`` holds the group).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from harness import Harness, RuntimeContext  # noqa: E402
from tests.agent.stage_model import stage_model  # noqa: E402


async def main(workspace: str, kill_step: str) -> None:
    def on_step(step: dict[str, Any]) -> None:
        if step["step"] == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    async with Harness(model=stage_model(on_step), workspace=workspace) as agent:
        await agent.run_workflow(
            "newsletter", context=RuntimeContext(user_id="alice"), run_id="n1", inputs={"request": "2.0"}
        )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])

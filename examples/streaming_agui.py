"""Streaming a turn to a web UI as AG-UI server-sent events, without a web server.

``agent.stream(...)`` yields the turn's events while it runs; ``agui_sse`` turns them into the
``data: {...}`` lines an AG-UI client reads (the body of a ``text/event-stream`` response in
any ASGI framework). Two turns with the offline ``DemoModel``:

1. a plain message: the agent loads the hello-world skill and runs its script;
2. ``/skill:tide-notes``, a ``context: fork`` skill: a subagent does the work, and every event
   between ``SUBAGENT_STARTED`` and ``SUBAGENT_FINISHED`` carries its ``subagentRunId``, which is
   how a UI tells the subagent's text from the agent's.

Needs the ``ag-ui-protocol`` package (``pip install 'agent-skill-harness[agui]'``); without it
the example says so and exits cleanly. Run::

    python examples/streaming_agui.py [WORKDIR]
"""

from __future__ import annotations

import shutil
from pathlib import Path

from _workdir import require, run_in_workdir

from harness import DemoModel, Harness, RuntimeContext

SKILLS = Path(__file__).resolve().parent / "skills"
TIDE_NOTES = """\
---
name: tide-notes
description: Use when the user wants notes about today's tides.
context: fork
agent: researcher
---

Run `python3 scripts/tides.py` and report it.
"""


def _workspace(workdir: Path) -> Path:
    """The example skills plus ``tide-notes``, a skill that runs as a subagent."""
    workspace = workdir / "workspace"
    shutil.copytree(SKILLS, workspace / "skills", dirs_exist_ok=True)
    tide_notes = workspace / "skills" / "tide-notes"
    (tide_notes / "scripts").mkdir(parents=True, exist_ok=True)
    (tide_notes / "SKILL.md").write_text(TIDE_NOTES, encoding="utf-8")
    (tide_notes / "scripts" / "tides.py").write_text("print('high tide 06:12, low tide 12:30')\n", encoding="utf-8")
    return workspace


async def main(workdir: Path) -> None:
    from harness.agent.agui import agui_sse

    context = RuntimeContext(user_id="ada", session_id="thread-1")
    async with Harness(name="streamer", model=DemoModel(), workspace=_workspace(workdir)) as agent:
        for message in ("Please give Ada a friendly greeting", "/skill:tide-notes"):
            print(f"== {message}")
            async for line in agui_sse(agent.stream(message, context=context)):
                print(line.rstrip("\n"))


if __name__ == "__main__":
    require("ag_ui.encoder", "the 'ag-ui-protocol' package; pip install 'agent-skill-harness[agui]'")
    run_in_workdir(main)

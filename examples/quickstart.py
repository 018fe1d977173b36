"""Quickstart: one agent, a local workspace with a shell, the example skills, one turn.

Copies ``examples/skills`` (hello-world, csv-summary) into ``<WORKDIR>/workspace/skills`` as
workspace skills, then asks the offline ``DemoModel`` for a greeting: it reads the catalog,
loads the hello-world skill and runs its script. No API key or network is needed.

Run::

    python examples/quickstart.py [WORKDIR]

Without WORKDIR everything happens in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from _workdir import run_in_workdir

from harness import DemoModel, Harness, RuntimeContext

SKILLS = Path(__file__).resolve().parent / "skills"


async def main(workdir: Path) -> None:
    workspace = workdir / "workspace"
    shutil.copytree(SKILLS, workspace / "skills", dirs_exist_ok=True)
    async with Harness(name="quickstart", model=DemoModel(), workspace=workspace) as agent:
        result = await agent.run("Please give Ada a friendly greeting", context=RuntimeContext(user_id="ada"))
    print(f"reply ({result.steps} model steps): {result.reply}")


if __name__ == "__main__":
    run_in_workdir(main)

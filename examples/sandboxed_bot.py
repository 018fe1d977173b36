"""A multi-tenant bot whose shell runs in a bubblewrap sandbox, one sandbox per user.

The shared workspace holds the example skills; alice and bob each own one extra skill in their
user area (``<workspace>/<user>/skills``). Each user gets one turn with the offline
``DemoModel``, and the script prints the catalog each one sees: the shared skills plus only
their own. Commands run inside the sandbox, where the user's area is ``/workspace``.

Needs bubblewrap (``bwrap``). Run::

    python examples/sandboxed_bot.py [WORKDIR]

When the process is root the sandbox runs as uid 65534, so WORKDIR (and its parents) must be
traversable by others (mode 0755). Without WORKDIR such a temporary folder is made.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from _workdir import run_in_workdir

from filesystems import SandboxFilesystem
from harness import DemoModel, Harness, RuntimeContext

SKILLS = Path(__file__).resolve().parent / "skills"
USER_SKILLS = {
    "alice": (
        "trip-planner",
        "Use when the user wants to plan a trip itinerary.",
        "Itinerary: day 1 museum, day 2 hike",
    ),
    "bob": ("dinner-ideas", "Use when the user wants dinner recipe ideas.", "Dinner idea: lentil soup with bread"),
}
QUESTIONS = {"alice": "Please plan a trip itinerary for me.", "bob": "Any dinner recipe ideas tonight?"}


def write_user_skill(workspace: Path, user: str) -> None:
    name, description, output = USER_SKILLS[user]
    skill = workspace / user / "skills" / name
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\nRun:\n\n```bash\npython3 scripts/run.py\n```\n"
    )
    (skill / "scripts" / "run.py").write_text(f"print({output!r} + ' (for {user})')\n")


async def main(workdir: Path) -> None:
    workspace = workdir / "workspace"
    shutil.copytree(SKILLS, workspace / "skills", dirs_exist_ok=True)
    for user in USER_SKILLS:
        write_user_skill(workspace, user)
    async with Harness(name="bot", model=DemoModel(), filesystem=SandboxFilesystem(workspace)) as agent:
        for user, question in QUESTIONS.items():
            context = RuntimeContext(user_id=user)
            plan = await agent.prepare(context)
            names = sorted(resolved.skill.name for resolved in plan.skills.values())
            print(f"== {user} sees: {', '.join(names)}")
            result = await agent.run(question, context=context)
            print(f"> {question}\n{result.reply}\n")


if __name__ == "__main__":
    run_in_workdir(main, traversable=True)

"""What the framework adapter examples share: the example skills served as a directory market,
and a workspace where bob keeps a private ``bob-diary`` skill that alice must never see."""

from __future__ import annotations

from pathlib import Path

from harness import Harness, RuntimeContext
from repositories import DirectoryRepository

MARKET = Path(__file__).resolve().parent / "skills"
BOB_DIARY = "---\nname: bob-diary\ndescription: Use when bob asks about his diary.\n---\n\nBob's private diary.\n"


def open_harness(workdir: Path) -> Harness:
    """A harness over the example market, with bob's private skill in his user area."""
    diary = workdir / "workspace" / "bob" / "skills" / "bob-diary"
    diary.mkdir(parents=True, exist_ok=True)
    (diary / "SKILL.md").write_text(BOB_DIARY)
    return Harness(name="assistant", workspace=workdir / "workspace", repositories=[DirectoryRepository(MARKET)])


async def print_what_each_user_sees(harness: Harness) -> None:
    for user in ("alice", "bob"):
        plan = await harness.prepare(RuntimeContext(user_id=user))
        print(f"{user} sees: {', '.join(sorted(s.skill.name for s in plan.available()))}")

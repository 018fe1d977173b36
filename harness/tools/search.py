"""``search_skills``: find the skills a cut catalog does not show.

Offered only when the catalog budget cut the turn's catalog (``TurnPlan.search`` is set). It
searches only what the turn may load — the calling user's skills after visibility filters — so
a search never reveals another user's or a filtered skill, and every result loads in the same
turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from harness.pipeline.catalog import SEARCH_TOOL, entry_for, render_entry
from harness.pipeline.search import SkillIndex
from harness.tools.function import Tool, tool_from_function

if TYPE_CHECKING:
    from harness.pipeline.plan import TurnPlan

__all__ = ["MAX_RESULTS", "SkillMatch", "search_plan", "search_tools"]

#: The most results one search returns.
MAX_RESULTS = 50


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillMatch:
    """One search result: what the model needs to load the skill."""

    name: str
    skill_id: str
    description: str
    files_root: str | None
    workflow: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The match as JSON-ready data."""
        return {
            "name": self.name,
            "skill_id": self.skill_id,
            "description": self.description,
            "files_root": self.files_root,
        }


async def search_plan(plan: TurnPlan, query: str, limit: int = 10) -> list[SkillMatch]:
    """The skills of ``plan`` that best match ``query`` (at most ``limit``, capped at
    :data:`MAX_RESULTS`), best first. Uses the plan's index, or a new one when the catalog was
    not cut."""
    available = {s.skill.skill_id: s for s in plan.available()}
    index = plan.search or SkillIndex(s.skill for s in available.values())
    limit = max(1, min(limit, MAX_RESULTS))
    found = await anyio.to_thread.run_sync(index.search, query, limit, available.keys())
    return [
        SkillMatch(
            name=available[i].skill.name,
            skill_id=i,
            description=available[i].skill.description,
            files_root=available[i].files_root,
            workflow=available[i].workflow,
        )
        for i in found
    ]


def search_tools(plan: TurnPlan) -> list[Tool]:
    """The search tool when the turn's catalog was cut, else nothing."""
    if plan.search is None:
        return []

    async def search_skills(query: str, limit: int = 10) -> str:
        """Find skills that are not listed in the catalog, by keywords of the task.

        Args:
            query: Keywords describing the task or the skill's name, e.g. "pdf form fill" (at most
                32 words and 1000 characters).
            limit: The most skills to return (at most 50).
        """
        matches = await search_plan(plan, query, limit)
        if not matches:
            return f"no skill matches {query!r}; try other or fewer keywords."
        blocks = [_render_match(plan, match) for match in matches]
        return f"{len(matches)} skills match {query!r}, best first:\n" + "\n".join(blocks)

    return [tool_from_function(search_skills, name=SEARCH_TOOL)]


def _render_match(plan: TurnPlan, match: SkillMatch) -> str:
    """One result as the model reads it: the skill with the id and files-root to use it by."""
    skill = plan.skills[match.skill_id].skill
    return render_entry(entry_for(skill, match.files_root, match.workflow, source=plan.labels.label(skill.source)))

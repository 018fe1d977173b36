"""Which agent-created skills a turn may see: environment, canary, allow-list, all-of.

Filters only ever act on skills whose usage record says the agent made them; human-authored
skills (and skills without a record) always pass. The canary bucket is
``sha256(f"{user_id}|{skill_name}")``, so a user stays in or out of a rollout across turns,
processes and replicas.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

from harness.context import RuntimeContext
from harness.learning.usage import SkillUsage, UsageScopes, scope_of
from harness.skills.skill import Skill

__all__ = [
    "AllOf",
    "AllowListFilter",
    "CanaryFilter",
    "EnvironmentFilter",
    "VisibilityFilter",
    "VisibilityPolicy",
    "canary_bucket",
]

_BUCKETS = 10_000


def canary_bucket(user_id: str, skill_name: str) -> float:
    """The user's stable position in ``[0, 100)`` for a skill's canary rollout."""
    digest = hashlib.sha256(f"{user_id}|{skill_name}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") % _BUCKETS) * 100 / _BUCKETS


class VisibilityFilter(ABC):
    """Decides whether one agent-created skill is visible to one caller."""

    @abstractmethod
    def admits(self, skill: Skill, usage: SkillUsage, context: RuntimeContext) -> bool:
        """Whether ``context`` may see ``skill`` (whose usage record is ``usage``)."""


class EnvironmentFilter(VisibilityFilter):
    """The caller's environment must be one of the skill's ``environments``; a skill without
    recorded environments is visible everywhere."""

    def admits(self, skill: Skill, usage: SkillUsage, context: RuntimeContext) -> bool:
        return not usage.environments or context.environment in usage.environments


class CanaryFilter(VisibilityFilter):
    """Admits about ``percent`` % of users, chosen by :func:`canary_bucket`."""

    def __init__(self, percent: float) -> None:
        if not 0 <= percent <= 100:
            raise ValueError(f"canary percent must be within 0..100, not {percent}")
        self.percent = percent

    def admits(self, skill: Skill, usage: SkillUsage, context: RuntimeContext) -> bool:
        return canary_bucket(context.user_id, skill.name) < self.percent


class AllowListFilter(VisibilityFilter):
    """Admits only the listed user ids."""

    def __init__(self, users: Iterable[str]) -> None:
        self.users = frozenset(users)

    def admits(self, skill: Skill, usage: SkillUsage, context: RuntimeContext) -> bool:
        return context.user_id in self.users


class AllOf(VisibilityFilter):
    """Admits what every one of ``filters`` admits (none: everything)."""

    def __init__(self, filters: Sequence[VisibilityFilter]) -> None:
        self.filters = tuple(filters)

    def admits(self, skill: Skill, usage: SkillUsage, context: RuntimeContext) -> bool:
        return all(f.admits(skill, usage, context) for f in self.filters)


class VisibilityPolicy:
    """Applies ``rule`` to the agent-created skills of a turn.

    Reads each involved scope's usage records once per call (at most the caller's area and the
    shared workspace). Archived agent-created skills are never shown.
    """

    def __init__(self, rule: VisibilityFilter, *, usage: UsageScopes) -> None:
        self._rule = rule
        self._usage = usage

    async def apply(self, skills: list[Skill], context: RuntimeContext) -> list[Skill]:
        """The skills of ``skills`` that ``context`` may see, in their original order."""
        scopes = {scope_of(skill.skill_id, context) for skill in skills}
        records: dict[str, SkillUsage] = {}
        for scope in scopes:
            records.update(await self._usage.for_scope(scope).all())
        return [skill for skill in skills if self._visible(skill, records.get(skill.skill_id), context)]

    def _visible(self, skill: Skill, usage: SkillUsage | None, context: RuntimeContext) -> bool:
        if usage is None or not usage.agent_created:
            return True
        return usage.state != "archived" and self._rule.admits(skill, usage, context)

"""What one turn of one user sees: the merged skills, the catalog and the diagnostics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from filesystems import AbstractFilesystem
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic
from harness.errors import SkillNotFound
from harness.pipeline.layers import LayerEntry, SkillLayer
from harness.pipeline.merge import Shadowing
from harness.pipeline.search import SkillIndex
from harness.pipeline.staging import StageResult
from harness.skills.skill import Skill

__all__ = ["ResolvedSkill", "TurnPlan", "VisibilityPolicy"]


class VisibilityPolicy(Protocol):
    """Decides which skills a turn sees (e.g. rollout filters on agent-created skills)."""

    async def apply(self, skills: list[Skill], context: RuntimeContext) -> list[Skill]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedSkill:
    """A merged skill with the source that reads its files and where the shell finds them;
    ``workflow`` says it carries a workflow definition (``harness.engine``).

    ``environment`` is the folder of the skill's own Python packages as the shell sees it (like
    ``files_root``), or ``None`` when the skill has none (yet): commands of this skill get it
    first on ``PYTHONPATH`` and its ``bin/`` first on ``PATH``.
    """

    entry: LayerEntry
    source: SkillLayer
    files_root: str | None
    workflow: bool = False
    environment: str | None = None

    @property
    def skill(self) -> Skill:
        """The parsed skill."""
        return self.entry.skill

    async def list_files(self) -> tuple[str, ...]:
        """The relative paths of the skill's other files, sorted: ``skill.files`` when its layer
        listed the folder whole at load, else listed now (see ``SkillLayer.list_files``)."""
        if self.entry.listed:
            return self.skill.files
        return tuple(f.path for f in (await self.source.list_files(self.entry)).files)


@dataclass(kw_only=True)
class TurnPlan:
    """Everything one turn of one user needs: the merged skills, the catalog, the diagnostics.

    ``skills`` holds every merged skill by id, hidden ones included; only the catalog's skills
    and hidden skills the caller :meth:`invoke`-d are served by :meth:`find`. ``search`` is set
    when the catalog budget cut the catalog: an index over at least these skills (the search
    tool keeps only what :meth:`find` serves). ``before_run``, when set, is awaited by the
    shell tool before a command of a skill runs: it checks that skill's staged copy and restores
    what was changed behind the stager's back.
    """

    context: RuntimeContext
    filesystem: AbstractFilesystem
    skills: dict[str, ResolvedSkill]
    catalog: str
    shadowed: tuple[Shadowing, ...]
    diagnostics: tuple[Diagnostic, ...]
    staged: StageResult | None
    invoked: set[str] = field(default_factory=set)
    search: SkillIndex | None = None
    before_run: Callable[[ResolvedSkill], Awaitable[None]] | None = None

    def available(self) -> list[ResolvedSkill]:
        """The skills this turn may load: visible ones plus explicitly invoked hidden ones."""
        return [s for s in self.skills.values() if not s.skill.hidden or s.skill.skill_id in self.invoked]

    def find(self, id_or_name: str) -> ResolvedSkill | None:
        """A loadable skill by id, or by name when exactly one skill has it."""
        found = self.skills.get(id_or_name)
        if found is None:
            named = [s for s in self.skills.values() if s.skill.name == id_or_name]
            found = named[0] if len(named) == 1 else None
        if found is None or (found.skill.hidden and found.skill.skill_id not in self.invoked):
            return None
        return found

    def invoke(self, id_or_name: str) -> ResolvedSkill:
        """Mark a skill as explicitly invoked (hidden skills included) and return it."""
        found = self.skills.get(id_or_name) or next(
            (s for s in self.skills.values() if s.skill.name == id_or_name), None
        )
        if found is None:
            raise SkillNotFound(
                f"no skill named {id_or_name!r}; available: "
                + ", ".join(sorted(s.skill.name for s in self.skills.values()))
            )
        self.invoked.add(found.skill.skill_id)
        return found

"""What one turn of one user sees: the merged skills, the catalog and the diagnostics.

A user's skills are the shared base's plus the user's own changes (:class:`SkillOverlay`): with
10,000 market skills a copy of the merged skills would cost every user with skills of their own
about 300 KiB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence, ValuesView
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from filesystems import AbstractFilesystem
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic
from harness.errors import HarnessError, SkillNotFound
from harness.pipeline.labels import SourceLabels
from harness.pipeline.layers import LayerEntry, SkillLayer
from harness.pipeline.merge import Shadowing
from harness.skills.frontmatter import FrontmatterError, split_frontmatter
from harness.skills.skill import Skill
from repositories import ContentMismatch

if TYPE_CHECKING:  # annotations only: staging loads with a shell or a staged layer
    from harness.pipeline.search import SkillIndex
    from harness.pipeline.staging import StageItem, StageResult

__all__ = [
    "CommandEnvironments",
    "EnvironmentNotReady",
    "EnvironmentWait",
    "ResolvedSkill",
    "SkillOverlay",
    "TurnPlan",
    "VisibilityPolicy",
]


_V = TypeVar("_V")


class SkillOverlay(MutableMapping[str, _V]):
    """``base`` with ``own`` entries added or replacing the base's, and the ``gone`` keys removed.

    The base is read, never written: setting or deleting a key changes only this overlay, so a
    turn may change its plan's skills without touching another turn's. Iteration keeps the
    base's order (a replaced key where the base has it), then the keys only ``own`` has.
    """

    __slots__ = ("_base", "_gone", "_len", "_own")

    def __init__(
        self, base: Mapping[str, _V], own: Mapping[str, _V] | None = None, gone: frozenset[str] | set[str] = frozenset()
    ) -> None:
        self._base = base
        self._own: dict[str, _V] = dict(own or {})
        self._gone: set[str] = {key for key in gone if key in base and key not in self._own}
        self._len = len(base) - len(self._gone) + sum(1 for key in self._own if key not in base)

    @property
    def base(self) -> Mapping[str, _V]:
        """The shared mapping this overlay reads through to."""
        return self._base

    @property
    def own(self) -> Mapping[str, _V]:
        """What this overlay adds or replaces."""
        return self._own

    @property
    def gone(self) -> frozenset[str]:
        """The base's keys this overlay removes."""
        return frozenset(self._gone)

    def __getitem__(self, key: str) -> _V:
        if key in self._own:
            return self._own[key]
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._own or (key in self._base and key not in self._gone)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        if not self._own and not self._gone:
            yield from self._base
            return
        own, gone = self._own, self._gone
        for key in self._base:
            if key not in gone:
                yield key
        for key in own:
            if key not in self._base:
                yield key

    def __setitem__(self, key: str, value: _V) -> None:
        if key not in self:
            self._len += 1
        self._own[key] = value
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._own.pop(key, None)
        if key in self._base:
            self._gone.add(key)
        self._len -= 1

    def values(self) -> ValuesView[_V]:
        """The values in iteration order (the base's own view when nothing is overlaid)."""
        if not self._own and not self._gone:
            return self._base.values()
        return super().values()

    def copy(self) -> SkillOverlay[_V]:
        """A new overlay over the same base with its own copy of the changes."""
        return SkillOverlay(self._base, self._own, self._gone)

    def __repr__(self) -> str:
        return f"SkillOverlay(base={len(self._base)} keys, own={sorted(self._own)}, gone={sorted(self._gone)})"


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


@dataclass(frozen=True, kw_only=True, slots=True)
class EnvironmentWait:
    """A command of ``skill_id`` waited ``seconds`` for the skill's Python environment to be
    built; ``state`` is the environment's state when the wait ended: ``ready``, ``failed``, or
    ``building`` when the build outlasted the wait."""

    skill_id: str
    seconds: float
    state: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CommandEnvironments:
    """What a command of some skills runs with (:attr:`TurnPlan.running`): each skill's
    environment folder as the shell sees it, by skill id (skills without one are left out), the
    waits it took to have them, and why the command must not run (``refused``, ``None`` when it
    may): an environment still being built or one whose build failed."""

    folders: Mapping[str, str] = field(default_factory=dict)
    waits: tuple[EnvironmentWait, ...] = ()
    refused: str | None = None

    @classmethod
    def named(cls, skills: Sequence[ResolvedSkill]) -> CommandEnvironments:
        """The environments the plan names for ``skills`` (their ``environment``), nothing waited
        for: what a command gets when no environment manager answers."""
        return cls(folders={s.skill.skill_id: s.environment for s in skills if s.environment})


class EnvironmentNotReady(HarnessError):
    """A command was not run: a skill it belongs to needs a Python environment that is still
    being built or could not be built (the message says which, and when to try again)."""


@dataclass(kw_only=True)
class TurnPlan:
    """Everything one turn of one user needs: the merged skills, the catalog, the diagnostics.

    ``skills`` holds every merged skill by id, hidden ones included (a
    :class:`SkillOverlay` over the skills every user shares, which
    the plan may change freely); only the catalog's skills
    and hidden skills the caller :meth:`invoke`-d are served by :meth:`find`.
    ``shadowed_skills`` holds, by id, the skills a same-name skill of a higher layer (or a
    later market) shadows, after the same visibility filters: they are not in the catalog
    (only its ``<shadowed>`` line) and load by their id only, the bare name meaning the
    winner. ``labels`` are the short market labels the catalog shows: ``<name>_<label>``
    finds the skill whose id is ``<name>_<market slug>``. ``search`` is set when the catalog
    budget cut the catalog: an index over at least these skills (the search tool keeps only
    what :meth:`find` serves). ``before_run``, when set, is awaited by the shell tool before a
    command of a skill runs: it checks that skill's staged copy and restores what was changed
    behind the stager's back. ``activate``, when set, is awaited when a skill is loaded (and by
    ``before_run`` before it runs): a skill of an on-demand market (an MCP server) has its files
    fetched, verified and staged then, not before. ``cache_items`` are the skills of the shared
    layers whose folders the staging cache holds or will hold once they are activated, whatever
    this user may see: the cache is one for every user. ``latest_cache_items`` returns those of
    the newest merge: a market that moved while the turn ran restages its folders in place.
    ``running``, when set, is entered by the shell tool around a command of some skills (those
    it belongs to): it waits for their Python environments when they are being built, yields
    a :class:`CommandEnvironments`, and holds their staged folders and environments while the
    command runs, so that no reclamation removes them; a warm command costs no I/O.
    """

    context: RuntimeContext
    filesystem: AbstractFilesystem
    skills: MutableMapping[str, ResolvedSkill]
    catalog: str
    shadowed: tuple[Shadowing, ...]
    diagnostics: tuple[Diagnostic, ...]
    staged: StageResult | None
    invoked: set[str] = field(default_factory=set)
    search: SkillIndex | None = None
    before_run: Callable[[ResolvedSkill], Awaitable[None]] | None = None
    activate: Callable[[ResolvedSkill], Awaitable[None]] | None = None
    shadowed_skills: MutableMapping[str, ResolvedSkill] = field(default_factory=dict)
    labels: SourceLabels = field(default_factory=SourceLabels)
    cache_items: tuple[StageItem, ...] = ()
    latest_cache_items: Callable[[], tuple[StageItem, ...]] = tuple
    running: Callable[[Sequence[ResolvedSkill]], AbstractAsyncContextManager[CommandEnvironments]] | None = None

    def available(self) -> list[ResolvedSkill]:
        """The skills this turn may load: visible ones plus explicitly invoked hidden ones."""
        return [s for s in self.skills.values() if not s.skill.hidden or s.skill.skill_id in self.invoked]

    def find(self, id_or_name: str) -> ResolvedSkill | None:
        """A loadable skill by id (its full id or the one the catalog shows, a shadowed skill's
        included), or by name when exactly one listed skill has it."""
        found = self._lookup(id_or_name)
        if found is None or (found.skill.hidden and found.skill.skill_id not in self.invoked):
            return None
        return found

    def by_id(self, skill_id: str) -> ResolvedSkill | None:
        """A skill of this turn by its full id (listed or shadowed), loadable or not."""
        return self.skills.get(skill_id) or self.shadowed_skills.get(skill_id)

    def invoke(self, id_or_name: str) -> ResolvedSkill:
        """Mark a skill as explicitly invoked (hidden skills included) and return it."""
        found = self._lookup(id_or_name)
        if found is None:
            raise SkillNotFound(
                f"no skill named {id_or_name!r}; available: "
                + ", ".join(sorted(s.skill.name for s in self.skills.values()))
            )
        self.invoked.add(found.skill.skill_id)
        return found

    async def fetch_instructions(self, id_or_name: str) -> ResolvedSkill | None:
        """Make the skill ``id_or_name`` serve its real instructions in this plan (what a
        ``/skill:`` command expands), and :attr:`activate` it: a skill of an on-demand market (an
        MCP server) is listed by its frontmatter alone, so its SKILL.md is fetched now, verified
        by its market (``ContentMismatch`` when it is not what the listing says), and the skill
        replaced by one with that body. Other skills are returned as they are; ``None`` when no
        skill has that id or name."""
        found = self._lookup(id_or_name)
        if found is None or not found.entry.on_demand:
            return found
        skill = found.skill
        raw = (await found.source.read_files(found.entry, [skill.skill_md_name]))[skill.skill_md_name]
        try:
            split_frontmatter(raw)
        except FrontmatterError as exc:
            raise ContentMismatch(f"{skill.skill_id}: its SKILL.md cannot be parsed: {exc}") from exc
        real = dataclasses.replace(skill, raw=raw)
        fetched = dataclasses.replace(found, entry=dataclasses.replace(found.entry, skill=real))
        table = self.skills if skill.skill_id in self.skills else self.shadowed_skills
        if table is self.skills:
            self.skills = {**self.skills, skill.skill_id: fetched}  # the view's dict is shared: copied
        else:
            self.shadowed_skills = {**self.shadowed_skills, skill.skill_id: fetched}
        if self.activate is not None:
            await self.activate(fetched)
        return fetched

    def _lookup(self, id_or_name: str) -> ResolvedSkill | None:
        """By full id, then by the id the catalog shows, then by a name only one listed skill has."""
        for skill_id in (id_or_name, *self.labels.full_ids(id_or_name)):
            found = self.by_id(skill_id)
            if found is not None:
                return found
        named = [s for s in self.skills.values() if s.skill.name == id_or_name]
        return named[0] if len(named) == 1 else None

"""Per-skill usage: views, uses, patches, timestamps, provenance, state and rollout settings.

A :class:`UsageStore` holds the records of one scope (a user's area or the shared workspace),
keyed by skill id. Two backends, both compare-and-set safe through the filesystem primitives:

- :class:`SidecarUsageStore`: one JSON document ``skills/.usage.json`` in the scope's area;
- :class:`KeyValueUsageStore`: one small JSON document per skill under a prefix of a shared
  filesystem (e.g. a :class:`~filesystems.RemoteFilesystem` over a MySQL store), so many
  replicas update different skills without contending.

:class:`UsageScopes` picks the store of a scope; :class:`ScopedUsageRecorder` implements the
:class:`UsageRecorder` protocol the per-turn pipeline reports views and uses through.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

import anyio

from filesystems import AbstractFilesystem, VersionConflict
from harness.clock import Clock, from_iso, system_clock, to_iso
from harness.context import RuntimeContext
from harness.learning._layout import SKILLS, USAGE_SIDECAR, scope_source
from harness.learning.errors import UsageConflict
from harness.skills.rules import unsafe_segment_reason

__all__ = [
    "KeyValueUsageStore",
    "Provenance",
    "ScopedUsageRecorder",
    "SharedUsage",
    "SidecarUsage",
    "SidecarUsageStore",
    "SkillState",
    "SkillUsage",
    "UsageRecorder",
    "UsageScopes",
    "UsageStore",
    "referenced_skills",
    "scope_of",
    "with_state",
]

Provenance = Literal["human", "agent-draft", "agent"]
"""Who made a skill: a person, the agent (still a draft), the agent (promoted or auto-promoted)."""

SkillState = Literal["draft", "active", "stale", "archived"]

_TIME_FIELDS = ("created_at", "last_viewed", "last_used", "last_patched", "state_changed_at", "promoted_at")
_CAS_ATTEMPTS = 64


@dataclass(frozen=True, kw_only=True)
class SkillUsage:
    """The usage record of one skill id in one scope.

    ``environments`` lists where an agent-created skill may be shown (empty: everywhere);
    ``pinned`` skills are never marked stale or archived. Times are aware UTC datetimes.
    """

    skill_id: str
    name: str = ""
    created_by: Provenance = "human"
    state: SkillState = "active"
    views: int = 0
    uses: int = 0
    patches: int = 0
    pinned: bool = False
    environments: tuple[str, ...] = ()
    created_at: datetime | None = None
    last_viewed: datetime | None = None
    last_used: datetime | None = None
    last_patched: datetime | None = None
    state_changed_at: datetime | None = None
    promoted_at: datetime | None = None
    promoted_by: str | None = None

    @property
    def agent_created(self) -> bool:
        """Whether the agent wrote this skill (a draft or promoted); visibility filters and the
        curator only ever act on these."""
        return self.created_by != "human"

    @property
    def last_activity(self) -> datetime | None:
        """The latest of creation, promotion, patch, view and use: what "unused since" means."""
        moments = [
            moment
            for moment in (self.created_at, self.promoted_at, self.last_patched, self.last_viewed, self.last_used)
            if moment is not None
        ]
        return max(moments) if moments else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape stored by the backends."""
        data: dict[str, Any] = dataclasses.asdict(self)
        data["environments"] = list(self.environments)
        for name in _TIME_FIELDS:
            moment = getattr(self, name)
            data[name] = to_iso(moment) if moment is not None else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkillUsage:
        """Read back what :meth:`as_dict` wrote; unknown keys are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["environments"] = tuple(values.get("environments") or ())
        for name in _TIME_FIELDS:
            if values.get(name) is not None:
                values[name] = from_iso(values[name])
        return cls(**values)


UsageChange = Callable[[SkillUsage | None], SkillUsage]
"""Computes a skill's new record from its current one (``None`` when it has none yet)."""


class UsageStore(ABC):
    """The usage records of one scope.

    ``update`` is the only write: it applies ``change`` to the current record with
    compare-and-set, re-reading and re-applying when another writer got in first (so ``change``
    must be a pure function of its argument), and raises :class:`UsageConflict` only after
    many lost races in a row. The ``record_*`` helpers are built on it.
    """

    @abstractmethod
    async def all(self) -> dict[str, SkillUsage]:
        """Every record of the scope, keyed by skill id."""

    async def get(self, skill_id: str) -> SkillUsage | None:
        """The record of ``skill_id``, or ``None``."""
        return (await self.all()).get(skill_id)

    async def update(self, skill_id: str, change: UsageChange) -> SkillUsage:
        """Apply ``change`` to the record of ``skill_id`` atomically and return the new record."""
        reason = unsafe_segment_reason(skill_id)
        if reason:
            raise ValueError(f"skill id {skill_id!r} {reason}")

        def checked(current: SkillUsage | None) -> SkillUsage:
            updated = change(current)
            if updated.skill_id != skill_id:
                raise ValueError(f"a usage change for {skill_id!r} returned a record for {updated.skill_id!r}")
            return updated

        return await self._update(skill_id, checked)

    async def record_view(self, skill_id: str, when: datetime) -> SkillUsage:
        """Count one load of the skill (reactivates a stale skill)."""
        return await self.update(skill_id, lambda u: _touched(u, skill_id, when, views=1))

    async def record_use(self, skill_id: str, when: datetime) -> SkillUsage:
        """Count one shell use of the skill's files (reactivates a stale skill)."""
        return await self.update(skill_id, lambda u: _touched(u, skill_id, when, uses=1))

    @abstractmethod
    async def _update(self, skill_id: str, change: UsageChange) -> SkillUsage:
        """Backend primitive: the compare-and-set loop."""


def _touched(current: SkillUsage | None, skill_id: str, when: datetime, *, views: int = 0, uses: int = 0) -> SkillUsage:
    usage = current or SkillUsage(skill_id=skill_id)
    usage = dataclasses.replace(
        usage,
        views=usage.views + views,
        uses=usage.uses + uses,
        last_viewed=when if views else usage.last_viewed,
        last_used=when if uses else usage.last_used,
    )
    if usage.state == "stale":
        usage = dataclasses.replace(usage, state="active", state_changed_at=when)
    return usage


def with_state(
    current: SkillUsage | None,
    state: SkillState,
    when: datetime,
    *,
    skill_id: str,
    name: str,
    created_by: Provenance = "human",
) -> SkillUsage:
    """``current`` moved to ``state`` at ``when``; without a record, a new one for ``skill_id``."""
    usage = current or SkillUsage(skill_id=skill_id, name=name, created_by=created_by)
    return dataclasses.replace(usage, state=state, state_changed_at=when)


async def _cas_loop(fs: AbstractFilesystem, path: str, transform: Callable[[bytes | None], bytes]) -> bytes:
    """Read ``path`` (``None`` if missing), write ``transform``'s result only if nobody wrote in
    between, retrying with a short random backoff. Stat before read: a write racing the read
    then fails the compare-and-set instead of being overwritten."""
    for attempt in range(_CAS_ATTEMPTS):
        try:
            version: str | None = (await fs.stat(path)).version
            current: bytes | None = await fs.read_bytes(path)
        except FileNotFoundError:
            version, current = None, None
        new = transform(current)
        try:
            await fs.compare_and_set(path, new, version)
            return new
        except (VersionConflict, FileExistsError):
            await anyio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
    raise UsageConflict(f"usage file {path!r}: gave up after {_CAS_ATTEMPTS} conflicting writes; retry later")


class SidecarUsageStore(UsageStore):
    """All records of a scope in one JSON document (default ``skills/.usage.json``) on ``fs``."""

    def __init__(self, fs: AbstractFilesystem, path: str = USAGE_SIDECAR) -> None:
        self._fs = fs
        self._path = path

    async def all(self) -> dict[str, SkillUsage]:
        try:
            return _parse_document(await self._fs.read_bytes(self._path))
        except FileNotFoundError:
            return {}

    async def _update(self, skill_id: str, change: UsageChange) -> SkillUsage:
        result: list[SkillUsage] = []

        def transform(current: bytes | None) -> bytes:
            records = _parse_document(current) if current is not None else {}
            records[skill_id] = change(records.get(skill_id))
            result[:] = [records[skill_id]]
            document = {"version": 1, "skills": {key: records[key].as_dict() for key in sorted(records)}}
            return json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")

        await _cas_loop(self._fs, self._path, transform)
        return result[0]


def _parse_document(data: bytes) -> dict[str, SkillUsage]:
    document = json.loads(data.decode("utf-8"))
    return {key: SkillUsage.from_dict(value) for key, value in document.get("skills", {}).items()}


class KeyValueUsageStore(UsageStore):
    """One JSON document per skill id under ``prefix`` on ``fs`` (``<prefix>/<skill id>.json``).

    Reading every record is one batched walk plus one batched read.
    """

    def __init__(self, fs: AbstractFilesystem, prefix: str) -> None:
        self._fs = fs
        self._prefix = prefix.strip("/")

    async def all(self) -> dict[str, SkillUsage]:
        entries = await self._fs.walk(self._prefix)
        data = await self._fs.read_many([e.path for e in entries if e.path.endswith(".json")])
        records = (SkillUsage.from_dict(json.loads(raw.decode("utf-8"))) for raw in data.values())
        return {record.skill_id: record for record in records}

    async def get(self, skill_id: str) -> SkillUsage | None:
        try:
            raw = await self._fs.read_bytes(self._key(skill_id))
        except FileNotFoundError:
            return None
        return SkillUsage.from_dict(json.loads(raw.decode("utf-8")))

    async def _update(self, skill_id: str, change: UsageChange) -> SkillUsage:
        def transform(current: bytes | None) -> bytes:
            previous = SkillUsage.from_dict(json.loads(current.decode("utf-8"))) if current is not None else None
            return json.dumps(change(previous).as_dict(), ensure_ascii=False).encode("utf-8")

        written = await _cas_loop(self._fs, self._key(skill_id), transform)
        return SkillUsage.from_dict(json.loads(written.decode("utf-8")))

    def _key(self, skill_id: str) -> str:
        return f"{self._prefix}/{skill_id}.json"


class UsageScopes(ABC):
    """Finds the :class:`UsageStore` of a scope: a user id, or ``None`` for the shared workspace."""

    @abstractmethod
    def for_scope(self, scope: str | None) -> UsageStore:
        """The store holding the records of ``scope``."""


class SidecarUsage(UsageScopes):
    """A ``skills/.usage.json`` sidecar in each scope's area of the workspace filesystem ``fs``."""

    def __init__(self, fs: AbstractFilesystem) -> None:
        self._fs = fs

    def for_scope(self, scope: str | None) -> UsageStore:
        return SidecarUsageStore(self._fs.scoped(scope) if scope is not None else self._fs)


class SharedUsage(UsageScopes):
    """Per-skill records on a filesystem every replica shares, under
    ``<prefix>/<user id>/`` (``<prefix>/_workspace/`` for the shared workspace)."""

    def __init__(self, fs: AbstractFilesystem, *, prefix: str = f"{SKILLS}/.usage") -> None:
        self._fs = fs
        self._prefix = prefix.strip("/")

    def for_scope(self, scope: str | None) -> UsageStore:
        return KeyValueUsageStore(self._fs, f"{self._prefix}/{scope if scope is not None else '_workspace'}")


def scope_of(skill_id: str, context: RuntimeContext) -> str | None:
    """The scope whose store tracks ``skill_id`` for this caller: the caller's own area for
    user-layer skills, the shared workspace for every other layer."""
    return context.user_id if skill_id.endswith("_" + scope_source(context.user_id)) else None


class UsageRecorder(Protocol):
    """What the per-turn pipeline reports usage through."""

    async def record_view(self, skill_id: str, context: RuntimeContext) -> None:
        """The load tool served a file of ``skill_id`` (the real id, not the bare name)."""

    async def record_use(self, skill_id: str, context: RuntimeContext) -> None:
        """A shell command referenced ``skill_id``'s files-root."""


class ScopedUsageRecorder:
    """Records views and uses into the store of the skill's scope (see :func:`scope_of`)."""

    def __init__(self, scopes: UsageScopes, *, clock: Clock = system_clock) -> None:
        self._scopes = scopes
        self._clock = clock

    async def record_view(self, skill_id: str, context: RuntimeContext) -> None:
        await self._scopes.for_scope(scope_of(skill_id, context)).record_view(skill_id, self._clock())

    async def record_use(self, skill_id: str, context: RuntimeContext) -> None:
        await self._scopes.for_scope(scope_of(skill_id, context)).record_use(skill_id, self._clock())


def referenced_skills(command: str, files_roots: Mapping[str, str]) -> list[str]:
    """The skill ids (keys of ``files_roots``) whose files-root path occurs in ``command`` as a
    whole path (followed by ``/``, a quote, whitespace, ``;``, ``)``, ``|``, ``&`` or the end)."""
    found = []
    for skill, root in files_roots.items():
        pattern = re.escape(root.rstrip("/")) + r"(?=$|[/\s'\";)|&])"
        if re.search(pattern, command):
            found.append(skill)
    return sorted(found)

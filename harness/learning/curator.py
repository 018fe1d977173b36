"""The curator: ages unused agent-created skills out, per scope, at most once per interval.

For each scope (every user's area and the shared workspace) it looks at the agent-created,
unpinned, live skills of that scope's usage store: a skill idle (no view, use, patch or
promotion) for ``stale_after_days`` becomes ``stale``; idle for ``archive_after_days`` it is
moved to ``skills/.archive/<name>-<utc stamp>/`` and marked ``archived``; a stale skill used
again becomes ``active``. Drafts, human-authored and pinned skills are never touched.

Replicas share one claim file (``skills/.curator/claim.json``, written with compare-and-set) so
only one of them runs per ``interval_hours``; :meth:`Curator.run_once` bypasses the throttle.
The latest report is written to ``skills/.curator/report.json`` and every report is kept on the
report shelf next to the audit log (``skills/.audit/reports/``, see :mod:`harness.learning.reports`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from filesystems import AbstractFilesystem, VersionConflict
from harness.audit import AuditLog
from harness.clock import Clock, from_iso, system_clock, to_iso
from harness.learning._layout import (
    CURATOR,
    archive_folder,
    area_label,
    discover_users,
    live_folder,
    scope_source,
    scoped,
    skill_label,
    skill_lock,
)
from harness.learning.reports import ReportShelf
from harness.learning.tools import OnChange, ignore_change
from harness.learning.usage import SkillState, SkillUsage, UsageScopes, with_state

__all__ = ["Curator", "CuratorPolicy", "CuratorReport", "Transition"]

_CLAIM = f"{CURATOR}/claim.json"
_REPORT = f"{CURATOR}/report.json"
_OPS: dict[str, str] = {"stale": "curator.stale", "archived": "curator.archive", "active": "curator.reactivate"}


@dataclass(frozen=True, kw_only=True)
class CuratorPolicy:
    """When skills go stale and get archived (days idle), and how often the curator may run."""

    stale_after_days: float = 30
    archive_after_days: float = 90
    interval_hours: float = 24

    def __post_init__(self) -> None:
        if not 0 < self.stale_after_days < self.archive_after_days:
            raise ValueError("need 0 < stale_after_days < archive_after_days")
        if self.interval_hours < 0:
            raise ValueError("interval_hours must be >= 0")


@dataclass(frozen=True, kw_only=True)
class Transition:
    """One skill changing state: where, which, from/to, how long idle, and the archive path."""

    scope: str | None
    skill_id: str
    name: str
    from_state: SkillState
    to_state: SkillState
    idle_days: float
    archived_to: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "area": area_label(self.scope), "idle_days": round(self.idle_days, 3)}


@dataclass(frozen=True, kw_only=True)
class CuratorReport:
    """What a run did (or, with ``dry_run``, would do). ``ran`` is false when the run was
    throttled or another replica claimed it; ``reason`` then says why."""

    started_at: datetime
    ran: bool
    dry_run: bool
    reason: str = ""
    areas: tuple[str, ...] = ()
    transitions: tuple[Transition, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "started_at": to_iso(self.started_at),
            "ran": self.ran,
            "dry_run": self.dry_run,
            "reason": self.reason,
            "areas": list(self.areas),
            "transitions": [t.as_dict() for t in self.transitions],
        }


class Curator:
    """Curates the shared workspace ``fs`` and its users' areas.

    ``users`` lists the user areas to visit; by default they are discovered as the workspace's
    folders that hold a ``skills/`` folder (pass them explicitly for remote stores).
    """

    def __init__(
        self,
        fs: AbstractFilesystem,
        *,
        usage: UsageScopes,
        audit: AuditLog,
        policy: CuratorPolicy = CuratorPolicy(),
        users: Sequence[str] | None = None,
        on_change: OnChange = ignore_change,
        clock: Clock = system_clock,
    ) -> None:
        self._fs = fs
        self._usage = usage
        self._audit = audit
        self._policy = policy
        self._users = tuple(users) if users is not None else None
        self._on_change = on_change
        self._clock = clock

    @property
    def policy(self) -> CuratorPolicy:
        return self._policy

    def with_policy(self, policy: CuratorPolicy) -> Curator:
        """The same curator (workspace, stores, users, clock) under another ``policy``."""
        return Curator(
            self._fs,
            usage=self._usage,
            audit=self._audit,
            policy=policy,
            users=self._users,
            on_change=self._on_change,
            clock=self._clock,
        )

    async def run(self, *, dry_run: bool = False) -> CuratorReport:
        """Curate if no replica did within ``interval_hours`` (a dry run never claims)."""
        now = self._clock()
        if not dry_run:
            refusal = await self._claim(now)
            if refusal:
                return CuratorReport(started_at=now, ran=False, dry_run=False, reason=refusal)
        return await self._curate(now, dry_run)

    async def run_once(self, *, dry_run: bool = False) -> CuratorReport:
        """Curate now, whatever the throttle says."""
        return await self._curate(self._clock(), dry_run)

    async def _curate(self, now: datetime, dry_run: bool) -> CuratorReport:
        users = self._users if self._users is not None else tuple(await discover_users(self._fs))
        scopes: list[str | None] = [None, *users]
        transitions: list[Transition] = []
        for scope in scopes:
            transitions.extend(await self._curate_scope(scope, now, dry_run))
        report = CuratorReport(
            started_at=now,
            ran=True,
            dry_run=dry_run,
            areas=tuple(area_label(scope) for scope in scopes),
            transitions=tuple(transitions),
        )
        if not dry_run:
            await self._fs.write_bytes(_REPORT, json.dumps(report.as_dict(), indent=1).encode("utf-8"))
            await ReportShelf(self._fs).write("curator", report.as_dict(), now)
        return report

    async def _curate_scope(self, scope: str | None, now: datetime, dry_run: bool) -> list[Transition]:
        store = self._usage.for_scope(scope)
        suffix = "_" + scope_source(scope)
        transitions = []
        for record in (await store.all()).values():
            if not record.skill_id.endswith(suffix) or not self._curated(record):
                continue
            assert record.last_activity is not None  # checked by _curated
            idle = (now - record.last_activity) / timedelta(days=1)
            target = self._target_state(idle)
            if target == record.state:
                continue
            transition = Transition(
                scope=scope,
                skill_id=record.skill_id,
                name=record.name,
                from_state=record.state,
                to_state=target,
                idle_days=idle,
            )
            if not dry_run:
                transition = await self._apply(transition, now)
            transitions.append(transition)
        return sorted(transitions, key=lambda t: t.skill_id)

    @staticmethod
    def _curated(record: SkillUsage) -> bool:
        return (
            record.agent_created
            and not record.pinned
            and record.state in ("active", "stale")
            and bool(record.name)
            and record.last_activity is not None
        )

    def _target_state(self, idle_days: float) -> SkillState:
        if idle_days >= self._policy.archive_after_days:
            return "archived"
        if idle_days >= self._policy.stale_after_days:
            return "stale"
        return "active"

    async def _apply(self, transition: Transition, now: datetime) -> Transition:
        scope, name = transition.scope, transition.name
        fs = scoped(self._fs, scope)
        if transition.to_state == "archived":
            async with fs.lock(skill_lock(name)):
                if await fs.exists(live_folder(name)):
                    transition = dataclasses.replace(
                        transition, archived_to=await archive_folder(fs, live_folder(name), name, now)
                    )
        await self._usage.for_scope(scope).update(
            transition.skill_id,
            lambda current: with_state(current, transition.to_state, now, skill_id=transition.skill_id, name=name),
        )
        await self._audit.record(
            actor="curator",
            op=_OPS[transition.to_state],
            target=skill_label(name, scope),
            decision="applied",
            detail=f"{transition.from_state} -> {transition.to_state} after {transition.idle_days:.1f} idle days"
            + (f"; archived to {transition.archived_to}" if transition.archived_to else ""),
        )
        if transition.to_state == "archived":
            self._on_change(scope)
        return transition

    async def _claim(self, now: datetime) -> str:
        """Take this interval's run; returns why not (empty when claimed)."""
        try:
            version: str | None = (await self._fs.stat(_CLAIM)).version
            last = from_iso(json.loads(await self._fs.read_bytes(_CLAIM))["last_run"])
        except FileNotFoundError:
            version, last = None, None
        interval = timedelta(hours=self._policy.interval_hours)
        if last is not None and now - last < interval:
            return f"throttled: the last run was at {to_iso(last)}; the next is due at {to_iso(last + interval)}"
        claim = {"last_run": to_iso(now), "by": f"{socket.gethostname()}:{os.getpid()}"}
        try:
            await self._fs.compare_and_set(_CLAIM, json.dumps(claim).encode("utf-8"), version)
        except (VersionConflict, FileExistsError):
            return "another replica claimed this run"
        return ""

"""The umbrella-merge review: which agent-created skills overlap, and what umbrella would hold them.

A dry run only: the review reads the live agent-created skills of every scope (name and
description), groups the overlapping ones and proposes one umbrella skill per group, and writes
a report on the shelf next to the audit log (``skills/.audit/reports/<stamp>-umbrella.json``).
It never edits, merges or archives a skill; an operator reads the report and decides.

With a real model the grouping is the model's: it gets the skills of one area as JSON and
answers with groups, which are checked (members must exist in that area, two or more per group,
each skill in one group). With the offline demo model, no model, or an answer that does not pass
those checks, skills are grouped by description similarity (word overlap, Jaccard index at least
``threshold``), which is deterministic.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from filesystems import AbstractFilesystem
from harness.clock import Clock, system_clock, to_iso
from harness.learning._layout import SKILL_MD, area_label, discover_users, live_folder, scope_source, scoped
from harness.learning.reports import ReportShelf
from harness.learning.usage import UsageScopes
from harness.models import Message, Model, ModelError
from harness.models.demo import DemoModel
from harness.skills.frontmatter import FrontmatterError, split_frontmatter

__all__ = ["UmbrellaProposal", "UmbrellaReport", "UmbrellaReview", "group_by_similarity"]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are as at be by for from how in into is it of on or over that the this to use used uses using "
    "when with without skill skills".split()
)
_PROMPT = (
    "You review skills an agent wrote for itself. Group skills that overlap so much that one "
    "umbrella skill could replace them. Answer with JSON only: "
    '{"groups": [{"umbrella": "<kebab-case name>", "description": "<one sentence>", '
    '"members": ["<skill name>", ...], "reason": "<why they overlap>"}]}. '
    "Use only the names given; a group has two or more members; leave out skills that overlap with none."
)


@dataclass(frozen=True, kw_only=True)
class UmbrellaProposal:
    """One proposed umbrella: the area it is for, its name and description, the skills it would
    replace, and why."""

    area: str
    umbrella: str
    description: str
    members: tuple[str, ...]
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "members": list(self.members)}


@dataclass(frozen=True, kw_only=True)
class UmbrellaReport:
    """What a review proposes. Always a dry run; ``notes`` say where the model was not used."""

    created_at: datetime
    model: str
    areas: tuple[str, ...]
    proposals: tuple[UmbrellaProposal, ...]
    notes: tuple[str, ...] = field(default=())
    path: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "umbrella",
            "created_at": to_iso(self.created_at),
            "dry_run": True,
            "model": self.model,
            "areas": list(self.areas),
            "proposals": [p.as_dict() for p in self.proposals],
            "notes": list(self.notes),
            "path": self.path,
        }


@dataclass(frozen=True)
class _Candidate:
    name: str
    description: str


class UmbrellaReview:
    """Reviews the shared workspace ``fs`` and its users' areas (``users``, discovered by default)."""

    def __init__(
        self,
        fs: AbstractFilesystem,
        *,
        usage: UsageScopes,
        model: Model | None = None,
        users: Sequence[str] | None = None,
        threshold: float = 0.3,
        clock: Clock = system_clock,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("threshold must be in (0, 1]")
        self._fs = fs
        self._usage = usage
        self._model = model
        self._users = tuple(users) if users is not None else None
        self._threshold = threshold
        self._clock = clock

    async def review(self) -> UmbrellaReport:
        """Group the live agent-created skills of every area and store the proposals' report."""
        now = self._clock()
        users = self._users if self._users is not None else tuple(await discover_users(self._fs))
        proposals: list[UmbrellaProposal] = []
        notes: list[str] = []
        areas = []
        for scope in (None, *users):
            area = area_label(scope)
            areas.append(area)
            candidates = await self._candidates(scope)
            if len(candidates) >= 2:
                proposals.extend(await self._group(area, candidates, notes))
        report = UmbrellaReport(
            created_at=now,
            model=self._model.name if self._model is not None else "none",
            areas=tuple(areas),
            proposals=tuple(proposals),
            notes=tuple(notes),
        )
        path = await ReportShelf(self._fs).write("umbrella", report.as_dict(), now)
        return dataclasses.replace(report, path=path)

    async def _candidates(self, scope: str | None) -> list[_Candidate]:
        suffix = "_" + scope_source(scope)
        fs = scoped(self._fs, scope)
        found = []
        for record in sorted((await self._usage.for_scope(scope).all()).values(), key=lambda r: r.name):
            if not (record.agent_created and record.state in ("active", "stale") and record.name):
                continue
            if not record.skill_id.endswith(suffix):
                continue
            try:
                fields = split_frontmatter(await fs.read_bytes(f"{live_folder(record.name)}/{SKILL_MD}")).fields
            except (FileNotFoundError, FrontmatterError):
                continue
            found.append(_Candidate(record.name, str(fields.get("description") or "")))
        return found

    async def _group(self, area: str, candidates: list[_Candidate], notes: list[str]) -> list[UmbrellaProposal]:
        if self._model is not None and not isinstance(self._model, DemoModel):
            try:
                return await self._ask_model(area, candidates)
            except (ModelError, ValueError) as exc:
                notes.append(f"{area}: the model's grouping was not usable ({exc}); grouped by description instead")
        return group_by_similarity(area, [(c.name, c.description) for c in candidates], self._threshold)

    async def _ask_model(self, area: str, candidates: list[_Candidate]) -> list[UmbrellaProposal]:
        assert self._model is not None
        listing = json.dumps([{"name": c.name, "description": c.description} for c in candidates])
        reply = await self._model.complete([Message.system(_PROMPT), Message.user(listing)])
        text = reply.message.content.strip()
        start, end = text.find("{"), text.rfind("}")
        data = json.loads(text[start : end + 1]) if 0 <= start < end else None
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, list):
            raise ValueError("no JSON object with a 'groups' list")
        names = {c.name for c in candidates}
        taken: set[str] = set()
        proposals = []
        for group in groups:
            members = group.get("members") if isinstance(group, dict) else None
            if not isinstance(members, list) or len(set(map(str, members))) < 2:
                raise ValueError("a group needs two or more members")
            unique = tuple(sorted(set(map(str, members))))
            if not set(unique) <= names - taken:
                raise ValueError(f"group {unique} names unknown skills or a skill twice")
            taken.update(unique)
            proposals.append(
                UmbrellaProposal(
                    area=area,
                    umbrella=str(group.get("umbrella") or _umbrella_name([c for c in candidates if c.name in unique])),
                    description=str(group.get("description") or ""),
                    members=unique,
                    reason=str(group.get("reason") or ""),
                )
            )
        return proposals


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2)


def group_by_similarity(area: str, skills: Sequence[tuple[str, str]], threshold: float) -> list[UmbrellaProposal]:
    """Group ``(name, description)`` pairs whose descriptions share at least ``threshold`` of
    their words (Jaccard index), transitively; one proposal per group of two or more, sorted."""
    words = {name: _words(description) for name, description in skills}
    names = sorted(words)
    parent = {name: name for name in names}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            union = words[first] | words[second]
            if union and len(words[first] & words[second]) / len(union) >= threshold:
                parent[max(root(first), root(second))] = min(root(first), root(second))
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(root(name), []).append(name)
    proposals = []
    for members in sorted(groups.values()):
        if len(members) < 2:
            continue
        shared = Counter(w for m in members for w in words[m])
        common = [w for w, n in sorted(shared.items(), key=lambda item: (-item[1], item[0])) if n > 1]
        proposals.append(
            UmbrellaProposal(
                area=area,
                umbrella=_umbrella_name([_Candidate(m, " ".join(words[m])) for m in members], common),
                description=f"One skill for {', '.join(common[:5]) or 'related work'}, replacing {', '.join(members)}.",
                members=tuple(members),
                reason=f"their descriptions share the words {', '.join(common[:8])}"
                if common
                else "their descriptions overlap",
            )
        )
    return proposals


def _umbrella_name(members: Sequence[_Candidate], common: Sequence[str] = ()) -> str:
    top = list(common[:2]) or sorted(_words(" ".join(m.description for m in members)))[:2]
    return "-".join([*top, "suite"]) if top else f"{members[0].name}-suite"

"""Promotion of drafts into live skills: two doors, one move.

- **Request** (:meth:`Promoter.request_promotion`, also a tool): the configured
  :class:`PromotionGate` decides — :class:`RejectAllGate` (the default),
  :class:`LocalApprovalGate` (a prompter callback, e.g. :class:`StdinPrompter`) or
  :class:`NotifyAndWaitGate` (notification sinks now, :meth:`Promoter.record_decision` later).
- **Operator** (:meth:`Promoter.promote_skill`): an explicit promotion that needs no gate.

Every request is kept as a review file ``skills/.reviews/<id>.json`` on the shared workspace
with the draft's full file list and script previews; decisions are recorded into it with
compare-and-set, so one decision wins. A promotion moves the draft into the live folder of its
area (:class:`LiveFolderTarget`) or saves it into a writable market (:class:`RepositoryTarget`),
stamps the usage record and is audited.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TextIO

import anyio.to_thread

from filesystems import AbstractFilesystem, VersionConflict
from harness.audit import AuditLog, context_fields
from harness.clock import Clock, from_iso, system_clock, to_iso, utc_stamp
from harness.context import RuntimeContext
from harness.learning._layout import (
    DRAFTS,
    REVIEWS,
    SKILL_MD,
    archive_folder,
    area_label,
    content_hash,
    draft_folder,
    live_folder,
    read_folder,
    refuse_links,
    scoped,
    skill_id,
    skill_label,
    skill_lock,
)
from harness.learning.errors import PromotionError, ReviewAlreadyDecided, ReviewNotFound, SkillAreaNotFound
from harness.learning.tools import OnChange, check_skill_name, ignore_change
from harness.learning.usage import SkillUsage, UsageScopes, with_state
from harness.terminal import escape_control
from harness.tools.function import Tool, tool_from_function
from repositories import FileContents, RepositoryError, SkillBundleContents, SkillRepository

__all__ = [
    "Decision",
    "Installed",
    "LiveFolderTarget",
    "LocalApprovalGate",
    "NotificationSink",
    "NotifyAndWaitGate",
    "Promoter",
    "PromotionGate",
    "PromotionResult",
    "PromotionTarget",
    "Prompter",
    "RejectAllGate",
    "RepositoryTarget",
    "ReviewRequest",
    "StdinPrompter",
]

_PREVIEW_CHARS = 4000


@dataclass(frozen=True, kw_only=True)
class ReviewRequest:
    """What a reviewer sees: the draft, who asked, every file with its size, script previews.

    ``scope`` is the user whose area holds the draft (``None``: the shared workspace);
    ``previews`` maps each ``scripts/`` file (and SKILL.md) to its first characters.
    """

    id: str
    name: str
    scope: str | None
    requested_at: datetime
    requested_by: Mapping[str, str]
    files: Mapping[str, int]
    previews: Mapping[str, str]
    content_hash: str
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of the review file."""
        return {
            "id": self.id,
            "name": self.name,
            "scope": self.scope,
            "requested_at": to_iso(self.requested_at),
            "requested_by": dict(self.requested_by),
            "files": dict(self.files),
            "previews": dict(self.previews),
            "content_hash": self.content_hash,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewRequest:
        """Read back what :meth:`as_dict` wrote."""
        return cls(**{**data, "requested_at": from_iso(data["requested_at"])})


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A reviewer's (or gate's) verdict on a request."""

    approved: bool
    reviewer: str
    reason: str = ""

    def as_dict(self, when: datetime) -> dict[str, Any]:
        return {"approved": self.approved, "reviewer": self.reviewer, "reason": self.reason, "decided_at": to_iso(when)}


@dataclass(frozen=True, kw_only=True)
class PromotionResult:
    """The outcome of a request, a recorded decision or an operator promotion.

    ``location`` and ``skill_id`` say where the promoted skill now lives (``promoted`` only).
    """

    status: Literal["promoted", "rejected", "pending"]
    name: str
    request_id: str | None = None
    reviewer: str | None = None
    reason: str = ""
    location: str | None = None
    skill_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape tools and the CLI print."""
        return dataclasses.asdict(self)


# -- gates ------------------------------------------------------------------------------------


class PromotionGate(ABC):
    """Decides promotion requests.

    :meth:`decide` returns a :class:`Decision` now, or ``None`` to leave the request pending
    until someone calls :meth:`Promoter.record_decision`. The review file is already written
    when it is called.
    """

    @abstractmethod
    async def decide(self, request: ReviewRequest) -> Decision | None:
        """Approve, reject, or leave ``request`` pending (``None``)."""


class RejectAllGate(PromotionGate):
    """Rejects every request (the default): only an operator's explicit promotion goes through."""

    async def decide(self, request: ReviewRequest) -> Decision:
        return Decision(
            approved=False,
            reviewer="gate:reject-all",
            reason="promotion requests are rejected by this agent's configuration; "
            "an operator can promote the draft explicitly",
        )


Prompter = Callable[[ReviewRequest], bool | Awaitable[bool]]
"""Asks someone about a request and returns whether they approved it."""


class LocalApprovalGate(PromotionGate):
    """Asks ``prompter`` (a callback, or :class:`StdinPrompter` in a terminal) right away."""

    def __init__(self, prompter: Prompter, *, reviewer: str = "local") -> None:
        self._prompter = prompter
        self._reviewer = reviewer

    async def decide(self, request: ReviewRequest) -> Decision:
        answer = self._prompter(request)
        approved = await answer if inspect.isawaitable(answer) else answer
        return Decision(approved=bool(approved), reviewer=self._reviewer, reason="local approval prompt")


class StdinPrompter:
    """Prints a request's summary to ``output_stream`` and reads ``y``/``yes`` from ``input_stream`` (a worker
    thread waits for the line, so the event loop keeps running). Defaults: stdin and stderr.
    Control characters in the draft's text are shown escaped (:func:`harness.terminal.escape_control`)."""

    def __init__(self, *, input_stream: TextIO | None = None, output_stream: TextIO | None = None) -> None:
        self._input = input_stream
        self._output = output_stream

    async def __call__(self, request: ReviewRequest) -> bool:
        return await anyio.to_thread.run_sync(self._ask, request)

    def _ask(self, request: ReviewRequest) -> bool:
        output = self._output or sys.stderr
        where = area_label(request.scope)
        lines = [f"Promote draft skill {request.name!r} of {where} ({request.content_hash})?"]
        if request.reason:
            lines.append(f"  reason: {request.reason}")
        lines += [f"  {path} ({size} bytes)" for path, size in request.files.items()]
        for path, preview in request.previews.items():
            lines += [f"--- {path}", preview]
        # Draft text is written by a model: escape control characters so it cannot hide lines.
        output.write(escape_control("\n".join(lines)) + "\nApprove? [y/N] ")
        output.flush()
        line = (self._input or sys.stdin).readline()
        return line.strip().lower() in {"y", "yes"}


NotificationSink = Callable[[ReviewRequest], Awaitable[None]]
"""Tells reviewers about a pending request (chat message, e-mail, ticket, log line)."""


class NotifyAndWaitGate(PromotionGate):
    """Calls every sink and leaves the request pending until a decision is recorded.

    A failing sink does not stop the others; the request stays pending either way (the review
    file is the source of truth).
    """

    def __init__(self, sinks: Sequence[NotificationSink] = ()) -> None:
        self._sinks = tuple(sinks)

    async def decide(self, request: ReviewRequest) -> None:
        failures: list[Exception] = []
        for sink in self._sinks:
            try:
                await sink(request)
            except Exception as exc:  # a broken sink must not lose the request
                failures.append(exc)
        if failures:
            raise PromotionError(
                f"review request {request.id} is pending, but {len(failures)} notification sink(s) "
                f"failed: {failures[0]!r}"
            ) from failures[0]
        return None


# -- targets ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Installed:
    """Where a promoted skill went: its location, its skill id, and the scope tracking it."""

    location: str
    skill_id: str
    usage_scope: str | None


class PromotionTarget(ABC):
    """Where promoted drafts go."""

    @abstractmethod
    async def install(self, fs: AbstractFilesystem, name: str, scope: str | None, when: datetime) -> Installed:
        """Move the draft ``skills/_drafts/<name>`` of ``fs`` (the scope's area) into place."""


class LiveFolderTarget(PromotionTarget):
    """The live ``skills/<name>/`` folder of the draft's own area; a live skill already there is
    archived first, never overwritten."""

    async def install(self, fs: AbstractFilesystem, name: str, scope: str | None, when: datetime) -> Installed:
        live = live_folder(name)
        if await fs.exists(live):
            await archive_folder(fs, live, name, when)
        await fs.move(draft_folder(name), live)
        return Installed(location=f"{area_label(scope)}/{live}", skill_id=skill_id(name, scope), usage_scope=scope)


class RepositoryTarget(PromotionTarget):
    """A writable market (``repository.save``); the draft is archived afterwards. Files under
    ``scripts/`` and files starting with ``#!`` keep an executable mode."""

    def __init__(self, repository: SkillRepository) -> None:
        if not repository.writable:
            raise ValueError(f"repository {repository.source!r} is read-only; open it with writable=True")
        self._repository = repository

    async def install(self, fs: AbstractFilesystem, name: str, scope: str | None, when: datetime) -> Installed:
        draft = draft_folder(name)
        entries = await fs.walk(draft)
        data = await fs.read_many([entry.path for entry in entries])
        prefix = len(draft) + 1
        files = tuple(
            FileContents(path=entry.path[prefix:], data=data[entry.path], mode=entry.mode)
            for entry in entries
            if entry.path[prefix:] != SKILL_MD
        )
        bundle = SkillBundleContents(folder=name, skill_md=data[f"{draft}/{SKILL_MD}"], files=files)
        try:
            await self._repository.save(bundle)
        except RepositoryError as exc:
            raise PromotionError(f"market {self._repository.source!r} refused skill {name!r}: {exc}") from exc
        await archive_folder(fs, draft, name, when)
        source = self._repository.source
        return Installed(location=f"{source}:{name}", skill_id=f"{name}_{source}", usage_scope=None)


# -- the promoter -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Review:
    request: ReviewRequest
    decision: Mapping[str, Any] | None = field(default=None)
    version: str = ""


class Promoter:
    """Carries out promotion requests, recorded decisions and operator promotions.

    ``fs`` is the shared workspace (users' areas are ``fs.scoped(user_id)``), where review files
    live; ``usage`` finds each scope's usage store; ``target`` is where promoted skills go.
    """

    def __init__(
        self,
        fs: AbstractFilesystem,
        *,
        usage: UsageScopes,
        audit: AuditLog,
        gate: PromotionGate | None = None,
        target: PromotionTarget | None = None,
        on_change: OnChange = ignore_change,
        clock: Clock = system_clock,
    ) -> None:
        self._fs = fs
        self._usage = usage
        self._audit = audit
        self._gate = gate or RejectAllGate()
        self._target = target or LiveFolderTarget()
        self._on_change = on_change
        self._clock = clock

    async def request_promotion(self, name: str, *, context: RuntimeContext, reason: str = "") -> PromotionResult:
        """Ask the gate to promote the caller's draft ``name``.

        Raises :class:`SkillAreaNotFound` when the caller has no such draft.
        """
        scope = context.user_id
        check_skill_name(name)
        request = await self._new_request(name, scope, context, reason)
        decision = await self._gate.decide(request)
        if decision is None:
            await self._audit.record(
                actor="agent",
                op="promotion.request",
                target=skill_label(name, scope),
                decision="pending",
                context=context,
                before_hash=request.content_hash,
                detail=f"review {request.id}",
            )
            return PromotionResult(status="pending", name=name, request_id=request.id, reason="waiting for a reviewer")
        return await self._decide(request, decision, context=context)

    async def record_decision(
        self, request_id: str, *, approved: bool, reviewer: str, reason: str = ""
    ) -> PromotionResult:
        """Record a reviewer's decision on a pending request; an approval promotes the draft.

        Raises :class:`ReviewNotFound` for an unknown id and :class:`ReviewAlreadyDecided` when
        a decision is already recorded (also when another reviewer wins a race).
        """
        review = await self._load(request_id)
        return await self._decide(
            review.request, Decision(approved=approved, reviewer=reviewer, reason=reason), review=review
        )

    async def promote_skill(
        self, name: str, reviewer: str, *, context: RuntimeContext | None = None
    ) -> PromotionResult:
        """An operator's explicit promotion of the draft ``name`` in ``context``'s user area
        (``None``: the shared workspace). Needs no gate; audited with the reviewer's name."""
        if not reviewer:
            raise ValueError("an operator promotion needs the reviewer's name")
        scope = context.user_id if context is not None else None
        check_skill_name(name)
        await self._draft_files(name, scope)
        return await self._promote(name, scope, actor=f"operator:{reviewer}", reviewer=reviewer, context=context)

    async def reviews(self, *, pending_only: bool = True) -> list[ReviewRequest]:
        """Review requests, oldest first (only those still waiting, by default)."""
        entries = await self._fs.walk(REVIEWS)
        data = await self._fs.read_many([e.path for e in entries if e.path.endswith(".json")])
        found = []
        for raw in data.values():
            document = json.loads(raw.decode("utf-8"))
            if not pending_only or document.get("decision") is None:
                found.append(ReviewRequest.from_dict(document["request"]))
        return sorted(found, key=lambda request: (request.requested_at, request.id))

    async def drafts(self, scope: str | None) -> list[str]:
        """The names of the drafts in ``scope``'s area (``None``: the shared workspace)."""
        entries = await scoped(self._fs, scope).walk(DRAFTS)
        names = {entry.path[len(DRAFTS) + 1 :].split("/", 1)[0] for entry in entries}
        return sorted(name for name in names if not name.startswith("."))

    def tool(self, context: RuntimeContext) -> Tool:
        """``request_promotion`` as a tool bound to ``context``."""
        promoter = self

        async def request_promotion(name: str, reason: str = "") -> dict[str, Any]:
            """Ask for your draft skill to be promoted to a live skill; a reviewer or policy decides.

            Args:
                name: The draft's name.
                reason: Why the skill is worth keeping (shown to the reviewer).
            """
            result = await promoter.request_promotion(name, context=context, reason=reason)
            return result.as_dict()

        return tool_from_function(request_promotion)

    # -- internals ----------------------------------------------------------------------------

    async def _check_unchanged(self, request: ReviewRequest, files: Mapping[str, bytes]) -> None:
        """Refuse to promote bytes other than the reviewed ones (audited)."""
        current = content_hash(files)
        if current == request.content_hash:
            return
        await self._audit.record(
            actor="harness",
            op="promotion.promote",
            target=skill_label(request.name, request.scope),
            decision="refused",
            before_hash=request.content_hash,
            after_hash=current,
            detail=f"review {request.id}: the draft changed after it was reviewed",
        )
        raise PromotionError(
            f"refused: draft {request.name!r} of {area_label(request.scope)} changed after review request "
            f"{request.id} (reviewed {request.content_hash}, now {current}); nothing was promoted — "
            "request promotion again so the new content is reviewed"
        )

    async def _draft_files(self, name: str, scope: str | None) -> dict[str, bytes]:
        fs = scoped(self._fs, scope)
        await refuse_links(fs, draft_folder(name))
        files = await read_folder(fs, draft_folder(name))
        if SKILL_MD not in files:
            raise SkillAreaNotFound(f"no draft named {name!r} in {area_label(scope)}; propose it first")
        return files

    async def _new_request(self, name: str, scope: str | None, context: RuntimeContext, reason: str) -> ReviewRequest:
        files = await self._draft_files(name, scope)
        now = self._clock()
        request = ReviewRequest(
            id=f"{utc_stamp(now)}-{uuid.uuid4().hex[:8]}",
            name=name,
            scope=scope,
            requested_at=now,
            requested_by=context_fields(context),
            files={path: len(data) for path, data in sorted(files.items())},
            previews={
                path: data[:_PREVIEW_CHARS].decode("utf-8", errors="replace")
                for path, data in sorted(files.items())
                if path == SKILL_MD or path.startswith("scripts/")
            },
            content_hash=content_hash(files) or "",
            reason=reason,
        )
        document = {"request": request.as_dict(), "decision": None}
        await self._fs.create_exclusive(_review_path(request.id), _encode(document))
        return request

    async def _load(self, request_id: str) -> _Review:
        if "/" in request_id or not request_id or request_id.startswith("."):
            raise ReviewNotFound(f"no review request {request_id!r}")
        path = _review_path(request_id)
        try:
            version = (await self._fs.stat(path)).version
            document = json.loads((await self._fs.read_bytes(path)).decode("utf-8"))
        except FileNotFoundError:
            raise ReviewNotFound(f"no review request {request_id!r}; list them with `harness skills drafts`") from None
        return _Review(
            request=ReviewRequest.from_dict(document["request"]), decision=document["decision"], version=version
        )

    async def _decide(
        self,
        request: ReviewRequest,
        decision: Decision,
        *,
        context: RuntimeContext | None = None,
        review: _Review | None = None,
    ) -> PromotionResult:
        review = review or await self._load(request.id)
        if review.decision is not None:
            raise ReviewAlreadyDecided(f"review request {request.id} was already decided: {review.decision}")
        if decision.approved:
            await self._check_unchanged(request, await self._draft_files(request.name, request.scope))
        document = {"request": request.as_dict(), "decision": decision.as_dict(self._clock())}
        try:
            await self._fs.compare_and_set(_review_path(request.id), _encode(document), review.version)
        except VersionConflict:
            raise ReviewAlreadyDecided(f"review request {request.id} was decided by someone else meanwhile") from None
        await self._audit.record(
            actor=decision.reviewer,
            op="promotion.request",
            target=skill_label(request.name, request.scope),
            decision="approved" if decision.approved else "rejected",
            context=context,
            before_hash=request.content_hash,
            detail=f"review {request.id}: {decision.reason}",
        )
        if not decision.approved:
            return PromotionResult(
                status="rejected",
                name=request.name,
                request_id=request.id,
                reviewer=decision.reviewer,
                reason=decision.reason,
            )
        result = await self._promote(
            request.name,
            request.scope,
            actor=decision.reviewer,
            reviewer=decision.reviewer,
            context=context,
            reviewed=request,
        )
        return dataclasses.replace(result, request_id=request.id, reason=decision.reason)

    async def _promote(
        self,
        name: str,
        scope: str | None,
        *,
        actor: str,
        reviewer: str,
        context: RuntimeContext | None,
        reviewed: ReviewRequest | None = None,
    ) -> PromotionResult:
        fs = scoped(self._fs, scope)
        now = self._clock()
        async with fs.lock(skill_lock(name)):
            before = await self._draft_files(name, scope)
            if reviewed is not None:
                await self._check_unchanged(reviewed, before)
            await refuse_links(fs, live_folder(name))
            installed = await self._target.install(fs, name, scope, now)
        draft_id = skill_id(name, scope)
        draft_usage = await self._usage.for_scope(scope).get(draft_id)
        await self._usage.for_scope(installed.usage_scope).update(
            installed.skill_id, lambda current: _promoted(current, draft_usage, installed.skill_id, name, reviewer, now)
        )
        if installed.skill_id != draft_id:
            await self._usage.for_scope(scope).update(
                draft_id,
                lambda current: with_state(
                    current, "archived", now, skill_id=draft_id, name=name, created_by="agent-draft"
                ),
            )
        await self._audit.record(
            actor=actor,
            op="promotion.promote",
            target=skill_label(name, scope),
            decision="applied",
            context=context,
            before_hash=content_hash(before),
            after_hash=content_hash(before),
            detail=f"promoted to {installed.location}",
        )
        self._on_change(scope)
        return PromotionResult(
            status="promoted",
            name=name,
            reviewer=reviewer,
            location=installed.location,
            skill_id=installed.skill_id,
        )


def _promoted(
    current: SkillUsage | None, draft: SkillUsage | None, sid: str, name: str, reviewer: str, now: datetime
) -> SkillUsage:
    base = current or (dataclasses.replace(draft, skill_id=sid) if draft is not None else SkillUsage(skill_id=sid))
    return dataclasses.replace(
        base,
        name=name,
        created_by="agent",
        state="active",
        state_changed_at=now,
        promoted_at=now,
        promoted_by=reviewer,
    )


def _review_path(request_id: str) -> str:
    return f"{REVIEWS}/{request_id}.json"


def _encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")

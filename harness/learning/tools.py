"""The agent's skill-authoring tools: ``propose_skill`` and ``skill_manage``.

A :class:`SkillWorkshop` is bound to one scope's filesystem (the calling user's area, or the
shared workspace) and one caller. Every write is validated (names, paths, sizes), scanned
before anything touches the filesystem, applied under a per-skill lock, recorded in the usage
store and audited — refusals included. Drafts live in ``skills/_drafts/<name>/``, deleted skills
move to ``skills/.archive/<name>-<utc stamp>/``; both are invisible to the per-turn pipeline.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import yaml

from filesystems import AbstractFilesystem, PathEscapeError, normalize_path
from harness.audit import AuditLog
from harness.clock import Clock, system_clock
from harness.context import RuntimeContext
from harness.learning._layout import (
    DRAFTS,
    SKILL_MD,
    archive_folder,
    content_hash,
    draft_folder,
    live_folder,
    read_folder,
    refuse_links,
    skill_id,
    skill_label,
    skill_lock,
)
from harness.learning.errors import AuthoringRefused, DangerousContent, LinkRefused, SkillAreaNotFound
from harness.learning.usage import SkillUsage, UsageStore, with_state
from harness.skills.frontmatter import Frontmatter, FrontmatterError, split_frontmatter
from harness.skills.rules import check_fields, unsafe_segment_reason
from harness.skills.scanner import Scanner, ScanVerdict
from harness.tools.function import Tool, tool_from_function

__all__ = [
    "AUTHORING_FOLDERS",
    "AuthoringLimits",
    "ManageAction",
    "OnChange",
    "SkillWorkshop",
    "check_skill_name",
    "ignore_change",
]

AUTHORING_FOLDERS = ("references", "scripts", "templates", "assets")
"""The only folders of a skill the agent may put files in (besides ``SKILL.md``)."""

ManageAction = Literal["create", "edit", "patch", "write_file", "remove_file", "delete"]

OnChange = Callable[[str | None], None]
"""Called after every successful write with the scope's user id (``None``: shared workspace),
so the pipeline can drop its caches for that scope."""

_REFUSED_CODES = ("name-", "description-", "missing-")


@dataclass(frozen=True, kw_only=True)
class AuthoringLimits:
    """Size limits for agent-written skills: per file, per skill folder (all files), file count."""

    max_file_bytes: int = 256 * 1024
    max_skill_bytes: int = 2 * 1024 * 1024
    max_files: int = 100

    def __post_init__(self) -> None:
        if min(self.max_file_bytes, self.max_skill_bytes, self.max_files) <= 0:
            raise ValueError("authoring limits must be positive")


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """A computed change to one skill folder: its files before (``None``: new) and after."""

    folder: str
    before: dict[str, bytes] | None
    after: dict[str, bytes]


def ignore_change(scope: str | None) -> None:
    """The default ``on_change``: nothing to invalidate."""


class SkillWorkshop:
    """Agent-side skill authoring in one scope, on behalf of one caller.

    ``fs`` is the scope's filesystem (``shared.scoped(user_id)``, or the shared workspace with
    ``scope=None``); ``usage`` is that scope's usage store; ``audit`` receives a record for every
    mutation and refusal. With ``auto_promote=True`` new skills go straight to the live
    ``skills/<name>/`` folder instead of ``skills/_drafts/<name>/``.

    Refusals raise :class:`AuthoringRefused` (:class:`DangerousContent` for a dangerous scan
    verdict, :class:`SkillAreaNotFound` for an unknown skill); the message tells the model what
    to change. Nothing is written when a request is refused.
    """

    def __init__(
        self,
        fs: AbstractFilesystem,
        *,
        context: RuntimeContext,
        scope: str | None,
        usage: UsageStore,
        audit: AuditLog,
        scanner: Scanner | None = None,
        limits: AuthoringLimits = AuthoringLimits(),
        auto_promote: bool = False,
        on_change: OnChange = ignore_change,
        clock: Clock = system_clock,
    ) -> None:
        self._fs = fs
        self._context = context
        self._scope = scope
        self._usage = usage
        self._audit = audit
        self._scanner = scanner or Scanner()
        self._limits = limits
        self._auto_promote = auto_promote
        self._on_change = on_change
        self._clock = clock

    # -- the two tools ------------------------------------------------------------------------

    async def propose_skill(
        self,
        name: str,
        description: str,
        body: str,
        files: Sequence[Mapping[str, str]] | None = None,
    ) -> dict[str, Any]:
        """Create a new skill as a draft (live with ``auto_promote``); see :meth:`skill_manage`."""
        return await self._run("propose_skill", name, lambda: self._plan_create(name, description, body, files))

    async def skill_manage(
        self,
        action: ManageAction,
        name: str,
        *,
        description: str | None = None,
        body: str | None = None,
        content: str | None = None,
        old_string: str | None = None,
        new_string: str | None = None,
        replace_all: bool = False,
        path: str | None = None,
        file_content: str | None = None,
        files: Sequence[Mapping[str, str]] | None = None,
    ) -> dict[str, Any]:
        """Change a skill of this scope; drafts are preferred over live skills of the same name.

        - ``create``: like :meth:`propose_skill` (``description``, ``body``, ``files``).
        - ``edit``: replace ``SKILL.md`` whole (``content``), or its ``description`` and/or
          ``body``; the name cannot change.
        - ``patch``: replace ``old_string`` by ``new_string`` in ``path`` (default ``SKILL.md``):
          an exact match first, else a match that ignores differences in whitespace; more than
          one match is refused unless ``replace_all``.
        - ``write_file`` / ``remove_file``: ``path`` under ``references/``, ``scripts/``,
          ``templates/`` or ``assets/`` (``file_content`` for writes).
        - ``delete``: move the skill to ``skills/.archive/<name>-<utc stamp>/``.
        """
        if action == "delete":
            return await self._delete(name)
        planners: dict[str, Callable[[], Awaitable[_Plan]]] = {
            "create": lambda: self._plan_create(name, _required(description, "description", action), body or "", files),
            "edit": lambda: self._plan_edit(name, description, body, content),
            "patch": lambda: self._plan_patch(name, path or SKILL_MD, old_string, new_string, replace_all),
            "write_file": lambda: self._plan_write(name, path, file_content),
            "remove_file": lambda: self._plan_remove(name, path),
        }
        if action not in planners:
            raise AuthoringRefused(
                f"unknown skill_manage action {action!r}; use one of create, edit, patch, "
                "write_file, remove_file, delete"
            )
        return await self._run(f"skill_manage.{action}", name, planners[action])

    def tools(self) -> list[Tool]:
        """``propose_skill`` and ``skill_manage`` as :class:`~harness.tools.function.Tool` objects."""
        workshop = self

        async def propose_skill(
            name: str, description: str, body: str, files: list[dict[str, str]] | None = None
        ) -> dict[str, Any]:
            """Save a new skill as a draft for review; it is not used until it is promoted.

            Args:
                name: Lowercase letters, digits and single hyphens, at most 64 characters.
                description: When to use the skill (what the catalog shows), at most 1024 characters.
                body: The Markdown instructions of SKILL.md.
                files: Extra files as {"path": ..., "content": ...}; paths under references/,
                    scripts/, templates/ or assets/.
            """
            return await workshop.propose_skill(name, description, body, files)

        async def skill_manage(
            action: ManageAction,
            name: str,
            description: str | None = None,
            body: str | None = None,
            content: str | None = None,
            old_string: str | None = None,
            new_string: str | None = None,
            replace_all: bool = False,
            path: str | None = None,
            file_content: str | None = None,
            files: list[dict[str, str]] | None = None,
        ) -> dict[str, Any]:
            """Create, edit, patch or delete a skill (or one of its files) in your skill area.

            Args:
                action: create, edit, patch, write_file, remove_file or delete (delete archives).
                name: The skill's name; a draft of that name is changed before a live skill.
                description: For create/edit: the new description.
                body: For create/edit: the new SKILL.md instructions.
                content: For edit: the whole new SKILL.md, frontmatter included.
                old_string: For patch: the text to replace (whitespace differences tolerated).
                new_string: For patch: the replacement text.
                replace_all: For patch: replace every match instead of refusing several.
                path: For patch (default SKILL.md), write_file and remove_file: a path inside
                    the skill, under references/, scripts/, templates/ or assets/.
                file_content: For write_file: the file's text.
                files: For create: extra files as {"path": ..., "content": ...}.
            """
            return await workshop.skill_manage(
                action,
                name,
                description=description,
                body=body,
                content=content,
                old_string=old_string,
                new_string=new_string,
                replace_all=replace_all,
                path=path,
                file_content=file_content,
                files=files,
            )

        return [tool_from_function(propose_skill), tool_from_function(skill_manage)]

    # -- the shared write path ----------------------------------------------------------------

    async def _run(self, op: str, name: str, plan: Callable[[], Awaitable[_Plan]]) -> dict[str, Any]:
        check_skill_name(name)
        target = self._target(name)
        async with self._fs.lock(skill_lock(name)):
            try:
                await self._refuse_links(name)
                change = await plan()
                verdict = self._scan(change)
                self._check_limits(change.after)
            except AuthoringRefused as exc:
                verdict_of = exc.verdict if isinstance(exc, DangerousContent) else None
                await self._audit.record(
                    actor="agent",
                    op=op,
                    target=target,
                    decision="refused",
                    context=self._context,
                    scan=verdict_of,
                    detail=str(exc),
                )
                raise
            await self._write(change)
        now = self._clock()
        creating = change.before is None
        await self._usage.update(
            skill_id(name, self._scope),
            lambda current: (
                self._created(name, now) if creating else _patched(current, skill_id(name, self._scope), name, now)
            ),
        )
        await self._audit.record(
            actor="agent",
            op=op,
            target=f"{target}:{change.folder}",
            decision="applied",
            context=self._context,
            scan=verdict,
            before_hash=content_hash(change.before),
            after_hash=content_hash(change.after),
        )
        self._on_change(self._scope)
        return {
            "status": "ok",
            "skill": name,
            "path": change.folder,
            "state": "active" if change.folder == live_folder(name) else "draft",
            "warnings": [finding.as_dict() for finding in verdict.findings],
        }

    async def _delete(self, name: str) -> dict[str, Any]:
        check_skill_name(name)
        target = self._target(name)
        async with self._fs.lock(skill_lock(name)):
            try:
                await self._refuse_links(name)
                folder, before = await self._locate(name)
            except (SkillAreaNotFound, LinkRefused) as exc:
                await self._audit.record(
                    actor="agent",
                    op="skill_manage.delete",
                    target=target,
                    decision="refused",
                    context=self._context,
                    detail=str(exc),
                )
                raise
            now = self._clock()
            archived = await archive_folder(self._fs, folder, name, now)
        await self._usage.update(
            skill_id(name, self._scope),
            lambda current: with_state(current, "archived", now, skill_id=skill_id(name, self._scope), name=name),
        )
        await self._audit.record(
            actor="agent",
            op="skill_manage.delete",
            target=f"{target}:{folder}",
            decision="applied",
            context=self._context,
            before_hash=content_hash(before),
            detail=f"archived to {archived}",
        )
        self._on_change(self._scope)
        return {"status": "ok", "skill": name, "archived_to": archived}

    def _scan(self, change: _Plan) -> ScanVerdict:
        before = change.before or {}
        changed = {path: data for path, data in change.after.items() if before.get(path) != data}
        verdict = self._scanner.scan(changed)
        if verdict.dangerous:
            raise DangerousContent(
                f"refused: the content of skill folder {change.folder!r} looks dangerous and was not "
                f"written: {verdict.summary()}",
                verdict,
            )
        return verdict

    def _check_limits(self, files: Mapping[str, bytes]) -> None:
        limits = self._limits
        if len(files) > limits.max_files:
            raise AuthoringRefused(f"refused: {len(files)} files exceed the limit of {limits.max_files} per skill")
        for path, data in files.items():
            if len(data) > limits.max_file_bytes:
                raise AuthoringRefused(
                    f"refused: {path} is {len(data)} bytes, over the limit of {limits.max_file_bytes} per file"
                )
        total = sum(len(data) for data in files.values())
        if total > limits.max_skill_bytes:
            raise AuthoringRefused(
                f"refused: the skill would hold {total} bytes, over the limit of {limits.max_skill_bytes}"
            )

    async def _write(self, change: _Plan) -> None:
        if change.before is None:
            # Build the folder aside and move it into place, so nobody sees half a skill.
            staging = f"{DRAFTS}/.staging-{uuid.uuid4().hex}"
            for path, data in change.after.items():
                await self._fs.write_bytes(f"{staging}/{path}", data, mode=_mode(path, data))
            await self._fs.move(staging, change.folder)
            return
        for path, data in change.after.items():
            if change.before.get(path) != data:
                await self._fs.write_bytes(f"{change.folder}/{path}", data, mode=_mode(path, data))
        for path in change.before.keys() - change.after.keys():
            await self._fs.delete(f"{change.folder}/{path}")

    # -- planning each action -----------------------------------------------------------------

    async def _plan_create(
        self, name: str, description: str, body: str, files: Sequence[Mapping[str, str]] | None
    ) -> _Plan:
        for folder in (draft_folder(name), live_folder(name)):
            if await self._fs.exists(folder):
                raise AuthoringRefused(
                    f"refused: a skill named {name!r} already exists at {folder}; change it with "
                    "skill_manage edit/patch/write_file, or pick another name"
                )
        after = {SKILL_MD: _validated_skill_md(name, _build_skill_md(name, description, body))}
        for item in files or ():
            path = _extra_file_path(_field(item, "path"))
            if path in after:
                raise AuthoringRefused(f"refused: file {path} is listed twice")
            after[path] = _field(item, "content").encode("utf-8")
        folder = live_folder(name) if self._auto_promote else draft_folder(name)
        return _Plan(folder=folder, before=None, after=after)

    async def _plan_edit(self, name: str, description: str | None, body: str | None, content: str | None) -> _Plan:
        folder, before = await self._locate(name)
        if content is not None:
            if description is not None or body is not None:
                raise AuthoringRefused("refused: edit takes either content or description/body, not both")
            skill_md = content.encode("utf-8")
        elif description is None and body is None:
            raise AuthoringRefused("refused: edit needs content, or a description and/or body")
        else:
            current = _parse(before.get(SKILL_MD, b""))
            fields = dict(current.fields)
            if description is not None:
                fields["description"] = description
            skill_md = _render(fields, body if body is not None else current.body)
        return _Plan(folder=folder, before=before, after={**before, SKILL_MD: _validated_skill_md(name, skill_md)})

    async def _plan_patch(self, name: str, path: str, old: str | None, new: str | None, replace_all: bool) -> _Plan:
        folder, before = await self._locate(name)
        clean = _patchable_path(path)
        if clean not in before:
            raise AuthoringRefused(f"refused: skill {name!r} has no file {clean}; files: {', '.join(sorted(before))}")
        text = _decode(before[clean], clean)
        patched = _patched_text(
            text, _required(old, "old_string", "patch"), _required(new, "new_string", "patch"), replace_all, clean
        )
        data = patched.encode("utf-8")
        if clean == SKILL_MD:
            data = _validated_skill_md(name, data)
        return _Plan(folder=folder, before=before, after={**before, clean: data})

    async def _plan_write(self, name: str, path: str | None, file_content: str | None) -> _Plan:
        folder, before = await self._locate(name)
        clean = _extra_file_path(_required(path, "path", "write_file"))
        data = _required(file_content, "file_content", "write_file").encode("utf-8")
        return _Plan(folder=folder, before=before, after={**before, clean: data})

    async def _plan_remove(self, name: str, path: str | None) -> _Plan:
        folder, before = await self._locate(name)
        clean = _extra_file_path(_required(path, "path", "remove_file"))
        if clean not in before:
            raise AuthoringRefused(f"refused: skill {name!r} has no file {clean}; files: {', '.join(sorted(before))}")
        return _Plan(folder=folder, before=before, after={p: d for p, d in before.items() if p != clean})

    # -- helpers ------------------------------------------------------------------------------

    async def _locate(self, name: str) -> tuple[str, dict[str, bytes]]:
        for folder in (draft_folder(name), live_folder(name)):
            files = await read_folder(self._fs, folder)
            if SKILL_MD in files:
                return folder, files
        raise SkillAreaNotFound(f"no draft or skill named {name!r} in your skill area; create it with propose_skill")

    async def _refuse_links(self, name: str) -> None:
        for folder in (draft_folder(name), live_folder(name)):
            await refuse_links(self._fs, folder)

    def _created(self, name: str, now: datetime) -> SkillUsage:
        live = self._auto_promote
        return SkillUsage(
            skill_id=skill_id(name, self._scope),
            name=name,
            created_by="agent" if live else "agent-draft",
            state="active" if live else "draft",
            environments=(self._context.environment,),
            created_at=now,
            state_changed_at=now,
            promoted_at=now if live else None,
            promoted_by="auto-promote" if live else None,
        )

    def _target(self, name: str) -> str:
        return skill_label(name, self._scope)


def _patched(current: SkillUsage | None, sid: str, name: str, now: datetime) -> SkillUsage:
    usage = current or SkillUsage(skill_id=sid, name=name)
    return dataclasses.replace(usage, name=usage.name or name, patches=usage.patches + 1, last_patched=now)


def check_skill_name(name: str) -> None:
    """Refuse (:class:`AuthoringRefused`) a name the agent may not give a skill it writes."""
    if not isinstance(name, str):
        raise AuthoringRefused(f"refused: skill name {name!r} must be a string")
    unsafe = unsafe_segment_reason(name)
    if unsafe:
        raise AuthoringRefused(f"refused: skill name {name!r} {unsafe}")
    problems = [p for p in check_fields({"name": name}, folder=None) if p.code.startswith("name-")]
    if problems:
        raise AuthoringRefused(f"refused: {'; '.join(p.message for p in problems)}")


def _extra_file_path(path: str) -> str:
    try:
        clean = normalize_path(path)
    except PathEscapeError as exc:
        raise AuthoringRefused(f"refused: {exc}") from None
    parts = clean.split("/")
    if len(parts) < 2 or parts[0] not in AUTHORING_FOLDERS:
        raise AuthoringRefused(
            f"refused: file path {path!r} must be inside one of {', '.join(f + '/' for f in AUTHORING_FOLDERS)}"
        )
    if any(part.startswith(".") for part in parts) or any(unsafe_segment_reason(part) for part in parts):
        raise AuthoringRefused(f"refused: file path {path!r} has a hidden or unsafe segment")
    return clean


def _patchable_path(path: str) -> str:
    try:
        is_skill_md = normalize_path(path) == SKILL_MD
    except PathEscapeError as exc:
        raise AuthoringRefused(f"refused: {exc}") from None
    return SKILL_MD if is_skill_md else _extra_file_path(path)


def _field(item: Mapping[str, str], key: str) -> str:
    value = item.get(key) if isinstance(item, Mapping) else None
    if not isinstance(value, str):
        raise AuthoringRefused(f"refused: each file needs a string {key!r} (got {item!r:.80})")
    return value


def _required(value: str | None, what: str, action: str) -> str:
    if value is None:
        raise AuthoringRefused(f"refused: {action} needs {what}")
    return value


def _build_skill_md(name: str, description: str, body: str) -> bytes:
    return _render({"name": name, "description": description}, body)


def _render(fields: Mapping[str, Any], body: str) -> bytes:
    front = yaml.safe_dump(dict(fields), sort_keys=False, allow_unicode=True, width=1 << 16)
    return f"---\n{front}---\n\n{body.strip()}\n".encode()


def _parse(data: bytes) -> Frontmatter:
    try:
        return split_frontmatter(data)
    except FrontmatterError as exc:
        raise AuthoringRefused(f"refused: SKILL.md cannot be parsed: {exc}") from None


def _validated_skill_md(name: str, data: bytes) -> bytes:
    fields = _parse(data).fields
    if fields.get("name") != name:
        raise AuthoringRefused(
            f"refused: SKILL.md must keep 'name: {name}' (found {fields.get('name')!r}); "
            "renaming is not supported — create a new skill instead"
        )
    problems = [p for p in check_fields(fields, folder=name) if p.error and p.code.startswith(_REFUSED_CODES)]
    if problems:
        raise AuthoringRefused(f"refused: {'; '.join(p.message for p in problems)}")
    return data


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthoringRefused(f"refused: {path} is not UTF-8 text and cannot be patched") from None


def _patched_text(text: str, old: str, new: str, replace_all: bool, path: str) -> str:
    if not old:
        raise AuthoringRefused("refused: old_string must not be empty")
    exact = text.count(old)
    if exact == 1 or (exact > 1 and replace_all):
        return text.replace(old, new)
    if exact > 1:
        raise AuthoringRefused(
            f"refused: old_string occurs {exact} times in {path}; add surrounding text to make it "
            "unique, or set replace_all"
        )
    tokens = old.split()
    pattern = re.compile(r"\s+".join(re.escape(token) for token in tokens)) if tokens else None
    matches = len(pattern.findall(text)) if pattern is not None else 0
    if pattern is None or matches == 0:
        raise AuthoringRefused(f"refused: old_string was not found in {path} (not even ignoring whitespace)")
    if matches > 1 and not replace_all:
        raise AuthoringRefused(
            f"refused: old_string matches {matches} places in {path} when whitespace is ignored; "
            "add surrounding text to make it unique, or set replace_all"
        )
    return pattern.sub(lambda _match: new, text, count=0 if replace_all else 1)


def _mode(path: str, data: bytes) -> int:
    return 0o755 if path.startswith("scripts/") or data.startswith(b"#!") else 0o644

"""Where the self-learning loop keeps things, relative to a scope's filesystem root.

Everything but live skills sits in a folder starting with ``.`` or ``_``, which the per-turn
pipeline never reads as a skill layer.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import anyio.to_thread

from filesystems import AbstractFilesystem, InvalidUserId, validate_user_id
from harness.audit import AUDIT
from harness.clock import utc_stamp
from harness.learning.errors import LinkRefused

__all__ = [
    "ARCHIVE",
    "AUDIT",
    "CURATOR",
    "DRAFTS",
    "REVIEWS",
    "SKILLS",
    "SKILL_MD",
    "USAGE_SIDECAR",
    "archive_folder",
    "area_label",
    "content_hash",
    "discover_users",
    "draft_folder",
    "live_folder",
    "read_folder",
    "refuse_links",
    "scope_source",
    "scoped",
    "skill_id",
    "skill_label",
    "skill_lock",
]

SKILLS = "skills"
SKILL_MD = "SKILL.md"
DRAFTS = f"{SKILLS}/_drafts"
ARCHIVE = f"{SKILLS}/.archive"
USAGE_SIDECAR = f"{SKILLS}/.usage.json"
REVIEWS = f"{SKILLS}/.reviews"
CURATOR = f"{SKILLS}/.curator"

_USER_SOURCE = "workspace-namespaced"
_WORKSPACE_SOURCE = "workspace"


def scope_source(scope: str | None) -> str:
    """The source slug skill ids of a scope carry: a user's area or the shared workspace."""
    return _USER_SOURCE if scope is not None else _WORKSPACE_SOURCE


def skill_id(name: str, scope: str | None) -> str:
    """The id a live skill called ``name`` has in ``scope`` (drafts are tracked under it too)."""
    return f"{name}_{scope_source(scope)}"


def draft_folder(name: str) -> str:
    return f"{DRAFTS}/{name}"


def live_folder(name: str) -> str:
    return f"{SKILLS}/{name}"


async def read_folder(fs: AbstractFilesystem, folder: str) -> dict[str, bytes]:
    """Every file below ``folder`` keyed by its path relative to ``folder``, in one batch."""
    entries = await fs.walk(folder)
    data = await fs.read_many([entry.path for entry in entries])
    prefix = len(folder) + 1
    return {path[prefix:]: content for path, content in data.items()}


async def refuse_links(fs: AbstractFilesystem, folder: str) -> None:
    """Raise :class:`LinkRefused` if ``folder`` (or any folder above it in ``fs``) is a symbolic
    link, or anything below it is one. Stores without host folders have no links."""
    host, root = fs.host_path(folder), fs.host_path("")
    if host is None or root is None:
        return
    found = await anyio.to_thread.run_sync(_first_link, root, host)
    if found is not None:
        raise LinkRefused(
            f"refused: {folder} holds a symbolic link ({found}); a skill is plain files only — "
            "remove the link and write the files with skill_manage"
        )


def _first_link(root: Path, folder: Path) -> str | None:
    current = root
    for part in folder.relative_to(root).parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return str(current.relative_to(root))
        except FileNotFoundError:
            return None
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for entry in (*dirnames, *filenames):
            if os.path.islink(os.path.join(dirpath, entry)):
                return os.path.relpath(os.path.join(dirpath, entry), root)
    return None


def content_hash(files: Mapping[str, bytes] | None) -> str | None:
    """SHA-256 over a folder's sorted paths and bytes; ``None`` for no folder at all."""
    if files is None:
        return None
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\0{len(files[path])}\0".encode())
        digest.update(files[path])
    return "sha256:" + digest.hexdigest()


async def archive_folder(fs: AbstractFilesystem, folder: str, name: str, when: datetime) -> str:
    """Move ``folder`` to ``skills/.archive/<name>-<utc stamp>/`` and return the new path."""
    target = f"{ARCHIVE}/{name}-{utc_stamp(when)}"
    await fs.move(folder, target)
    return target


async def discover_users(fs: AbstractFilesystem) -> list[str]:
    """User ids with a ``skills/`` folder in the shared workspace ``fs`` (sorted).

    Works where user areas are folders of the workspace (local, sandbox); stores that keep users
    elsewhere (remote key-value stores) need the user list from the application.
    """
    try:
        entries = await fs.list("")
    except (FileNotFoundError, NotADirectoryError):
        return []
    users = []
    for entry in entries:
        if not entry.is_dir:
            continue
        try:
            validate_user_id(entry.name)
        except InvalidUserId:
            continue
        if await fs.exists(f"{entry.name}/{SKILLS}"):
            users.append(entry.name)
    return users


def scoped(fs: AbstractFilesystem, scope: str | None) -> AbstractFilesystem:
    """The filesystem of ``scope``: the user's area, or ``fs`` itself for the shared workspace."""
    return fs.scoped(scope) if scope is not None else fs


def area_label(scope: str | None) -> str:
    """How audit records and reports name a scope: ``users/<id>`` or ``workspace``."""
    return f"users/{scope}" if scope is not None else "workspace"


def skill_label(name: str, scope: str | None) -> str:
    """How audit records and messages name a skill: ``<area>/<name>``."""
    return f"{area_label(scope)}/{name}"


def skill_lock(name: str) -> str:
    """The lock every writer of skill ``name`` holds while it changes the skill's folders."""
    return f"learning:skill:{name}"

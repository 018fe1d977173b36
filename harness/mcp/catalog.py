"""One user's merged skills in the shapes of the MCP Skills extension (``io.modelcontextprotocol/skills``).

Pure data: this module knows the :class:`~harness.pipeline.TurnPlan` and the extension's wire
shapes (plain dicts), not the MCP SDK. :mod:`harness.mcp.server` puts them on the wire.

- A skill's path is its name (``skill://pdf-tools/SKILL.md``); when two skills of one view share a
  name, both get their source slug as a prefix (``skill://git-acme-skills/pdf-tools/SKILL.md``).
- An entry's ``resources`` lists SKILL.md and every other file with ``sha256:<hex>`` and ``size``.
  Hashing needs the bytes, so the manifest of a skill is computed once per content digest of its
  folder and cached: a warm request reads nothing.
- A skill that reached the harness as dynamic content (a market with no digest to give, such as
  another MCP server's ``"resources": "dynamic"``) is served as ``"resources": "dynamic"``: its
  bytes may differ on the next read, so no digest is published for them, nothing is read to list
  it, and its files are reached with ``resources/read`` and directory reads as any skill's are.
- A skill the extension does not allow is not served: it is left out of ``skills/list`` and
  reported in :attr:`Listing.omitted` with the reason, and ``skills/get``, ``resources/read`` and
  directory reads of it answer with an error that says why (:meth:`SkillCatalog.problem`).
  That is a skill over the extension's limits (:data:`MAX_FILES` files and :data:`MAX_BYTES`
  bytes per skill, checked from the sizes the layer already knows, before anything is read),
  and one whose frontmatter ``name`` the URI cannot carry: the URI's last segment must be the
  ``name`` the SKILL.md declares and that name must keep the Agent Skills naming rules, so a
  SKILL.md without ``name`` (loaded under its folder's name) or named ``Bad_Name`` is left out.
"""

from __future__ import annotations

import datetime
import hashlib
import mimetypes
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from filesystems import relative_path_problem
from harness.mcp.errors import SkillRequestError
from harness.pipeline.plan import ResolvedSkill, TurnPlan
from harness.skills.rules import check_name
from harness.skills.skill import Layer, Skill
from harness.tools.skills import read_skill_bytes
from repositories import RepositoryError

__all__ = [
    "DIRECTORY_MIME",
    "EXTENSION",
    "MAX_BYTES",
    "MAX_FILES",
    "SCHEME",
    "Listing",
    "SkillCatalog",
    "frontmatter_json",
]

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
DIRECTORY_MIME = "inode/directory"
#: The extension's per-skill limits: resources (SKILL.md included) and the sum of their sizes.
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
_MAIN = "SKILL.md"
_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of ``skills/list`` for one user: the entries, the skills left out with the
    reason, and the position the next page starts at (``None`` on the last page)."""

    skills: tuple[dict[str, Any], ...]
    omitted: tuple[dict[str, str], ...]
    next: int | None = None


def frontmatter_json(value: Any) -> Any:
    """Frontmatter as JSON values: mappings, lists, text, numbers, booleans and null pass through,
    dates become ISO text and anything else its text."""
    if isinstance(value, Mapping):
        return {str(key): frontmatter_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [frontmatter_json(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)


def _hashed(files: dict[str, bytes]) -> tuple[dict[str, Any], ...]:
    """Manifest items (relative ``uri``, ``digest``, ``size``) of ``files``, in their order."""
    return tuple(
        {"uri": path, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
        for path, data in files.items()
    )


def mime_type(path: str) -> str:
    """The MIME type a skill file is served with (``text/markdown`` for Markdown)."""
    if path.lower().endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(path)[0] or "application/octet-stream"


class SkillCatalog:
    """Skill entries, file reads and directory reads over one user's :class:`TurnPlan`.

    One instance serves every user; its cache of manifests is keyed by layer, folder and content
    digest (a user's own folders also by the user), so no user's manifest is ever served to
    another and an edit is a new key.
    """

    def __init__(self) -> None:
        self._manifests: OrderedDict[tuple[str, ...], tuple[dict[str, Any], ...]] = OrderedDict()

    # -- naming ------------------------------------------------------------------------------

    @staticmethod
    def paths(plan: TurnPlan) -> dict[str, ResolvedSkill]:
        """Skill path → skill for every skill of ``plan`` (see the module docstring)."""
        counts: dict[str, int] = {}
        for resolved in plan.skills.values():
            counts[resolved.skill.name] = counts.get(resolved.skill.name, 0) + 1
        found: dict[str, ResolvedSkill] = {}
        for resolved in sorted(plan.skills.values(), key=lambda s: (s.skill.name, s.skill.source)):
            name = resolved.skill.name
            found[name if counts[name] == 1 else f"{resolved.skill.source}/{name}"] = resolved
        return found

    def resolve(self, plan: TurnPlan, uri: str) -> tuple[str, ResolvedSkill, str]:
        """``(skill path, skill, relative path)`` of a ``skill://`` URI (``""`` for the skill's
        root); raises :class:`SkillRequestError` for a URI outside this user's skills."""
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            raise SkillRequestError(f"{uri!r} is not a {SCHEME} URI")
        rest = uri[len(SCHEME) :].rstrip("/")
        best: tuple[str, ResolvedSkill] | None = None
        for path, resolved in self.paths(plan).items():
            if (rest == path or rest.startswith(path + "/")) and (best is None or len(path) > len(best[0])):
                best = (path, resolved)
        if best is None:
            raise SkillRequestError(f"no skill is served at {uri}")
        relative = rest[len(best[0]) + 1 :]
        if relative:
            problem = relative_path_problem(relative)
            if problem is not None:
                raise SkillRequestError(f"{uri} is not a file of skill {best[0]!r}: the path {problem}")
        return best[0], best[1], relative

    # -- entries -----------------------------------------------------------------------------

    async def listing(self, plan: TurnPlan, start: int = 0, count: int | None = None) -> Listing:
        """The skills of ``plan`` from position ``start`` (``count`` of them, default all) within
        the limits, the ones left out, and where the next page starts (``None``: no more)."""
        paths = list(self.paths(plan).items())
        end = len(paths) if count is None else min(len(paths), start + count)
        skills: list[dict[str, Any]] = []
        omitted: list[dict[str, str]] = []
        for path, resolved in paths[start:end]:
            try:
                problem = await self.problem(resolved)
                if problem is None:
                    skills.append(await self.entry(plan, path, resolved))
                    continue
            except (OSError, RepositoryError) as exc:  # a file over max_file_size, a market down
                problem = f"its files cannot be read: {exc}"
            omitted.append({"uri": f"{SCHEME}{path}/{_MAIN}", "reason": problem})
        return Listing(skills=tuple(skills), omitted=tuple(omitted), next=end if end < len(paths) else None)

    async def get(self, plan: TurnPlan, uri: str) -> dict[str, Any]:
        """The entry of the skill whose SKILL.md is ``uri``."""
        path, resolved, relative = self.resolve(plan, uri)
        if relative != _MAIN:
            raise SkillRequestError(f"{uri} is not the SKILL.md of a skill (try {SCHEME}{path}/{_MAIN})")
        await self._check_served(path, resolved)
        return await self.entry(plan, path, resolved)

    async def problem(self, resolved: ResolvedSkill) -> str | None:
        """Why the extension does not allow serving a skill (its name, then its size), or ``None``."""
        if resolved.entry.dynamic:  # nothing to count without reading it all, as the extension allows
            return self.name_problem(resolved.skill)
        return self.name_problem(resolved.skill) or await self.over_limits(resolved)

    async def _check_served(self, path: str, resolved: ResolvedSkill) -> None:
        problem = await self.problem(resolved)
        if problem is not None:
            raise SkillRequestError(f"skill {path!r} is not served: {problem}")

    @staticmethod
    def name_problem(skill: Skill) -> str | None:
        """Why a skill's URI cannot carry the ``name`` of its frontmatter, or ``None``: the field
        is missing (the skill was loaded under its folder's name), is not the name the skill is
        served under, or breaks the Agent Skills naming rules."""
        written = skill.metadata.get("name")
        if written is None:
            return (
                f"its {skill.skill_md_name} has no name field (it was loaded under its folder's name "
                f"{skill.folder!r}, and a skill URI must end in the name its frontmatter declares)"
            )
        if written != skill.name:
            return f"its name field {frontmatter_json(written)!r} is not the plain name {skill.name!r} it is known by"
        errors = [p.message for p in check_name(written, None) if p.error]
        if errors:
            return "its name breaks the Agent Skills naming rules: " + "; ".join(errors)
        return None

    @staticmethod
    async def over_limits(resolved: ResolvedSkill) -> str | None:
        """Why a skill exceeds the extension's limits, or ``None`` (its folder is listed now
        when its layer deferred the listing)."""
        files = (await resolved.source.list_files(resolved.entry)).files
        count = 1 + len(files)
        size = len(await read_skill_bytes(resolved)) + sum(f.size for f in files)
        if count > MAX_FILES:
            return f"it has {count} files, over the extension's limit of {MAX_FILES} per skill"
        if size > MAX_BYTES:
            return f"its files total {size} bytes, over the extension's limit of {MAX_BYTES} bytes per skill"
        return None

    async def entry(self, plan: TurnPlan, path: str, resolved: ResolvedSkill) -> dict[str, Any]:
        """One ``Skill`` entry: URI, verbatim frontmatter and the manifest of its files (``"dynamic"``
        for a skill whose content has no digest)."""
        resources: list[dict[str, Any]] | str = "dynamic"
        if not resolved.entry.dynamic:
            manifest = await self._manifest(plan, resolved)
            resources = [{**item, "uri": f"{SCHEME}{path}/{item['uri']}"} for item in manifest]
        return {
            "uri": f"{SCHEME}{path}/{_MAIN}",
            "frontmatter": frontmatter_json(resolved.skill.metadata),
            "resources": resources,
        }

    async def _manifest(self, plan: TurnPlan, resolved: ResolvedSkill) -> tuple[dict[str, Any], ...]:
        entry = resolved.entry
        owner = plan.context.user_id if resolved.skill.layer is Layer.USER else ""
        listing = await resolved.source.list_files(entry)  # its digest covers every file
        key = (owner, resolved.source.source, entry.path, listing.digest)
        cached = self._manifests.get(key)
        if cached is not None:
            self._manifests.move_to_end(key)
            return cached
        paths = [f.path for f in listing.files]
        data = {
            _MAIN: await read_skill_bytes(resolved),
            **(await resolved.source.read_files(entry, paths) if paths else {}),
        }
        # Up to 16 MiB to hash: one worker-thread hop per skill keeps other requests moving.
        manifest = await anyio.to_thread.run_sync(_hashed, data)
        self._manifests[key] = manifest
        while len(self._manifests) > _CACHE_SIZE:
            self._manifests.popitem(last=False)
        return manifest

    # -- files and folders -------------------------------------------------------------------

    async def read(self, plan: TurnPlan, uri: str) -> tuple[bytes, str]:
        """The bytes and MIME type of the skill file ``uri``."""
        path, resolved, relative = self.resolve(plan, uri)
        await self._check_served(path, resolved)
        if relative == _MAIN:
            return await read_skill_bytes(resolved), mime_type(_MAIN)
        if relative not in await resolved.list_files():
            raise SkillRequestError(f"skill {path!r} has no file {relative!r}")
        data = await resolved.source.read_files(resolved.entry, [relative])
        return data[relative], mime_type(relative)

    async def directory(self, plan: TurnPlan, uri: str) -> list[dict[str, Any]]:
        """The direct children of the directory ``uri`` (a skill's root or one of its folders)."""
        path, resolved, relative = self.resolve(plan, uri)
        await self._check_served(path, resolved)
        prefix = f"{relative}/" if relative else ""
        files = [_MAIN, *await resolved.list_files()]
        if relative and not any(f.startswith(prefix) for f in files):
            raise SkillRequestError(f"{uri} is not a directory resource")
        children: dict[str, dict[str, Any]] = {}
        for file in files:
            if not file.startswith(prefix):
                continue
            head, sep, _ = file[len(prefix) :].partition("/")
            child = f"{SCHEME}{path}/{prefix}{head}"
            kind = DIRECTORY_MIME if sep else mime_type(head)
            children.setdefault(head, {"uri": child, "name": head, "mimeType": kind})
        return [children[name] for name in sorted(children)]

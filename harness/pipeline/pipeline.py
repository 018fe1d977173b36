"""The per-turn pipeline: merge the four layers, filter, stage, compute files-roots, render.

``await pipeline.prepare(context)`` runs before every model turn and returns a
:class:`TurnPlan`. A warm turn (nothing changed) parses nothing, writes nothing and stats no
file: folder layers learn about edits from one watcher per tree, remote layers from one cheap
generation query, markets from their own change tokens.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import anyio
from anyio.abc import TaskGroup

from filesystems import AbstractFilesystem, FilesystemError, LocalFilesystem, ShellUnavailable
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic
from harness.learning.scanner import MarketScanPolicy
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL, entries_for, render_catalog
from harness.pipeline.layers import FolderLayer, LayerEntry, LayerResult, MarketLayer, SkillSource
from harness.pipeline.merge import Merged, Shadowing, merge_layers
from harness.pipeline.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.pipeline.staging import DEFAULT_MAX_FILE_SIZE, StageItem, Stager, StageResult
from harness.pipeline.watch import TreeWatcher
from harness.skills.skill import Layer, is_workflow_package
from repositories import SKILL_MD_NAMES, SkillRepository, disambiguate_sources

__all__ = ["SkillPipeline"]

log = logging.getLogger(__name__)
SKILLS_DIR = "skills"
CACHE_DIR = ".skills-cache"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Base:
    """Layers 1–3 merged, plus what staging needs (the union of layers 1–2)."""

    merged: Merged
    sources: dict[str, SkillSource]  # skill_id -> source
    stage_items: tuple[StageItem, ...]
    diagnostics: tuple[Diagnostic, ...]
    unanswered: frozenset[str]  # layer 1–2 sources that did not answer: their staged folders stay


@dataclass(frozen=True, kw_only=True, slots=True)
class _UserView:
    base: _Base
    user: LayerResult
    skills: dict[str, ResolvedSkill]
    shadowed: tuple[Shadowing, ...]
    catalog: str
    diagnostics: tuple[Diagnostic, ...] = ()


class _Tracked:
    """A folder layer plus what says whether it must be re-read."""

    def __init__(self, layer: FolderLayer) -> None:
        self.layer = layer
        self.result: LayerResult | None = None
        self.dirty = True
        self.generation: int | None = None
        self.host = layer.fs.host_path(layer.prefix)

    async def current(self, watched: bool) -> LayerResult:
        """The layer's skills, re-read when they may have changed. When the filesystem fails
        (a remote store down) the last good result is served with a diagnostic, and the next
        turn tries again."""
        try:
            return await self._current(watched)
        except (FilesystemError, OSError) as exc:
            self.dirty = True
            last = self.result or LayerResult(entries=())
            problem = Diagnostic(
                severity="error",
                code="layer-unavailable",
                message=f"cannot read the {self.layer.layer.value} skills, serving the last good ones: {exc}",
                location=self.layer.prefix or self.layer.source,
            )
            return LayerResult(entries=last.entries, diagnostics=(*last.diagnostics, problem), failed=True)

    async def _current(self, watched: bool) -> LayerResult:
        if self.result is not None and not self.dirty:
            if watched:
                return self.result
            generation = await self.layer.fs.generation()
            if generation is not None and generation == self.generation:
                return self.result
            self.generation = generation
        elif not watched:
            self.generation = await self.layer.fs.generation()
        self.dirty = False
        self.result = await self.layer.load()
        return self.result


class SkillPipeline:
    """Merges, stages and renders skills for each turn.

    ``filesystem`` is the shared workspace (unscoped); a user's layer is read through
    ``filesystem.scoped(user_id)``. ``repositories`` are the markets in registration order (a
    later one wins a name clash); ``global_skills_dir`` is skipped when missing. With
    ``dynamic_skills=False`` layers 1–3 are merged once; layer 4 is still read per user.
    Use as an async context manager so folder watchers run; without it every turn re-reads
    folder layers. ``market_scan`` says how market skills are scanned on ingest (default: every
    source report-only, findings become warnings).
    ``max_file_size`` caps each staged or loaded market file (bytes).
    """

    def __init__(
        self,
        *,
        filesystem: AbstractFilesystem,
        repositories: Sequence[SkillRepository] = (),
        global_skills_dir: str | Path | None = None,
        dynamic_skills: bool = True,
        market_timeout: float = 10.0,
        catalog_budget: int | None = None,
        visibility: VisibilityPolicy | None = None,
        watch: bool = True,
        verify_interval: float | None = 600.0,
        max_cached_users: int = 1024,
        market_scan: MarketScanPolicy | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    ) -> None:
        self.filesystem = filesystem
        self.dynamic_skills = dynamic_skills
        self.market_timeout = market_timeout
        self.catalog_budget = catalog_budget
        self.visibility = visibility
        self._watch = watch
        self._max_users = max_cached_users
        slugs = disambiguate_sources(r.source for r in repositories)
        scan_policy = market_scan or MarketScanPolicy()
        self.markets = [
            MarketLayer(repo, source=slug, scan_policy=scan_policy, max_file_size=max_file_size)
            for repo, slug in zip(repositories, slugs)
        ]
        self._global: _Tracked | None = None
        self._global_fs: LocalFilesystem | None = None
        self._global_missing = _NO_SKILLS
        if global_skills_dir is not None:
            self._global_fs, prefix, self._global_missing = _global_layer(Path(global_skills_dir).expanduser())
            if self._global_fs is not None:
                self._global = _Tracked(FolderLayer(self._global_fs, prefix, source="global", layer=Layer.GLOBAL))
        self._workspace = _Tracked(FolderLayer(filesystem, SKILLS_DIR, source="workspace", layer=Layer.WORKSPACE))
        self._users: collections.OrderedDict[str, _Tracked] = collections.OrderedDict()
        self._views: dict[str, _UserView] = {}
        self._shared_view: _UserView | None = None
        self._resolved: dict[str, ResolvedSkill] = {}
        self._resolved_for: _Base | None = None
        cache = filesystem.host_path(CACHE_DIR) if filesystem.has_shell else None
        self.stager = (
            Stager(cache, verify_interval=verify_interval, max_file_size=max_file_size) if cache is not None else None
        )
        self._base: _Base | None = None
        self._base_inputs: tuple[LayerResult, ...] = ()
        self._watched_roots: list[Path] = []
        self._watchers: list[TreeWatcher] = []
        self._stack = AsyncExitStack()
        self._base_lock = anyio.Lock()
        self._closed = False

    async def __aenter__(self) -> Self:
        if self._watch:
            group: TaskGroup = await self._stack.enter_async_context(anyio.create_task_group())
            self._stack.callback(self._stop_watchers)
            roots = [self.filesystem.host_path("")]
            if self._global is not None:
                roots.append(self._global.host)
            roots += [market.repository.watch_root for market in self.markets]
            for root in dict.fromkeys(roots):
                if root is not None and root.is_dir():
                    watcher = TreeWatcher(root, self._on_change, self._on_watch_failure)
                    await group.start(watcher.run)
                    self._watchers.append(watcher)
                    self._watched_roots.append(root)
            for market in self.markets:
                market.watched = market.repository.watch_root in self._watched_roots
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the watchers and give up the staging lease; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._stack.aclose()
        finally:
            if self.stager is not None:
                await self.stager.aclose()
            if self._global_fs is not None:
                await self._global_fs.aclose()

    # -- the turn ----------------------------------------------------------------------------

    async def prepare(self, context: RuntimeContext) -> TurnPlan:
        """Merge, filter, stage and render for one turn of ``context.user_id``."""
        base = await self._current_base()
        tracked = self._user(context.user_id)
        user = await tracked.current(self._is_watched(tracked))
        view = self._views.get(context.user_id)
        if view is None or view.base is not base or view.user is not user:
            view = self._build_view(context, base, user, tracked.layer)
            self._views[context.user_id] = view
        skills, catalog = view.skills, view.catalog
        if self.visibility is not None:
            kept = await self.visibility.apply([s.skill for s in skills.values()], context)
            allowed = {s.skill_id for s in kept}
            if len(allowed) < len(skills):  # the common case filters nothing: keep the view's catalog
                skills = {k: v for k, v in skills.items() if k in allowed}
                catalog = self.render(skills)
        staged = (
            await self.stager.stage(base.stage_items, keep_sources=base.unanswered) if self.stager is not None else None
        )
        diagnostics = (
            *base.diagnostics,
            *user.diagnostics,
            *view.diagnostics,
            *(s.diagnostic() for s in view.shadowed),
            *(staged.diagnostics if staged else ()),
        )
        return TurnPlan(
            context=context,
            filesystem=tracked.layer.fs,  # the user's scoped view, built once (scoped() stats the host)
            skills=skills,
            catalog=catalog,
            shadowed=view.shadowed,
            diagnostics=diagnostics,
            staged=staged,
        )

    async def stage(self, *, verify: bool = False) -> StageResult:
        """Stage layers 1–2 now (``verify`` re-hashes what is on disk and repairs it). The result's
        diagnostics start with those of the layers (a market that is down, a broken skill)."""
        if self.stager is None:
            raise ShellUnavailable("staging needs a filesystem with a shell on this host")
        base = await self._current_base()
        result = await self.stager.stage(base.stage_items, verify=verify, keep_sources=base.unanswered)
        return dataclasses.replace(result, diagnostics=(*base.diagnostics, *result.diagnostics))

    def invalidate(self, user_id: str | None = None) -> None:
        """Forget cached folder reads: a user's layer, or the shared ones when ``user_id`` is None.

        The harness calls this after its own writes so they show on the next turn at once.
        """
        if user_id is None:
            self._workspace.dirty = True
            if self._global is not None:
                self._global.dirty = True
        elif user_id in self._users:
            self._users[user_id].dirty = True

    async def refresh(self) -> None:
        """Re-read every layer and market on the next turn (even with ``dynamic_skills=False``)."""
        self.invalidate()
        for tracked in self._users.values():
            tracked.dirty = True
        for market in self.markets:
            market.dirty = True
            await market.repository.refresh()
        self._base = None

    # -- layers 1–3 ------------------------------------------------------------------------

    async def _current_base(self) -> _Base:
        async with self._base_lock:
            if self._base is not None and not self.dynamic_skills:
                return self._base
            results = await self._load_layers()
            if self._base is None or any(a is not b for a, b in zip(results, self._base_inputs, strict=True)):
                self._base = self._merge_base(results)
                self._base_inputs = results
            return self._base

    async def _load_layers(self) -> tuple[LayerResult, ...]:
        market_results: list[LayerResult] = [market.result for market in self.markets]

        async def load_market(index: int, market: MarketLayer) -> None:
            with anyio.move_on_after(self.market_timeout) as scope:
                market_results[index] = await market.load()
            if scope.cancelled_caught:
                market_results[index] = market.failed(
                    f"market {market.source!r} did not answer within {self.market_timeout:g}s; serving its last good skills"
                )

        async with anyio.create_task_group() as group:
            for index, market in enumerate(self.markets):
                group.start_soon(load_market, index, market)
        global_result = (
            await self._global.current(self._is_watched(self._global))
            if self._global is not None
            else self._global_missing
        )
        workspace = await self._workspace.current(self._is_watched(self._workspace))
        return (global_result, *market_results, workspace)

    def _merge_base(self, results: tuple[LayerResult, ...]) -> _Base:
        results = (_one_per_folder(results[0], "global"), *results[1:])
        sources: dict[str, SkillSource] = {}
        items: list[StageItem] = []
        unanswered: set[str] = set()
        readers: list[SkillSource] = [
            *([self._global.layer] if self._global is not None else [_EMPTY]),
            *self.markets,
            self._workspace.layer,
        ]
        for reader, result in zip(readers, results, strict=True):
            if result.failed and reader.layer in (Layer.GLOBAL, Layer.MARKET):
                unanswered.add(reader.source)
            for entry in result.entries:
                sources[entry.skill.skill_id] = reader
                if reader.layer in (Layer.GLOBAL, Layer.MARKET):
                    items.append(StageItem(entry=entry, reader=reader))
        merged = merge_layers(results)
        diagnostics = tuple(d for result in results for d in result.diagnostics)
        return _Base(
            merged=merged,
            sources=sources,
            stage_items=tuple(items),
            diagnostics=diagnostics,
            unanswered=frozenset(unanswered),
        )

    # -- layer 4 ---------------------------------------------------------------------------

    def _user(self, user_id: str) -> _Tracked:
        tracked = self._users.get(user_id)
        if tracked is None:
            scoped = self.filesystem.scoped(user_id)
            tracked = _Tracked(FolderLayer(scoped, SKILLS_DIR, source="workspace-namespaced", layer=Layer.USER))
            self._users[user_id] = tracked
            while len(self._users) > self._max_users:
                evicted, _ = self._users.popitem(last=False)
                self._views.pop(evicted, None)
        else:
            self._users.move_to_end(user_id)
        return tracked

    def _build_view(self, context: RuntimeContext, base: _Base, user: LayerResult, layer: FolderLayer) -> _UserView:
        """The merged skills and catalog of one user. Users without skills or folders of their
        own share one view; the others share every layer 1–3 ``ResolvedSkill`` and differ only
        in theirs."""
        if not user.entries and not user.top_level:
            shared = self._shared_view
            if shared is None or shared.base is not base:
                skills = self._base_resolved(base)
                hidden = self._hidden_roots(skills, user, layer)
                shared = _UserView(
                    base=base,
                    user=user,
                    skills=skills,
                    shadowed=base.merged.shadowed,
                    catalog=self.render(skills),
                    diagnostics=_hidden_diagnostics(hidden, "workspace"),
                )
                self._shared_view = shared
            return dataclasses.replace(shared, user=user)
        merged = merge_layers([user], base=base.merged)
        skills = dict(self._base_resolved(base))
        for entry in user.entries:
            replaced = base.merged.entries.get(entry.skill.name)
            if replaced is not None:
                skills.pop(replaced.skill.skill_id, None)
        for entry in merged.entries.values():
            if entry.skill.layer is Layer.USER:
                skills[entry.skill.skill_id] = self._resolve(entry, layer, layer)
        hidden = self._hidden_roots(skills, user, layer)
        for skill_id in hidden:
            skills[skill_id] = dataclasses.replace(skills[skill_id], files_root=None)
        return _UserView(
            base=base,
            user=user,
            skills=skills,
            shadowed=merged.shadowed,
            catalog=self.render(skills),
            diagnostics=_hidden_diagnostics(hidden, context.user_id or ""),
        )

    def _hidden_roots(self, skills: dict[str, ResolvedSkill], user: LayerResult, layer: FolderLayer) -> dict[str, str]:
        """Layer 1–3 skills whose folder the user's shell does not show, with the reason.

        A sandbox merges the user's top-level folders under ``skills/`` over the workspace's by
        name, a same-name user folder replacing the workspace's whole (nested skills included);
        and a workspace skill reached through a link is not inside what the sandbox binds."""
        if not self.filesystem.has_shell:
            return {}
        shown = self.filesystem.shell_path(SKILLS_DIR)
        merged = layer.fs.has_shell and layer.fs.shell_path(SKILLS_DIR) == shown
        covered = [f"{shown}/{name}" for name in user.top_level] if merged else []
        hidden: dict[str, str] = {}
        for skill_id, s in skills.items():
            if s.skill.layer is Layer.USER:
                continue
            if s.skill.layer is Layer.WORKSPACE and s.entry.link is not None and not self._link_shown(s.entry):
                hidden[skill_id] = (
                    f"its folder is a link to {s.entry.link}, which the shell does not show; "
                    "copy the folder into the workspace or install it in the global layer"
                )
            elif s.files_root and any(s.files_root == c or s.files_root.startswith(c + "/") for c in covered):
                hidden[skill_id] = (
                    "its folder is covered by this user's own folder of the same name in the user's shell, "
                    "so its files-root is not rendered; rename one of the folders"
                )
        return hidden

    def _link_shown(self, entry: LayerEntry) -> bool:
        """Whether the shell sees a linked workspace folder (a host shell follows the link)."""
        host = self.filesystem.host_path(entry.path)
        return host is not None and self.filesystem.shell_path(entry.path) == str(host)

    def _base_resolved(self, base: _Base) -> dict[str, ResolvedSkill]:
        """Layers 1–3 resolved once per merge, shared by every user's view."""
        if self._resolved_for is not base:
            self._resolved = {
                entry.skill.skill_id: self._resolve(entry, base.sources[entry.skill.skill_id], None)
                for entry in base.merged.entries.values()
            }
            self._resolved_for = base
        return self._resolved

    def _resolve(self, entry: LayerEntry, source: SkillSource, user_layer: FolderLayer | None) -> ResolvedSkill:
        return ResolvedSkill(
            entry=entry,
            source=source,
            files_root=self._files_root(entry, source, user_layer),
            workflow=is_workflow_package(entry.skill.files),
        )

    def _files_root(self, entry: LayerEntry, source: SkillSource, user_layer: FolderLayer | None) -> str | None:
        """Always the skill's real folder, as the shell sees it (DESIGN §6); ``None`` for a
        linked workspace folder the shell does not show (see :meth:`_hidden_roots`)."""
        if not self.filesystem.has_shell:
            return None
        if source.layer in (Layer.GLOBAL, Layer.MARKET):
            folder = entry.path.rsplit("/", 1)[-1]
            return self.filesystem.shell_path(f"{CACHE_DIR}/{source.source}/{folder}")
        if source.layer is Layer.WORKSPACE and entry.link is not None and not self._link_shown(entry):
            return None
        fs = user_layer.fs if source.layer is Layer.USER and user_layer is not None else self.filesystem
        return fs.shell_path(entry.path)

    def render(self, skills: dict[str, ResolvedSkill]) -> str:
        """The catalog text for ``skills`` with this pipeline's tools and budget."""
        roots = {k: v.files_root for k, v in skills.items() if v.files_root}
        workflows = frozenset(k for k, v in skills.items() if v.workflow)
        return render_catalog(
            entries_for([s.skill for s in skills.values()], roots, workflows),
            load_tool=LOAD_TOOL,
            shell_tool=SHELL_TOOL if self.filesystem.has_shell else None,
            budget=self.catalog_budget,
        )

    # -- watching ----------------------------------------------------------------------------

    def _is_watched(self, tracked: _Tracked) -> bool:
        host = tracked.host
        return host is not None and any(host == root or root in host.parents for root in self._watched_roots)

    def _on_change(self, paths: set[Path]) -> None:
        trackers = [self._workspace, *self._users.values()]
        if self._global is not None:
            trackers.append(self._global)
        for tracked in trackers:
            host = tracked.host
            if host is not None and any(p == host or host in p.parents or p in host.parents for p in paths):
                tracked.dirty = True
        for market in self.markets:
            root = market.repository.watch_root
            if root is not None and any(p == root or root in p.parents for p in paths):
                market.dirty = True

    def _on_watch_failure(self, reason: str) -> None:
        self._watched_roots.clear()
        for market in self.markets:
            market.watched = False

    def _stop_watchers(self) -> None:
        for watcher in self._watchers:
            watcher.stop()


class _NoSource(SkillSource):
    source = "global"
    layer = Layer.GLOBAL


_EMPTY = _NoSource()


def _one_per_folder(result: LayerResult, source: str) -> LayerResult:
    """A staged skill lives in ``.skills-cache/<source>/<folder>``, so of two nested folders with
    one name only the first in path order is kept (as a market does), the other reported."""
    kept: dict[str, LayerEntry] = {}
    diagnostics = list(result.diagnostics)
    for entry in sorted(result.entries, key=lambda e: e.path):
        folder = entry.path.rpartition("/")[2]
        if folder in kept:
            diagnostics.append(
                Diagnostic(
                    severity="warning",
                    code="duplicate-folder",
                    message=(
                        f"duplicate skill folder {folder!r} in the {source} skills: {entry.path} skipped, "
                        f"{kept[folder].path} kept (both would be staged as .skills-cache/{source}/{folder})"
                    ),
                    location=entry.skill.location,
                )
            )
        else:
            kept[folder] = entry
    if len(kept) == len(result.entries):
        return result
    return LayerResult(entries=tuple(kept.values()), diagnostics=tuple(diagnostics))


# One shared empty result: layers 1–3 are re-merged only when a result is a new object, so a
# fresh empty one per turn would rebuild every user's view on every turn.
_NO_SKILLS = LayerResult(entries=())


def _hidden_diagnostics(hidden: dict[str, str], user_id: str) -> tuple[Diagnostic, ...]:
    return tuple(
        Diagnostic(severity="warning", code="files-root-hidden", message=f"{skill_id}: {reason}", location=user_id)
        for skill_id, reason in hidden.items()
    )


def _global_layer(path: Path) -> tuple[LocalFilesystem | None, str, LayerResult]:
    """The global layer's filesystem and prefix: ``path`` itself, or its parent and its name when
    ``path`` is one skill folder. A missing folder gives no filesystem and a warning instead."""
    if not path.is_dir():
        problem = Diagnostic(
            severity="warning",
            code="global-dir-missing",
            message=(
                f"global skills folder {str(path)!r} does not exist or is not a folder: no global skills "
                "are loaded; check global_skills_dir (--global-dir)"
            ),
            location=str(path),
        )
        return None, "", LayerResult(entries=(), diagnostics=(problem,))
    if any((path / name).is_file() for name in SKILL_MD_NAMES):
        return LocalFilesystem(path.parent), path.name, _NO_SKILLS
    return LocalFilesystem(path), "", _NO_SKILLS

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
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import anyio

from filesystems import (
    CACHE_DIR,
    MACHINE_DIR,
    AbstractFilesystem,
    AsyncResource,
    BackgroundTasks,
    KeyValueStore,
    ShellUnavailable,
    relative_path_problem,
)
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic
from harness.pipeline.catalog import (
    DEFAULT_CATALOG_BUDGET,
    LOAD_TOOL,
    SEARCH_TOOL,
    SHELL_TOOL,
    Catalog,
    build_catalog,
    entries_for,
)
from harness.pipeline.environments import EnvironmentManager, EnvironmentOptions
from harness.pipeline.labels import SourceLabels
from harness.pipeline.layers import LayerEntry, LayerResult, SkillLayer
from harness.pipeline.merge import Merged, Shadowing, merge_layers
from harness.pipeline.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.pipeline.search import SkillIndex
from harness.pipeline.staging import DEFAULT_MAX_FILE_SIZE, StageItem, Stager, StageResult
from harness.pipeline.verdicts import VerdictStore
from harness.pipeline.watch import ChangeIndex, TreeWatcher
from harness.skills.scanner import MarketScanPolicy
from harness.skills.skill import WORKFLOW_MARKERS, Layer, is_workflow_package
from repositories import DirectoryRepository, SkillRepository, disambiguate_sources

if TYPE_CHECKING:
    from filesystems import ProgressCallback
    from harness.pipeline.scan_pool import ScanPool

__all__ = ["DEFAULT_MARKET_TIMEOUT", "DEFAULT_SKILL_DIRS", "SkillPipeline", "check_skill_dirs"]

log = logging.getLogger(__name__)
SKILLS_DIR = "skills"
#: The folders of a workspace (and of a user's area) read as skills, the first winning a name
#: clash: the harness's own, then those of other agents (Codex & co, Claude Code).
DEFAULT_SKILL_DIRS: tuple[str, ...] = (SKILLS_DIR, ".agents/skills", ".claude/skills")
#: Seconds a layer (a market above all) may take to answer before a turn goes on with its last
#: good skills (``market_timeout``).
DEFAULT_MARKET_TIMEOUT = 10.0
# Seconds a stopped folder watcher may take to end before it is cancelled.
_WATCHERS_GRACE = 5.0


@dataclass(frozen=True, kw_only=True, slots=True)
class _Base:
    """Layers 1–3 merged, plus what staging needs (the union of layers 1–2)."""

    merged: Merged
    sources: dict[str, SkillLayer]  # skill_id -> layer
    stage_items: tuple[StageItem, ...]
    diagnostics: tuple[Diagnostic, ...]
    unanswered: frozenset[str]  # layer 1–2 sources that did not answer: their staged folders stay


@dataclass(frozen=True, kw_only=True, slots=True)
class _UserView:
    base: _Base
    user: tuple[LayerResult, ...]
    skills: dict[str, ResolvedSkill]
    shadowed: tuple[Shadowing, ...]
    shadowed_skills: dict[str, ResolvedSkill]  # what shadowing hid that a full id still loads
    catalog: Catalog
    search: SkillIndex
    diagnostics: tuple[Diagnostic, ...] = ()
    environments: int = 0  # the environments' generation its skills were resolved with


class SkillPipeline(AsyncResource):
    """Merges, stages and renders skills for each turn.

    ``filesystem`` is the shared workspace (unscoped); a user's layer is read through
    ``filesystem.scoped(user_id)``. ``repositories`` are the markets in registration order (a
    later one wins a name clash); ``global_skills_dir`` is one folder or a list of folders (a
    later one wins a name clash, reported as shadowing; sources ``global``, ``global_2``, ...),
    each skipped with a warning when missing. With
    ``dynamic_skills=False`` layers 1–3 are merged once; layer 4 is still read per user.
    Use as an async context manager so folder watchers run; without it every turn re-reads
    folder layers. ``market_scan`` says how market skills are scanned on ingest (default: every
    source report-only, findings become warnings).
    ``max_file_size`` caps each staged or loaded market file (bytes).
    ``skill_dirs`` are the folders of the workspace, and of each user's area, read as skills
    (default :data:`DEFAULT_SKILL_DIRS`); an earlier folder wins a name clash, reported as
    shadowing. A sandbox shows only ``skills/`` of the workspace in place: skills of its other
    folders get no files-root there (a ``files-root-hidden`` warning).
    ``catalog_budget`` caps the catalog (characters, ``None`` = unlimited); when it cuts, the
    plan carries a search index over the turn's skills (:class:`~harness.pipeline.search.SkillIndex`).
    ``environments`` turns on per-skill Python environments (:mod:`harness.pipeline.environments`):
    staging turns build them in the background (while the pipeline is entered) and each ready one
    is the skill's ``ResolvedSkill.environment``; it needs a filesystem with a shell on this host.
    ``relevance`` (skill id → score, higher first) orders the skills of each catalog group and
    decides which keep a description when the budget cannot describe them all; without it,
    skills are ordered by name. The catalog shows markets by short labels (:attr:`labels`).
    ``progress`` hears about long work: a staging pass that writes files (see :class:`Stager`),
    a market's first clone (it becomes each market's ``progress``) and environment builds.
    ``market_check_interval`` (seconds) is how often markets whose check is a round trip (git's
    ``ls-remote``) ask their remote, for those not given an interval of their own; between
    checks a warm turn asks nothing, and :meth:`refresh_market` checks one market now.
    """

    def __init__(
        self,
        *,
        filesystem: AbstractFilesystem,
        repositories: Sequence[SkillRepository] = (),
        global_skills_dir: str | Path | Sequence[str | Path] | None = None,
        dynamic_skills: bool = True,
        market_timeout: float = DEFAULT_MARKET_TIMEOUT,
        catalog_budget: int | None = DEFAULT_CATALOG_BUDGET,
        visibility: VisibilityPolicy | None = None,
        watch: bool = True,
        verify_interval: float | None = 600.0,
        max_cached_users: int = 1024,
        market_scan: MarketScanPolicy | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        skill_dirs: Sequence[str] = DEFAULT_SKILL_DIRS,
        environments: EnvironmentOptions | None = None,
        relevance: Mapping[str, float] | None = None,
        progress: ProgressCallback | None = None,
        market_check_interval: float | None = None,
    ) -> None:
        super().__init__()
        self.filesystem = filesystem
        self.skill_dirs = check_skill_dirs(skill_dirs)
        # A user's skill folders are the front door's: a sandboxed shell sees them read-only.
        filesystem.protect(self.skill_dirs)
        self.dynamic_skills = dynamic_skills
        self.market_timeout = market_timeout
        self.catalog_budget = catalog_budget
        self.visibility = visibility
        self._watch = watch
        self._max_users = max_cached_users
        slugs = disambiguate_sources(r.source for r in repositories)
        if progress is not None:
            for repo in repositories:
                repo.progress = progress
        if market_check_interval is not None:
            for repo in repositories:
                repo.default_check_interval(market_check_interval)
        shared = getattr(filesystem, "store", None)  # replicas over one store share their checks
        if isinstance(shared, KeyValueStore):
            for repo in repositories:
                repo.share_checks(shared)
        self.labels = SourceLabels.for_markets(slugs)
        """The short label the catalog shows for each market (``<name>_<label>`` loads too)."""
        self._relevance = relevance
        scan_policy = market_scan or MarketScanPolicy()
        # Scan verdicts kept across restarts, in machine-owned state: beside the staging manifest.
        verdict_folder = CACHE_DIR if filesystem.has_shell else MACHINE_DIR
        self.verdicts = VerdictStore(filesystem, scan_policy.scanner, folder=verdict_folder)
        self._scan_pool = _scan_pool() if repositories else None
        markets = [
            SkillLayer(
                repo,
                source=slug,
                scan_policy=scan_policy,
                verdicts=self.verdicts,
                max_file_size=max_file_size,
                scan_pool=self._scan_pool,
            )
            for repo, slug in zip(repositories, slugs)
        ]
        global_layers, self._global_missing = _global_layers(global_skills_dir)
        # Layers 1–3 in ascending priority: a later layer wins a name clash.
        self._layers = [
            *global_layers,
            *markets,
            *_folder_layers(filesystem, Layer.WORKSPACE, "workspace", self.skill_dirs),
        ]
        self._users: collections.OrderedDict[str, tuple[SkillLayer, ...]] = collections.OrderedDict()
        self._views: dict[str, _UserView] = {}
        self._shared_view: _UserView | None = None
        self._resolved: dict[str, ResolvedSkill] = {}
        self._resolved_shadowed: dict[str, ResolvedSkill] = {}
        self._resolved_for: _Base | None = None
        self._resolved_generation = 0
        cache = filesystem.host_path(CACHE_DIR) if filesystem.has_shell else None
        self.stager = (
            Stager(cache, verify_interval=verify_interval, max_file_size=max_file_size, progress=progress)
            if cache is not None
            else None
        )
        self.environments = (
            EnvironmentManager(filesystem, environments, progress=progress) if environments is not None else None
        )
        self._base: _Base | None = None
        self._base_inputs: tuple[LayerResult, ...] = ()
        self._staged_early: list[StageResult] = []  # early passes of this wave (see _load_layers)
        self._watched_roots: list[Path] = []
        self._watchers: list[TreeWatcher] = []
        # Every folder layer by its watch root, so a change finds its layers without a scan.
        self._by_root = ChangeIndex[SkillLayer]()
        for layer in self._layers:
            self._by_root.add(layer.watch_root, layer)
        self._stack = AsyncExitStack()
        self._base_lock = anyio.Lock()
        # Single-flight refreshes of the shared layers: turns join the current wave until it is
        # done or something is invalidated (``_epoch`` counts invalidations).
        self._epoch = 0
        self._wave: _Wave | None = None

    async def __aenter__(self) -> Self:
        if self.environments is not None:
            await self._stack.enter_async_context(self.environments)
        if self._watch:
            # Closing stops the watchers first, then gives them a moment to end on their own.
            watchers = await self._stack.enter_async_context(BackgroundTasks(grace=_WATCHERS_GRACE))
            self._stack.callback(self._stop_watchers)
            for root in [self.filesystem.host_path(""), *(layer.watch_root for layer in self._layers)]:
                if root is not None and not self._is_watched(root) and root.is_dir():
                    watcher = TreeWatcher(root, self._on_change, self._on_watch_failure)
                    await watchers.start(watcher.run, name=f"harness-watch:{root}")
                    self._watchers.append(watcher)
                    self._watched_roots.append(root)
            for layer in self._layers:
                layer.watch(self._is_watched(layer.watch_root))
            for layer in self._layers:  # markets that say which host folders hint at a change
                hints = layer.repository.change_hints if layer.layer is Layer.MARKET else ()
                for root in hints:
                    if root.is_dir():
                        watcher = TreeWatcher(root, self._hinted(layer), self._on_hint_failure)
                        await watchers.start(watcher.run, name=f"harness-watch:{root}")
                        self._watchers.append(watcher)
        return await super().__aenter__()

    async def _aclose(self) -> None:
        """Stop the watchers and give up the staging lease."""
        try:
            await self._stack.aclose()
        finally:
            if self._scan_pool is not None:
                await anyio.to_thread.run_sync(self._scan_pool.close)
            if self.stager is not None:
                await self.stager.aclose()

    @property
    def relevance(self) -> Mapping[str, float] | None:
        """Skill id → score ordering the catalog (see the class docstring). Setting it renders
        the next turns' catalogs anew; the mapping is read only then, not on every turn."""
        return self._relevance

    @relevance.setter
    def relevance(self, scores: Mapping[str, float] | None) -> None:
        self._relevance = scores
        self._views.clear()
        self._shared_view = None

    # -- the turn ----------------------------------------------------------------------------

    async def prepare(self, context: RuntimeContext, *, stage: bool = True) -> TurnPlan:
        """Merge, filter, stage and render for one turn of ``context.user_id``.

        ``stage=False`` plans without staging (what read-only commands use): nothing is written,
        files-roots still name where staged folders are or will be, ``plan.staged`` is ``None``.
        """
        base = await self._current_base(stage_early=stage)
        if stage:
            await self.verdicts.save()  # new scan verdicts, if any (read-only plans write nothing)
            if self.environments is not None:  # builds in the background; the same base costs nothing
                merged, shadowed = self._base_resolved(base)  # a shadowed skill still runs by its id
                self.environments.track(base, [*merged.values(), *shadowed.values()])
        layers = self._user(context.user_id)
        user = tuple([await self._load(layer) for layer in layers])
        view = self._views.get(context.user_id)
        if (
            view is None
            or view.base is not base
            or view.environments != self._environments_generation
            or any(a is not b for a, b in zip(view.user, user, strict=True))
        ):
            view = self._build_view(context, base, user, layers)
            self._views[context.user_id] = view
        skills, shadowed, catalog = view.skills, view.shadowed_skills, view.catalog
        if self.visibility is not None:
            candidates = [s.skill for s in (*skills.values(), *shadowed.values())]
            allowed = {s.skill_id for s in await self.visibility.apply(candidates, context)}
            if len(allowed) < len(candidates):  # the common case filters nothing: keep the view's catalog
                skills = {k: v for k, v in skills.items() if k in allowed}
                shadowed = {k: v for k, v in shadowed.items() if k in allowed}
                catalog = self._catalog(skills, shadowed)
        staged = await self._stage_base(base) if self.stager is not None and stage else None
        diagnostics = (
            *base.diagnostics,
            *(d for result in user for d in result.diagnostics),
            *view.diagnostics,
            *(s.diagnostic() for s in view.shadowed),
            *(staged.diagnostics if staged else ()),
            *(self.environments.diagnostics if self.environments is not None else ()),
        )
        return TurnPlan(
            context=context,
            filesystem=_shown_in(layers[0]),  # the user's scoped view, built once (scoped() stats the host)
            skills=skills,
            catalog=catalog.text,
            shadowed=view.shadowed,
            diagnostics=diagnostics,
            staged=staged,
            search=None if catalog.complete else view.search,  # filtered skills: the search tool drops them
            before_run=self._before_run if self.stager is not None else None,
            shadowed_skills=shadowed,
            labels=self.labels,
        )

    async def _before_run(self, skill: ResolvedSkill) -> None:
        """Before a command of ``skill`` runs: a staged skill's folder gets back exactly what was
        staged (see :meth:`Stager.check`); skills shown in place are the user's or the operator's."""
        if self.stager is not None and skill.source.staged:
            await self.stager.check(StageItem(entry=skill.entry, reader=skill.source).key)

    async def stage(self, *, verify: bool = False) -> StageResult:
        """Stage layers 1–2 now (``verify`` re-hashes what is on disk and repairs it). The result's
        diagnostics start with those of the layers (a market that is down, a broken skill)."""
        if self.stager is None:
            raise ShellUnavailable("staging needs a filesystem with a shell on this host")
        base = await self._current_base(stage_early=True)
        await self.verdicts.save()
        result = await self._stage_base(base, verify=verify)
        return dataclasses.replace(result, diagnostics=(*base.diagnostics, *result.diagnostics))

    def invalidate(self, user_id: str | None = None) -> None:
        """Forget cached folder reads: a user's layer, or the shared ones when ``user_id`` is None.

        The harness calls this after its own writes so they show on the next turn at once.
        """
        self._epoch += 1
        if user_id is None:
            for layer in self._layers:
                if layer.layer is not Layer.MARKET:
                    layer.mark_stale()
        elif user_id in self._users:
            for layer in self._users[user_id]:
                layer.mark_stale()

    async def refresh(self) -> None:
        """Re-read every layer and market on the next turn (even with ``dynamic_skills=False``)."""
        self._epoch += 1
        for user in self._users.values():
            for layer in user:
                layer.mark_stale()
        for layer in self._layers:
            await layer.refresh()
        if self.environments is not None:
            self.environments.refresh()
        self._base = None

    async def refresh_market(self, source: str) -> str:
        """Check the market ``source`` (its slug) now, whatever its check interval, and serve
        what it finds from the next turn on: a publisher sees their push at once. Returns the
        version served; ``KeyError`` names the markets when none has that slug. A market that
        fails keeps serving its last good skills (see the next turn's diagnostics)."""
        layer = next((m for m in self._layers if m.layer is Layer.MARKET and m.source == source), None)
        if layer is None:
            markets = ", ".join(m.source for m in self._layers if m.layer is Layer.MARKET) or "none"
            raise KeyError(f"no market {source!r} (markets: {markets})")
        self._epoch += 1  # turns already waiting for the shared layers do not reuse the old ones
        await layer.refresh()
        await self._load(layer)
        return layer.version or ""

    # -- layers 1–3 ------------------------------------------------------------------------

    async def _current_base(self, *, stage_early: bool = False) -> _Base:
        """The shared layers, brought up to date once per wave of turns: a turn that arrives
        while another turn's refresh is pending or in flight shares its result (so N concurrent
        turns check each market once), unless something was invalidated since that wave began."""
        if self._base is not None and not self.dynamic_skills:
            return self._base
        wave = self._wave
        if wave is None or wave.done or wave.epoch != self._epoch:
            wave = self._wave = _Wave(epoch=self._epoch)
        async with self._base_lock:
            if wave.done and self._base is not None:
                return self._base
            results = await self._load_layers(stage_early=stage_early and self.stager is not None)
            wave.done = True
            if self._base is None or any(a is not b for a, b in zip(results, self._base_inputs, strict=True)):
                self._base = self._merge_base(results)
                self._base_inputs = results
            return self._base

    async def _load_layers(self, *, stage_early: bool = False) -> tuple[LayerResult, ...]:
        """Every layer's skills; the ones that must ask their repository ask concurrently. With
        ``stage_early``, a staged layer whose skills changed is staged as soon as it has loaded,
        while the other layers are still fetching and scanning (the turn's staging pass then
        finds its files in place)."""
        results: list[LayerResult] = [layer.result for layer in self._layers]
        asking = [(index, layer) for index, layer in enumerate(self._layers) if not layer.fresh]
        before = dict(enumerate(self._base_inputs))

        async def load(index: int, layer: SkillLayer) -> None:
            results[index] = await self._load(layer)
            if stage_early and layer.staged and results[index] is not before.get(index) and len(asking) > 1:
                await self._stage_layer(layer, results[index])

        if len(asking) == 1:
            await load(*asking[0])
        elif asking:
            async with anyio.create_task_group() as group:
                for index, layer in asking:
                    group.start_soon(load, index, layer)
        return tuple(results)

    async def _stage_layer(self, layer: SkillLayer, result: LayerResult) -> None:
        """Stage one layer's skills now, removing nothing (see :meth:`_load_layers`). A failure is
        only logged: the turn's staging pass tries again and reports it."""
        if self.stager is None or result.failed:
            return
        items = [StageItem(entry=entry, reader=layer) for entry in _one_per_folder(result, layer.source).entries]
        try:  # partial: it only writes; removing what is no longer served is the turn's pass
            self._staged_early.append(await self.stager.stage(items, partial=True))
        except Exception as exc:  # the turn's own staging pass tries again and reports
            log.warning("staging %r early failed: %s", layer.source, exc)

    async def _stage_base(self, base: _Base, *, verify: bool = False) -> StageResult:
        """The staging pass of a turn; files an early pass wrote count as written by it."""
        assert self.stager is not None
        result = await self.stager.stage(base.stage_items, verify=verify, keep_sources=base.unanswered)
        early, self._staged_early = self._staged_early, []
        if not early:
            return result
        written = sum(r.written for r in early)
        # What an early pass reported stands (a full disk may have been freed since), once.
        notes = tuple(dict.fromkeys((*(d for r in early for d in r.diagnostics), *result.diagnostics)))
        return dataclasses.replace(
            result, written=result.written + written, unchanged=max(result.unchanged - written, 0), diagnostics=notes
        )

    async def _load(self, layer: SkillLayer) -> LayerResult:
        """The layer's skills, or its last good ones when it does not answer in time."""
        if layer.fresh:
            return layer.result
        with anyio.move_on_after(self.market_timeout):
            return await layer.load()
        return layer.failed(f"did not answer within {self.market_timeout:g}s (market_timeout)")

    def _merge_base(self, results: tuple[LayerResult, ...]) -> _Base:
        results = tuple(
            _one_per_folder(result, layer.source) if layer.staged else result
            for layer, result in zip(self._layers, results, strict=True)
        )
        sources: dict[str, SkillLayer] = {}
        items: list[StageItem] = []
        unanswered: set[str] = set()
        for layer, result in zip(self._layers, results, strict=True):
            if result.failed and layer.staged:
                unanswered.add(layer.source)
            for entry in result.entries:
                sources[entry.skill.skill_id] = layer
                if layer.staged:
                    items.append(StageItem(entry=entry, reader=layer))
        merged = merge_layers(results)
        diagnostics = (*self._global_missing, *(d for result in results for d in result.diagnostics))
        return _Base(
            merged=merged,
            sources=sources,
            stage_items=tuple(items),
            diagnostics=diagnostics,
            unanswered=frozenset(unanswered),
        )

    # -- layer 4 ---------------------------------------------------------------------------

    def _user(self, user_id: str) -> tuple[SkillLayer, ...]:
        """The user's folder layers in ascending priority (they share one scoped filesystem)."""
        layers = self._users.get(user_id)
        if layers is None:
            scoped = self.filesystem.scoped(user_id)
            layers = _folder_layers(scoped, Layer.USER, "workspace-namespaced", self.skill_dirs)
            for layer in layers:
                layer.watch(self._is_watched(layer.watch_root))
                self._by_root.add(layer.watch_root, layer)
            self._users[user_id] = layers
            while len(self._users) > self._max_users:
                evicted, evicted_layers = self._users.popitem(last=False)
                self._views.pop(evicted, None)
                for layer in evicted_layers:
                    self._by_root.discard(layer.watch_root, layer)
        else:
            self._users.move_to_end(user_id)
        return layers

    def _build_view(
        self, context: RuntimeContext, base: _Base, user: tuple[LayerResult, ...], layers: tuple[SkillLayer, ...]
    ) -> _UserView:
        """The merged skills and catalog of one user. Users without skills or folders of their
        own share one view; the others share every layer 1–3 ``ResolvedSkill`` and differ only
        in theirs."""
        if not any(result.entries or result.top_level for result in user):
            shared = self._shared_view
            if shared is None or shared.base is not base or shared.environments != self._environments_generation:
                skills, shadowed = self._base_resolved(base)
                hidden = self._hidden_roots(skills, user, layers)
                shadowed = self._without_hidden_roots(shadowed, user, layers)
                shared = _UserView(
                    base=base,
                    user=user,
                    skills=skills,
                    shadowed=base.merged.shadowed,
                    shadowed_skills=shadowed,
                    catalog=self._catalog(skills, shadowed),
                    search=SkillIndex(s.skill for s in skills.values()),
                    diagnostics=_hidden_diagnostics(hidden, "workspace"),
                    environments=self._environments_generation,
                )
                self._shared_view = shared
            return dataclasses.replace(shared, user=user)
        merged = merge_layers(user, base=base.merged)
        owner = {id(entry): layer for layer, result in zip(layers, user, strict=True) for entry in result.entries}
        base_skills, base_shadowed = self._base_resolved(base)
        skills, shadowed = dict(base_skills), dict(base_shadowed)
        for result in user:
            for entry in result.entries:
                replaced = base.merged.entries.get(entry.skill.name)
                if replaced is not None and replaced.skill.skill_id in skills:
                    shadowed[replaced.skill.skill_id] = skills.pop(replaced.skill.skill_id)
        for entry in merged.entries.values():
            if entry.skill.layer is Layer.USER:
                skills[entry.skill.skill_id] = self._resolve(entry, owner[id(entry)])
        hidden = self._hidden_roots(skills, user, layers)
        for skill_id in hidden:
            skills[skill_id] = dataclasses.replace(skills[skill_id], files_root=None)
        shadowed = self._without_hidden_roots(shadowed, user, layers)
        return _UserView(
            base=base,
            user=user,
            skills=skills,
            shadowed=merged.shadowed,
            shadowed_skills=shadowed,
            catalog=self._catalog(skills, shadowed),
            search=SkillIndex(s.skill for s in skills.values()),
            diagnostics=_hidden_diagnostics(hidden, context.user_id or ""),
            environments=self._environments_generation,
        )

    def _hidden_roots(
        self, skills: dict[str, ResolvedSkill], user: tuple[LayerResult, ...], layers: tuple[SkillLayer, ...]
    ) -> dict[str, str]:
        """Layer 1–3 skills whose folder the user's shell does not show, with the reason.

        A sandbox merges the user's top-level folders under ``skills/`` over the workspace's by
        name, a same-name user folder replacing the workspace's whole (nested skills included);
        a workspace skill reached through a link, or in a folder other than ``skills/``, is not
        inside what the sandbox binds."""
        if not self.filesystem.has_shell:
            return {}
        shown = self.filesystem.shell_path(SKILLS_DIR)
        user_fs = _shown_in(layers[0])
        merged = user_fs.has_shell and user_fs.shell_path(SKILLS_DIR) == shown
        top_level = [
            name for layer, result in zip(layers, user) if layer.prefix == SKILLS_DIR for name in result.top_level
        ]
        covered = [f"{shown}/{name}" for name in top_level] if merged else []
        hidden: dict[str, str] = {}
        for skill_id, s in skills.items():
            if s.skill.layer is Layer.USER:
                continue
            if s.skill.layer is Layer.WORKSPACE and s.entry.link is not None and not self._link_shown(s.entry):
                hidden[skill_id] = (
                    f"its folder is a link to {s.entry.link}, which the shell does not show; "
                    "copy the folder into the workspace or install it in the global layer"
                )
            elif s.skill.layer is Layer.WORKSPACE and s.source.prefix != SKILLS_DIR and not self._link_shown(s.entry):
                hidden[skill_id] = (
                    f"its folder is in {s.source.prefix}/, which the shell does not show (only {SKILLS_DIR}/ "
                    f"of the workspace is); move the folder into {SKILLS_DIR}/ to give the shell its files"
                )
            elif s.files_root and any(s.files_root == c or s.files_root.startswith(c + "/") for c in covered):
                hidden[skill_id] = (
                    "its folder is covered by this user's own folder of the same name in the user's shell, "
                    "so its files-root is not rendered; rename one of the folders"
                )
        return hidden

    def _without_hidden_roots(
        self, skills: dict[str, ResolvedSkill], user: tuple[LayerResult, ...], layers: tuple[SkillLayer, ...]
    ) -> dict[str, ResolvedSkill]:
        """``skills`` (shadowed ones) without the files-roots the user's shell does not show as
        theirs: a workspace skill a user's same-name folder covers in a sandbox keeps no
        files-root, so its commands never run what the tenant wrote there. Nothing is reported:
        being shadowed is the reason."""
        hidden = self._hidden_roots(skills, user, layers)
        if not hidden:
            return skills
        return {k: dataclasses.replace(v, files_root=None) if k in hidden else v for k, v in skills.items()}

    def _link_shown(self, entry: LayerEntry) -> bool:
        """Whether the shell sees a workspace folder where it is on the host (a host shell does,
        following links; a sandbox shows only what it binds)."""
        host = self.filesystem.host_path(entry.path)
        return host is not None and self.filesystem.shell_path(entry.path) == str(host)

    @property
    def _environments_generation(self) -> int:
        return self.environments.generation if self.environments is not None else 0

    def _base_resolved(self, base: _Base) -> tuple[dict[str, ResolvedSkill], dict[str, ResolvedSkill]]:
        """Layers 1–3 resolved once per merge (and once per change of their environments),
        shared by every user's view: the merged skills, and those the merge shadowed that a full
        id still names."""
        generation = self._environments_generation
        if self._resolved_for is not base or self._resolved_generation != generation:
            self._resolved = {
                entry.skill.skill_id: self._resolve(entry, base.sources[entry.skill.skill_id])
                for entry in base.merged.entries.values()
            }
            self._resolved_shadowed = {
                entry.skill.skill_id: self._resolve(entry, base.sources[entry.skill.skill_id])
                for entry in base.merged.loadable_losers()
            }
            self._resolved_for = base
            self._resolved_generation = generation
        return self._resolved, self._resolved_shadowed

    def _resolve(self, entry: LayerEntry, source: SkillLayer) -> ResolvedSkill:
        environments = self.environments
        return ResolvedSkill(
            entry=entry,
            source=source,
            files_root=self._files_root(entry, source),
            workflow=is_workflow_package(entry.skill.files),
            environment=environments.environment(entry.skill.skill_id) if environments is not None else None,
        )

    def _files_root(self, entry: LayerEntry, source: SkillLayer) -> str | None:
        """Always the skill's real folder, as the shell sees it: the staging cache
        for staged layers, the folder in place otherwise; ``None`` for a linked folder the shell
        does not show (see :meth:`_hidden_roots`)."""
        if not self.filesystem.has_shell:
            return None
        if source.staged:
            folder = entry.path.rsplit("/", 1)[-1]
            return self.filesystem.shell_path(f"{CACHE_DIR}/{source.source}/{folder}")
        in_place_elsewhere = source.layer is Layer.WORKSPACE and source.prefix != SKILLS_DIR
        if (entry.link is not None or in_place_elsewhere) and not self._link_shown(entry):
            return None
        return _shown_in(source).shell_path(entry.path)

    def render(self, skills: dict[str, ResolvedSkill], shadowed: Mapping[str, ResolvedSkill] | None = None) -> str:
        """The catalog text for ``skills`` (and the ``shadowed`` skills it names) with this
        pipeline's tools, budget, labels and relevance."""
        return self._catalog(skills, shadowed or {}).text

    def _catalog(self, skills: dict[str, ResolvedSkill], shadowed: Mapping[str, ResolvedSkill]) -> Catalog:
        roots = {k: v.files_root for k, v in skills.items() if v.files_root}
        workflows = frozenset(k for k, v in skills.items() if v.workflow)
        shadowed_ids = sorted(
            f"{s.skill.name}_{self.labels.label(s.skill.source)}" for s in shadowed.values() if not s.skill.hidden
        )
        return build_catalog(
            entries_for(
                [s.skill for s in skills.values()], roots, workflows, labels=self.labels, relevance=self._relevance
            ),
            load_tool=LOAD_TOOL,
            shell_tool=SHELL_TOOL if self.filesystem.has_shell else None,
            budget=self.catalog_budget,
            search_tool=SEARCH_TOOL,
            shadowed=shadowed_ids,
        )

    # -- watching ----------------------------------------------------------------------------

    def _is_watched(self, host: Path | None) -> bool:
        return host is not None and any(host.is_relative_to(root) for root in self._watched_roots)

    def _on_change(self, paths: set[Path]) -> None:
        """Mark stale the layers whose folder ``paths`` are in, below or above: a dict lookup per
        parent folder, however many users are cached."""
        self._epoch += 1
        for layer in self._by_root.touched(paths):
            layer.mark_stale()

    def _hinted(self, layer: SkillLayer) -> Callable[[set[Path]], None]:
        """What a change below one of ``layer``'s market's change hints does: the next turn
        asks that market at once (a push, another process's fetch), whatever its interval."""

        def changed(paths: set[Path]) -> None:
            self._epoch += 1
            layer.repository.hint_changed()
            layer.mark_stale()

        return changed

    def _on_hint_failure(self, reason: str) -> None:
        log.warning("cannot follow a market's change hints (it is still checked on its interval): %s", reason)

    def _on_watch_failure(self, reason: str) -> None:
        self._epoch += 1
        self._watched_roots.clear()
        for layer in (*self._layers, *(layer for user in self._users.values() for layer in user)):
            layer.watch(False)

    def _stop_watchers(self) -> None:
        for watcher in self._watchers:
            watcher.stop()


@dataclass(slots=True)
class _Wave:
    """One refresh of the shared layers that arriving turns share."""

    epoch: int
    done: bool = False


def _one_per_folder(result: LayerResult, source: str) -> LayerResult:
    """A staged skill lives in ``.skills-cache/<source>/<folder>``, so of two nested folders with
    one name only the first in path order is kept (as a market does), the other reported."""
    kept: dict[str, LayerEntry] = {}
    diagnostics = list(result.diagnostics)
    for entry in sorted(result.entries, key=lambda e: e.path):
        folder = entry.path.rpartition("/")[2]
        if folder in kept:
            diagnostics.append(
                Diagnostic.warning(
                    code="duplicate-folder",
                    message=(
                        f"duplicate skill folder {folder!r} in the {source} skills: {entry.path} skipped, "
                        f"{kept[folder].path} kept (both would be staged as {CACHE_DIR}/{source}/{folder})"
                    ),
                    location=entry.skill.location,
                )
            )
        else:
            kept[folder] = entry
    if len(kept) == len(result.entries):
        return result
    return LayerResult(entries=tuple(kept.values()), diagnostics=tuple(diagnostics))


def _hidden_diagnostics(hidden: dict[str, str], user_id: str) -> tuple[Diagnostic, ...]:
    return tuple(
        Diagnostic.warning(code="files-root-hidden", message=f"{skill_id}: {reason}", location=user_id)
        for skill_id, reason in hidden.items()
    )


def check_skill_dirs(dirs: Sequence[str]) -> tuple[str, ...]:
    """``skill_dirs`` (the pipeline's argument and ``harness.yaml``'s key) as clean relative
    folders of the workspace, a trailing ``/`` dropped.

    Raises ``ValueError`` naming the bad value: not a list of strings, no folder, a folder named
    twice, or a folder that is not a plain relative path inside the workspace (absolute, ``..``,
    empty or ``.`` segments, a backslash, control characters, version-control metadata) or lies
    in machine-owned state (``.skills-cache``, ``.harness``).
    """
    if isinstance(dirs, str) or not all(isinstance(d, str) for d in dirs):
        raise ValueError(f"skill_dirs: {dirs!r} must be a list of folders such as [skills, .agents/skills]")
    clean = tuple(d.rstrip("/") or d for d in dirs)
    for given, folder in zip(dirs, clean, strict=True):
        problem = relative_path_problem(folder)
        if problem is None and folder.split("/")[0] in (CACHE_DIR, MACHINE_DIR):
            problem = "is machine-owned"
        if problem is not None:
            raise ValueError(
                f"skill_dirs: {given!r} {problem}: give a folder relative to the workspace such as .agents/skills"
            )
    if not clean or len(set(clean)) != len(clean):
        raise ValueError(f"skill_dirs: {list(dirs)!r} must name at least one folder, each once")
    return clean


def _folder_layers(fs: AbstractFilesystem, kind: Layer, source: str, dirs: Sequence[str]) -> tuple[SkillLayer, ...]:
    """The ``dirs`` of a workspace or a user's area as layers in ascending priority (the first
    folder last, so it wins)."""
    return tuple(_folder_layer(fs, kind, source, folder) for folder in reversed(dirs))


def _folder_layer(fs: AbstractFilesystem, kind: Layer, source: str, folder: str = SKILLS_DIR) -> SkillLayer:
    """One skills folder of a workspace or a user's area as a layer: read on the host when
    the filesystem has host files, through the filesystem otherwise. Only the operator's
    workspace follows links."""
    host = fs.host_path(folder)
    follow = kind is Layer.WORKSPACE
    # Read in place, so listed lazily: a cold load reads each SKILL.md and the folder's top level
    # (and whether it holds a workflow definition), and a skill's other folders are listed when
    # the load tool or a workflow first needs them.
    repository = (
        DirectoryRepository(
            host,
            source=source,
            nested=True,
            follow_links=follow,
            optional=True,
            lazy_files=True,
            look_for=WORKFLOW_MARKERS,
        )
        if host is not None
        else DirectoryRepository(folder, filesystem=fs, source=source, nested=True)
    )
    return SkillLayer(repository, layer=kind, source=source, prefix=folder, filesystem=fs)


def _shown_in(layer: SkillLayer) -> AbstractFilesystem:
    """The filesystem whose shell shows an in-place layer's folders."""
    if layer.filesystem is None:
        raise ValueError(f"the {layer.layer.value} layer {layer.source!r} is staged, not shown in place")
    return layer.filesystem


def _global_layers(
    dirs: str | Path | Sequence[str | Path] | None,
) -> tuple[list[SkillLayer], tuple[Diagnostic, ...]]:
    """The global layers over ``dirs`` in ascending priority, and warnings for missing ones."""
    paths = [] if dirs is None else [dirs] if isinstance(dirs, (str, Path)) else list(dirs)
    layers: list[SkillLayer] = []
    missing: list[Diagnostic] = []
    for index, path in enumerate(paths):
        layer, problems = _global_layer(Path(path).expanduser(), "global" if index == 0 else f"global_{index + 1}")
        layers += [layer] if layer is not None else []
        missing += problems
    return layers, tuple(missing)


def _global_layer(path: Path, source: str) -> tuple[SkillLayer | None, tuple[Diagnostic, ...]]:
    """The global layer over ``path`` (a folder of skills, or one skill folder). A missing folder
    gives no layer and a warning instead (a diagnostic of every turn, and one log line now)."""
    if not path.is_dir():
        problem = Diagnostic.warning(
            code="global-dir-missing",
            message=(
                f"global skills folder {str(path)!r} does not exist or is not a folder: no global skills "
                "are loaded; check global_skills_dir (--global-dir)"
            ),
            location=str(path),
        )
        log.warning("%s", problem.message)  # said once, when the pipeline is built: a typo shows at once
        return None, (problem,)
    repository = DirectoryRepository(path, source=source, follow_links=True, nested=True)
    return SkillLayer(repository, layer=Layer.GLOBAL, source=source), ()


def _scan_pool() -> ScanPool:
    """The worker processes large market scans go to (none start until a scan needs them)."""
    from harness.pipeline.scan_pool import ScanPool  # only pipelines with markets load it

    return ScanPool()

"""The per-turn pipeline: merge the four layers, filter, stage, compute files-roots, render.

``await pipeline.prepare(context)`` runs before every model turn and returns a
:class:`TurnPlan`. A warm turn (nothing changed) parses nothing, writes nothing and stats no
file: folder layers learn about edits from one watcher per tree, remote layers from one cheap
generation query, markets from their own change tokens.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self, TypeVar, get_args

import anyio

from filesystems import (
    CACHE_DIR,
    MACHINE_DIR,
    AbstractFilesystem,
    AsyncResource,
    BackgroundTasks,
    Fixed,
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
    CatalogEntry,
    CatalogFormat,
    CatalogParts,
    build_catalog,
    check_catalog_format,
    entry_for,
)
from harness.pipeline.labels import SourceLabels
from harness.pipeline.layers import DEFAULT_MAX_FILE_SIZE, LayerEntry, LayerResult, SkillLayer, describe_error
from harness.pipeline.merge import Merged, Shadowing, merge_layers
from harness.pipeline.plan import CommandEnvironments, ResolvedSkill, SkillOverlay, TurnPlan, VisibilityPolicy
from harness.pipeline.search import SkillIndex
from harness.pipeline.watch import ChangeIndex, TreeWatcher, WatchBackend, WorkspaceWatcher
from harness.skills.skill import WORKFLOW_MARKERS, Layer, is_workflow_package
from repositories import (
    DirectoryRepository,
    RepositoryUnavailable,
    SkillRepository,
    disambiguate_sources,
)
from repositories.bulk import collections_paused

if TYPE_CHECKING:
    from filesystems import ProgressCallback
    from harness.pipeline.environments import EnvironmentManager, EnvironmentOptions
    from harness.pipeline.lock import Lockfile
    from harness.pipeline.scan_pool import ScanPool
    from harness.pipeline.staging import StageItem, Stager, StageResult
    from harness.pipeline.status import PipelineObserver, Readiness
    from harness.pipeline.verdicts import VerdictStore
    from harness.skills.scanner import MarketScanPolicy

__all__ = [
    "DEFAULT_MARKET_TIMEOUT",
    "DEFAULT_SKILL_DIRS",
    "DEFAULT_UPKEEP_INTERVAL",
    "DEFAULT_USER_IDLE_AFTER",
    "SkillPipeline",
    "check_skill_dirs",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")
SKILLS_DIR = "skills"
#: The folders of a workspace (and of a user's area) read as skills, the first winning a name
#: clash: the harness's own, then those of other agents (Codex & co, Claude Code).
DEFAULT_SKILL_DIRS: tuple[str, ...] = (SKILLS_DIR, ".agents/skills", ".claude/skills")
#: Seconds without a turn after which a user's layers, view and catalog are released
#: (``user_idle_after``); the user's next turn reads their folders again.
DEFAULT_USER_IDLE_AFTER = 900.0
#: Seconds a layer (a market above all) may take to answer before a turn goes on with its last
#: good skills (``market_timeout``).
DEFAULT_MARKET_TIMEOUT = 10.0
# Seconds a stopped folder watcher may take to end before it is cancelled.
_WATCHERS_GRACE = 5.0
#: Seconds between two renewals of a pipeline's leases in the staging cache (and, when skills'
#: environments are on, reclamations of those no process needs: see ``upkeep_interval``).
DEFAULT_UPKEEP_INTERVAL = 3600.0
# Seconds between two hand-backs of the C allocator's free pages, in a minute when idle users were
# released (see ``SkillPipeline._give_back_memory``).
_GIVE_BACK_EVERY = 60.0
# Rendered catalogs kept for users with skills of their own: each is up to the catalog budget
# (30,000 characters, 60 KB once an ellipsis makes it two bytes a character); the others render
# again from the shared parts on their next turn.
_MAX_CATALOGS = 64


@dataclass(frozen=True, kw_only=True, slots=True)
class _Base:
    """Layers 1–3 merged, plus what staging needs (the union of layers 1–2)."""

    merged: Merged
    sources: dict[str, SkillLayer]  # skill_id -> layer
    stage_items: tuple[StageItem, ...]
    diagnostics: tuple[Diagnostic, ...]
    # Skills of on-demand markets, by stage key: staged once activated (loaded or run).
    on_demand: dict[str, StageItem]
    cache_items: tuple[StageItem, ...]  # stage_items and on_demand's: what the cache may hold
    unanswered: frozenset[str]  # layer 1–2 sources that did not answer: their staged folders stay


@dataclass(frozen=True, kw_only=True, slots=True)
class _Resolved:
    """Layers 1–3 resolved for one merge, shared by every user's view."""

    base: _Base
    environments: int  # the environments' generation they were resolved with
    skills: dict[str, ResolvedSkill]
    shadowed: dict[str, ResolvedSkill]  # what the merge shadowed that a full id still loads
    unshown: dict[str, str]  # skill id -> why no shell shows its folder
    unshown_shadowed: dict[str, str]
    folders: dict[str, tuple[str, ...]]  # top-level folder in the shown skills/ -> skill ids in it
    folders_shadowed: dict[str, tuple[str, ...]]
    search: SkillIndex


@dataclass(frozen=True, kw_only=True, slots=True)
class _UserView:
    """One user's skills: the shared base's, read through, plus the user's own changes."""

    base: _Base
    user: tuple[LayerResult, ...]
    skills: SkillOverlay[ResolvedSkill]
    shadowed: tuple[Shadowing, ...]
    shadowed_skills: SkillOverlay[ResolvedSkill]  # what shadowing hid that a full id still loads
    catalog_key: Hashable  # views with one key render one catalog (see ``SkillPipeline._view_catalog``)
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
    Use as an async context manager so folder watchers run; without it (or with ``watch=False``)
    every turn re-reads folder layers. ``watch_backend`` is how folders are watched
    (:data:`~harness.pipeline.watch.WatchBackend`: ``auto``, inotify on Linux and watchfiles
    elsewhere; ``watchfiles`` everywhere). ``market_scan`` says how market skills are scanned
    on ingest (default: every source report-only, findings become warnings).
    ``max_file_size`` caps each staged or loaded market file (bytes).
    ``skill_dirs`` are the folders of the workspace, and of each user's area, read as skills
    (default :data:`DEFAULT_SKILL_DIRS`); an earlier folder wins a name clash, reported as
    shadowing. A sandbox shows only ``skills/`` of the workspace in place: skills of its other
    folders get no files-root there (a ``files-root-hidden`` warning).
    ``catalog_budget`` caps the catalog (characters, ``None`` = unlimited); when it cuts, the
    plan carries a search index over the turn's skills (:class:`~harness.pipeline.search.SkillIndex`).
    ``catalog_format`` is the catalog's form (:data:`~harness.pipeline.catalog.CATALOG_FORMATS`):
    ``auto`` gives each skill an entry with its ``<skill-id>`` and ``<files-root>`` whenever all
    fit the budget whole, else groups them by source (see :mod:`harness.pipeline.catalog`).
    Setting :attr:`catalog_budget`, :attr:`catalog_format` or :attr:`relevance` renders the
    next turns' catalogs anew; the parts the pipeline is built on (its filesystem, skill
    folders, labels, lock, stager and environments) are fixed.
    ``environments`` turns on per-skill Python environments (:mod:`harness.pipeline.environments`):
    staging turns build them in the background (while the pipeline is entered) and each ready one
    is the skill's ``ResolvedSkill.environment``; it needs a filesystem with a shell on this host.
    ``relevance`` (skill id → score, higher first) orders the skills of each catalog group and
    decides which keep a description when the budget cannot describe them all; without it,
    skills are ordered by name. The catalog shows markets by short labels (:attr:`labels`).
    ``progress`` hears about long work: a staging pass that writes files (see :class:`Stager`),
    a market's first clone (it becomes each market's ``progress``) and environment builds.
    ``lock`` (a :class:`~harness.pipeline.lock.Lockfile` or the path of ``harness.lock``) serves
    exactly the locked content: git markets at their locked commits, other skills only while
    their digests match (see :mod:`harness.pipeline.lock`).
    What a user holds (their layers and what was parsed from them, their view and catalog) is
    kept for the ``max_cached_users`` most recent users and released once a user has taken no
    turn for ``user_idle_after`` seconds (``None``: never); a released user's next turn reads
    their folders again.
    ``market_check_interval`` (seconds) is how often markets whose check is a round trip (git's
    ``ls-remote``) ask their remote, for those not given an interval of their own; between
    checks a warm turn asks nothing, and :meth:`refresh_market` checks one market now.
    While it is entered, a pipeline with a shell renews its leases in the staging cache every
    ``upkeep_interval`` seconds, so that processes on other hosts sharing the workspace keep
    what it serves (see :mod:`harness.pipeline.leases`), and reclaims environments no process
    needs when ``environments.retention`` is set (see :meth:`EnvironmentManager.upkeep`).
    """

    filesystem: Fixed[AbstractFilesystem] = Fixed("build another pipeline on the other filesystem")
    """The shared workspace (unscoped)."""
    skill_dirs: Fixed[tuple[str, ...]] = Fixed("build another pipeline with skill_dirs=...")
    """The folders of the workspace and of each user's area read as skills, the first winning."""
    labels: Fixed[SourceLabels] = Fixed("they follow from the markets the pipeline is built with")
    """The short label the catalog shows for each market (``<name>_<label>`` loads too)."""
    lock: Fixed[Lockfile | None] = Fixed("build another pipeline with lock=...")
    """The lock in force (``lock=``: a :class:`~harness.pipeline.lock.Lockfile` or its path), or ``None``."""
    stager: Fixed[Stager | None] = Fixed("it follows from the filesystem (a shell's workspace has one)")
    """What stages market files for the shell (``None`` without a shell)."""
    environments: Fixed[EnvironmentManager | None] = Fixed("build another pipeline with environments=...")
    """The skills' Python environments (``None`` unless ``environments=`` turned them on)."""

    def __init__(
        self,
        *,
        filesystem: AbstractFilesystem,
        repositories: Sequence[SkillRepository] = (),
        global_skills_dir: str | Path | Sequence[str | Path] | None = None,
        dynamic_skills: bool = True,
        market_timeout: float = DEFAULT_MARKET_TIMEOUT,
        catalog_budget: int | None = DEFAULT_CATALOG_BUDGET,
        catalog_format: CatalogFormat = "auto",
        visibility: VisibilityPolicy | None = None,
        watch: bool = True,
        watch_backend: WatchBackend = "auto",
        verify_interval: float | None = 600.0,
        max_cached_users: int = 1024,
        user_idle_after: float | None = DEFAULT_USER_IDLE_AFTER,
        market_scan: MarketScanPolicy | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        skill_dirs: Sequence[str] = DEFAULT_SKILL_DIRS,
        environments: EnvironmentOptions | None = None,
        relevance: Mapping[str, float] | None = None,
        progress: ProgressCallback | None = None,
        lock: str | os.PathLike[str] | Lockfile | None = None,
        market_check_interval: float | None = None,
        upkeep_interval: float = DEFAULT_UPKEEP_INTERVAL,
    ) -> None:
        super().__init__()
        if not upkeep_interval > 0:
            raise ValueError(f"upkeep_interval: {upkeep_interval!r} must be a positive number of seconds")
        self.upkeep_interval = upkeep_interval
        self.filesystem = filesystem
        self.skill_dirs = check_skill_dirs(skill_dirs)
        # A user's skill folders are the front door's: a sandboxed shell sees them read-only.
        filesystem.protect(self.skill_dirs)
        self.dynamic_skills = dynamic_skills
        self.market_timeout = market_timeout
        self._catalog_budget = catalog_budget
        self._catalog_format = check_catalog_format(catalog_format)
        self.visibility = visibility
        self._watch = watch
        if watch_backend not in get_args(WatchBackend):
            raise ValueError(f"watch_backend: {watch_backend!r} is not one of {', '.join(get_args(WatchBackend))}")
        self._watch_backend: WatchBackend = watch_backend
        self._max_users = max_cached_users
        if user_idle_after is not None and user_idle_after <= 0:
            raise ValueError(f"user_idle_after: {user_idle_after!r} must be a positive number of seconds or None")
        self._idle_after = user_idle_after
        self._seen: dict[str, float] = {}  # user id -> when the user's last turn began (monotonic)
        slugs = disambiguate_sources(r.source for r in repositories)
        if progress is not None:
            for repo in repositories:
                repo.progress = progress
        if market_check_interval is not None:
            for repo in repositories:
                repo.default_check_interval(market_check_interval)
        shared = getattr(filesystem, "store", None)  # replicas over one store share their checks
        if shared is not None:
            from filesystems.stores import KeyValueStore  # loaded already by the filesystem holding it

            if isinstance(shared, KeyValueStore):
                for repo in repositories:
                    repo.share_checks(shared)
        self.labels = SourceLabels.for_markets(slugs)
        self._relevance = relevance
        # Only market skills are scanned on ingest: without a market the scanner, its policy and
        # the stored verdicts are never made (nor their modules loaded).
        self._scan_policy = market_scan
        self._verdicts: VerdictStore | None = None
        self._scan_pool = _scan_pool() if repositories else None
        markets = [
            SkillLayer(
                repo,
                source=slug,
                scan_policy=self._market_scan(),
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
        self._lock_problems: tuple[Diagnostic, ...] = ()  # locked markets that are not configured
        self.lock = None if lock is None else self._apply_lock(lock, markets)
        self._users: collections.OrderedDict[str, tuple[SkillLayer, ...]] = collections.OrderedDict()
        self._idle: list[str] = []
        self._released = 0  # users released since memory was last given back
        self._views: dict[str, _UserView] = {}
        self._shared_view: _UserView | None = None
        self._resolved: _Resolved | None = None
        # Rendered catalogs by what differs from the base's (``_UserView.catalog_key``), most
        # recent last, and the base skills' catalog entries: both made anew for a new base.
        self._catalogs: collections.OrderedDict[Hashable, Catalog] = collections.OrderedDict()
        self._entries: dict[str, tuple[ResolvedSkill, CatalogEntry]] = {}
        # The base's catalog parts, with the catalogs' generation they were made in (worker
        # threads make them; see _forget_catalogs).
        self._parts: tuple[int, _Resolved, CatalogParts] | None = None
        self._catalogs_generation = 0  # counts _forget_catalogs: what was made before is not kept
        self._resolve_lock = anyio.Lock()
        # Merges, resolutions and catalogs run in one thread of the pipeline's own, one at a
        # time: they hold the GIL, and the more threads want it, the longer the event loop waits
        # for its turn; and each thread that allocates gets a malloc arena of its own (resident
        # memory grew by 35 MiB in the soak while anyio's many threads took turns at them).
        self._cpu = anyio.CapacityLimiter(1)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-pipeline")
        cache = filesystem.host_path(CACHE_DIR) if filesystem.has_shell else None
        stager: Stager | None = None
        if cache is not None:  # without a shell nothing is staged: the stager's module never loads
            from harness.pipeline.staging import Stager

            stager = Stager(cache, verify_interval=verify_interval, max_file_size=max_file_size, progress=progress)
        self.stager = stager
        manager: EnvironmentManager | None = None
        if environments is not None:  # its module (requirements, uv) loads only when environments are on
            from harness.pipeline.environments import EnvironmentManager

            manager = EnvironmentManager(filesystem, environments, progress=progress)
        self.environments = manager
        self._base: _Base | None = None
        self._base_inputs: tuple[LayerResult, ...] = ()
        self._staged_early: list[StageResult] = []  # early passes of this wave (see _load_layers)
        self._watched_roots: list[Path] = []
        self._watchers: list[TreeWatcher | WorkspaceWatcher] = []
        # Every folder layer by its watch root, so a change finds its layers without a scan.
        self._by_root = ChangeIndex[SkillLayer]()
        for layer in self._layers:
            self._by_root.add(layer.watch_root, layer)
        # Stage keys of on-demand skills loaded or run so far, and the items staged with them.
        self._activated: set[str] = set()
        self._staging: tuple[_Base, frozenset[str], tuple[StageItem, ...]] | None = None
        # The base and activations the environments last heard of (see _track_environments).
        self._tracked: tuple[_Base, frozenset[str]] | None = None
        self._stack = AsyncExitStack()
        self._base_lock = anyio.Lock()
        # Single-flight refreshes of the shared layers: turns join the current wave until it is
        # done or something is invalidated (``_epoch`` counts invalidations).
        self._epoch = 0
        self._wave: _Wave | None = None
        self._observer: PipelineObserver | None = None

    def _apply_lock(self, lock: str | os.PathLike[str] | Lockfile, markets: Sequence[SkillLayer]) -> Lockfile:
        """Hold the shared layers to ``lock`` (see :mod:`harness.pipeline.lock`): git markets
        pinned to their locked commits, every market's and pinned skill's digests checked."""
        from harness.pipeline.lock import LayerPins, Lockfile, unconfigured
        from repositories.git import GitRepository

        lockfile = lock if isinstance(lock, Lockfile) else Lockfile.read(lock)
        for layer in self._layers:
            is_market = layer in markets
            layer.pins = pins = LayerPins(
                source=layer.source,
                market=lockfile.markets.get(layer.source) if is_market else None,
                is_market=is_market,
                pins=lockfile.pins,
                repository=layer.repository,
            )
            if pins.commit and isinstance(layer.repository, GitRepository):
                layer.repository.pin(pins.commit)
        self._lock_problems = tuple(unconfigured(lockfile, (layer.source for layer in markets)))
        return lockfile

    @property
    def market_layers(self) -> tuple[SkillLayer, ...]:
        """The markets' layers, in registration order (their ``source`` is the slug in use)."""
        return tuple(layer for layer in self._layers if layer.layer is Layer.MARKET)

    async def __aenter__(self) -> Self:
        if self.environments is not None:
            await self._stack.enter_async_context(self.environments)
        if self.stager is not None or self.environments is not None:
            upkeep = await self._stack.enter_async_context(BackgroundTasks())
            upkeep.start_soon(self._upkeep, name="harness-upkeep")
        if self._idle_after is not None:
            memory = await self._stack.enter_async_context(BackgroundTasks())
            memory.start_soon(self._give_back_memory, name="harness-memory")
        if self._watch:
            # Closing stops the watchers first, then gives them a moment to end on their own.
            watchers = await self._stack.enter_async_context(BackgroundTasks(grace=_WATCHERS_GRACE))
            self._stack.callback(self._stop_watchers)
            workspace = self.filesystem.host_path("")
            for root in [workspace, *(layer.watch_root for layer in self._layers)]:
                if root is not None and not self._is_watched(root) and root.is_dir():
                    # The workspace without its staging cache: see WorkspaceWatcher.
                    kind = WorkspaceWatcher if root == workspace else TreeWatcher
                    watcher = kind(root, self._on_change, self._on_watch_failure, backend=self._watch_backend)
                    await watchers.start(watcher.run, name=f"harness-watch:{root}")
                    self._watchers.append(watcher)
                    self._watched_roots.append(root)
            for layer in self._layers:
                layer.watch(self._is_watched(layer.watch_root))
            for layer in self._layers:  # markets that say which host folders hint at a change
                hints = layer.repository.change_hints if layer.layer is Layer.MARKET else ()
                for root in hints:
                    if root.is_dir():
                        watcher = TreeWatcher(
                            root, self._hinted(layer), self._on_hint_failure, backend=self._watch_backend
                        )
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
            self._worker.shutdown(wait=False)
            # The watchers hold this pipeline's bound methods: let go of them, so a closed
            # pipeline (and every skill it holds) is freed at once, not at the next full collection.
            self._watchers.clear()

    async def _upkeep(self) -> None:
        """Every ``upkeep_interval`` seconds: renew the staging lease and keep the environments
        (see the class docstring); a failure is logged and tried again next time."""
        while True:
            await anyio.sleep(self.upkeep_interval)
            try:
                if self.stager is not None:
                    await self.stager.renew()
                if self.environments is not None:
                    await self.environments.upkeep()
            except Exception as exc:  # a long-running process keeps its upkeep: tried again next time
                log.warning("upkeep of the staging cache failed: %s", describe_error(exc))

    async def _give_back_memory(self) -> None:
        """Once a minute in which idle users were released, hand the C allocator's free pages
        back to the system (in a worker thread; see :mod:`harness.pipeline.memory`): what released
        users held does not stay resident because the allocator keeps it for reuse, so a
        long-running process's memory follows the users it holds, not the most it ever held."""
        from harness.pipeline.memory import release_free_memory  # ctypes, loaded when first needed

        while True:
            await anyio.sleep(_GIVE_BACK_EVERY)
            if self._released:
                self._released = 0
                await anyio.to_thread.run_sync(release_free_memory)

    async def _off_loop(self, func: Callable[..., _T], *args: object) -> _T:
        """``func(*args)`` in the pipeline's worker thread (see ``_worker``), one call at a time."""
        return await anyio.to_thread.run_sync(self._worker.submit(func, *args).result, limiter=self._cpu)

    @property
    def relevance(self) -> Mapping[str, float] | None:
        """Skill id → score ordering the catalog (see the class docstring). Setting it renders
        the next turns' catalogs anew; the mapping is read only then, not on every turn."""
        return self._relevance

    @relevance.setter
    def relevance(self, scores: Mapping[str, float] | None) -> None:
        self._relevance = scores
        self._forget_catalogs()

    @property
    def catalog_budget(self) -> int | None:
        """The catalog's characters at most (``None``: no bound). Setting it renders the next
        turns' catalogs anew."""
        return self._catalog_budget

    @catalog_budget.setter
    def catalog_budget(self, budget: int | None) -> None:
        self._catalog_budget = budget
        self._forget_catalogs()

    @property
    def catalog_format(self) -> CatalogFormat:
        """The catalog's form: ``auto``, ``explicit`` or ``compact`` (see the class docstring).
        Setting it renders the next turns' catalogs anew."""
        return self._catalog_format

    @catalog_format.setter
    def catalog_format(self, catalog_format: CatalogFormat) -> None:
        self._catalog_format = check_catalog_format(catalog_format)
        self._forget_catalogs()

    @property
    def verdicts(self) -> VerdictStore:
        """The market scan's verdicts kept across restarts, in machine-owned state (beside the
        staging manifest when there is a shell), made on first use."""
        if self._verdicts is None:
            from harness.pipeline.verdicts import VerdictStore

            folder = CACHE_DIR if self.filesystem.has_shell else MACHINE_DIR
            self._verdicts = VerdictStore(self.filesystem, self._market_scan().scanner, folder=folder)
        return self._verdicts

    def _market_scan(self) -> MarketScanPolicy:
        """The policy market skills are scanned with (``market_scan``, else report-only)."""
        if self._scan_policy is None:
            from harness.skills.scanner import MarketScanPolicy

            self._scan_policy = MarketScanPolicy()
        return self._scan_policy

    async def _save_verdicts(self) -> None:
        """Save new scan verdicts; a pipeline that never scanned has none."""
        if self._verdicts is not None:
            await self._verdicts.save()

    # -- the turn ----------------------------------------------------------------------------

    async def prepare(self, context: RuntimeContext, *, stage: bool = True) -> TurnPlan:
        """Merge, filter, stage and render for one turn of ``context.user_id``.

        ``stage=False`` plans without staging (what read-only commands use): nothing is written,
        files-roots still name where staged folders are or will be, ``plan.staged`` is ``None``.
        """
        base = await self._current_base(stage_early=stage)
        resolved = await self._resolve_base(base)
        if stage:
            await self._save_verdicts()  # new scan verdicts, if any (read-only plans write nothing)
            self._track_environments(base, resolved)
        layers = self._user(context.user_id)
        user = tuple([await self._load(layer) for layer in layers])
        view = self._views.get(context.user_id)
        if (
            view is None
            or view.base is not base
            or view.environments != self._environments_generation
            or any(a is not b for a, b in zip(view.user, user, strict=True))
        ):
            shared = None if _owns_skills(user) else self._current_shared_view(base, resolved)
            if shared is not None:
                # A user without skills of their own gets the shared view as it is: no hop.
                view = dataclasses.replace(shared, user=user)
            else:
                # A new base means a new view for every user: twenty turns at once built theirs
                # on the event loop one after the other.
                view = await self._off_loop(self._build_view, context, base, resolved, user, layers)
            self._views[context.user_id] = view
        # The plan's own overlays: a turn that changes its skills changes no other turn's.
        skills, shadowed, catalog = view.skills.copy(), view.shadowed_skills.copy(), await self._view_catalog(view)
        if self.visibility is not None:
            candidates = [s.skill for s in (*skills.values(), *shadowed.values())]
            allowed = {s.skill_id for s in await self.visibility.apply(candidates, context)}
            if len(allowed) < len(candidates):  # the common case filters nothing: keep the view's catalog
                for hidden in [k for k in skills if k not in allowed]:
                    del skills[hidden]
                for hidden in [k for k in shadowed if k not in allowed]:
                    del shadowed[hidden]
                catalog = await self._off_loop(self._catalog, skills, shadowed)
        staged = await self._stage_base(base) if self.stager is not None and stage else None
        diagnostics = (
            *base.diagnostics,
            *(d for result in user for d in result.diagnostics),
            *view.diagnostics,
            *(s.diagnostic() for s in view.shadowed),
            *(staged.diagnostics if staged else ()),
            *(self.environments.diagnostics if self.environments is not None else ()),
            *(d for layer in self.market_layers for d in layer.fetch_diagnostics),
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
            activate=self._activate if stage else None,
            shadowed_skills=shadowed,
            labels=self.labels,
            cache_items=base.cache_items,
            latest_cache_items=self._latest_cache_items,
            running=self._running if self.stager is not None or self.environments is not None else None,
        )

    def _latest_cache_items(self) -> tuple[StageItem, ...]:
        """The cache items of the newest merge (see :attr:`TurnPlan.latest_cache_items`)."""
        return self._base.cache_items if self._base is not None else ()

    async def _before_run(self, skill: ResolvedSkill) -> None:
        """Before a command of ``skill`` runs: a staged skill's folder gets back exactly what was
        staged (see :meth:`Stager.check`); skills shown in place are the user's or the operator's.
        A skill of an on-demand market is activated first (see :meth:`_activate`)."""
        await self._activate(skill)
        if self.stager is not None and skill.source.staged:
            await self.stager.check(_stage_item(skill.entry, skill.source).key)

    @asynccontextmanager
    async def _running(self, skills: Sequence[ResolvedSkill]) -> AsyncIterator[CommandEnvironments]:
        """Around a command of ``skills`` (see :attr:`TurnPlan.running`): their staged folders
        held (:meth:`Stager.using`), their environments waited for and held
        (:meth:`EnvironmentManager.using`)."""
        keys = [_stage_item(s.entry, s.source).key for s in skills if s.source.staged]
        with self.stager.using(keys) if self.stager is not None else nullcontext():
            if self.environments is None:
                yield CommandEnvironments.named(skills)
            else:
                async with self.environments.using(skills) as environments:
                    yield environments

    async def _activate(self, skill: ResolvedSkill) -> None:
        """A skill of an on-demand market (an MCP server) is loaded or about to run: fetch every
        file of it, each verified by the market (a file that is not what the listing says raises
        ``ContentMismatch``, naming the skill, the file and both digests) and judged by the market
        scan as it is read (``ContentBlocked`` when the market's level blocks it; never done
        ahead for such a market), stage the skill, from now on with every later pass, and work
        out its environment (:meth:`_track_environments`). Other skills, a dynamic skill (nothing
        to verify or stage) and one already staged at this content cost nothing."""
        entry = skill.entry
        if not entry.on_demand or not skill.source.staged or entry.dynamic:
            return
        item = _stage_item(entry, skill.source)
        staged = self._staging[2] if self._staging is not None else ()
        if any(s.key == item.key and s.entry.digest == entry.digest for s in staged):
            return
        # Without a shell nothing is staged: only the SKILL.md a load fetched is read and scanned.
        paths = [entry.skill.skill_md_name, *(f.path for f in entry.files if self.stager is not None)]
        await skill.source.read_files(entry, paths)  # verified now: staging reads them from memory
        if self.stager is None:
            return
        self._activated.add(item.key)
        base = await self._current_base()
        result = await self.stager.stage(self._stage_items(base), keep_sources=base.unanswered)
        failed = [d for d in result.diagnostics if d.severity == "error" and item.key in d.message]
        if failed:
            raise RepositoryUnavailable(f"{entry.skill.skill_id} could not be staged: {failed[0].message}")
        self._track_environments(base, await self._resolve_base(base))

    def _track_environments(self, base: _Base, resolved: _Resolved) -> None:
        """Hand the environments worker the skills that may run (it reads their files and
        builds in the background; the same base and activations cost nothing): every skill of
        layers 1–3, shadowed ones included (a full id still runs them), but of an on-demand
        market only those activated (loaded or run) so far. Finding what such a skill needs
        reads its files, which must wait for its first use; a dynamic one never runs."""
        environments = self.environments
        if environments is None:
            return
        activated = frozenset(key for key in self._activated if key in base.on_demand)
        tracked = self._tracked
        if tracked is None or tracked[0] is not base or tracked[1] != activated:
            tracked = self._tracked = (base, activated)
        environments.track(  # a generator: walked only when the key is new to the manager
            tracked,
            (
                s
                for s in (*resolved.skills.values(), *resolved.shadowed.values())
                if not s.entry.on_demand or _stage_item(s.entry, s.source).key in activated
            ),
        )

    def _stage_items(self, base: _Base) -> tuple[StageItem, ...]:
        """What a staging pass stages: the base's items plus the activated on-demand skills still
        offered (the same tuple while neither changes, so a warm turn stages nothing)."""
        activated = frozenset(key for key in self._activated if key in base.on_demand)
        if not activated:
            return base.stage_items
        if self._staging is None or self._staging[0] is not base or self._staging[1] != activated:
            items = (*base.stage_items, *(base.on_demand[key] for key in sorted(activated)))
            self._staging = (base, activated, items)
        return self._staging[2]

    async def stage(self, *, verify: bool = False) -> StageResult:
        """Stage layers 1–2 now (``verify`` re-hashes what is on disk and repairs it). The result's
        diagnostics start with those of the layers (a market that is down, a broken skill)."""
        if self.stager is None:
            raise ShellUnavailable("staging needs a filesystem with a shell on this host")
        base = await self._current_base(stage_early=True)
        await self._save_verdicts()
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
                # Merging thousands of skills would hold every other turn: a worker thread does it.
                self._base = await self._off_loop(self._merge_base, results)
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
        # An on-demand market's skills (an MCP server's) are staged when first loaded or run.
        items = [_stage_item(entry, layer) for entry in _one_per_folder(result, layer).entries if not entry.on_demand]
        try:  # partial: it only writes; removing what is no longer served is the turn's pass
            self._staged_early.append(await self.stager.stage(items, partial=True))
        except Exception as exc:  # the turn's own staging pass tries again and reports
            log.warning("staging %r early failed: %s", layer.source, exc)

    async def _stage_base(self, base: _Base, *, verify: bool = False) -> StageResult:
        """The staging pass of a turn; files an early pass wrote count as written by it."""
        assert self.stager is not None
        result = await self.stager.stage(self._stage_items(base), verify=verify, keep_sources=base.unanswered)
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
        result = None
        with anyio.move_on_after(self.market_timeout):
            result = await layer.load()
        if result is None:
            result = layer.failed(f"did not answer within {self.market_timeout:g}s (market_timeout)")
        if result.failed and self._observer is not None and layer.layer is Layer.MARKET:
            self._observer.market_failed(layer.source)
        return result

    def _merge_base(self, results: tuple[LayerResult, ...]) -> _Base:
        # A stage item per market skill and the merged tables, all kept (in a worker thread).
        with collections_paused(sum(len(result.entries) for result in results)):
            return self._merged_base(results)

    def _merged_base(self, results: tuple[LayerResult, ...]) -> _Base:
        results = tuple(
            _one_per_folder(result, layer) if layer.staged else result
            for layer, result in zip(self._layers, results, strict=True)
        )
        sources: dict[str, SkillLayer] = {}
        items: list[StageItem] = []
        on_demand: dict[str, StageItem] = {}
        unanswered: set[str] = set()
        # The items of entries the base before had are kept: an edit in one layer would
        # otherwise make a thousand market items anew, for the garbage collector to go through.
        before = self._base
        known = {id(i.entry): i for i in (*before.stage_items, *before.on_demand.values())} if before else {}

        def item_for(entry: LayerEntry, layer: SkillLayer) -> StageItem:
            item = known.get(id(entry))
            return (
                item if item is not None and item.entry is entry and item.reader is layer else _stage_item(entry, layer)
            )

        for layer, result in zip(self._layers, results, strict=True):
            if result.failed and layer.staged:
                unanswered.add(layer.source)
            for entry in result.entries:
                sources[entry.skill.skill_id] = layer
                if layer.staged and entry.on_demand:
                    item = item_for(entry, layer)
                    on_demand[item.key] = item
                elif layer.staged:
                    items.append(item_for(entry, layer))
        merged = merge_layers(results)
        diagnostics = (
            *self._global_missing,
            *self._lock_problems,
            *(d for result in results for d in result.diagnostics),
        )
        return _Base(
            merged=merged,
            sources=sources,
            stage_items=tuple(items),
            diagnostics=diagnostics,
            on_demand=on_demand,
            cache_items=(*items, *on_demand.values()),
            unanswered=frozenset(unanswered),
        )

    # -- layer 4 ---------------------------------------------------------------------------

    def _user(self, user_id: str) -> tuple[SkillLayer, ...]:
        """The user's folder layers in ascending priority (they share one scoped filesystem)."""
        self._release_idle()
        self._seen[user_id] = time.monotonic()
        layers = self._users.get(user_id)
        if layers is None:
            scoped = self.filesystem.scoped(user_id)
            layers = _folder_layers(scoped, Layer.USER, "workspace-namespaced", self.skill_dirs)
            for layer in layers:
                layer.watch(self._is_watched(layer.watch_root))
                self._by_root.add(layer.watch_root, layer)
            self._users[user_id] = layers
            while len(self._users) > self._max_users:
                self._release(next(iter(self._users)))
        else:
            self._users.move_to_end(user_id)
        return layers

    def _release_idle(self) -> None:
        """Release the users whose last turn is ``user_idle_after`` seconds old. ``_users`` is in
        the order of their last turns, so this looks at the idle ones and the first active one."""
        if self._idle_after is None:
            return
        cutoff = time.monotonic() - self._idle_after
        for user_id in self._users:
            if self._seen.get(user_id, cutoff) > cutoff:
                break
            self._idle.append(user_id)
        while self._idle:
            self._release(self._idle.pop())

    def _release(self, user_id: str) -> None:
        """Forget what ``user_id`` holds: their layers (and what was parsed from them), their view
        and their place in the change index. Their next turn starts over."""
        layers = self._users.pop(user_id, ())
        self._released += 1
        self._views.pop(user_id, None)
        self._seen.pop(user_id, None)
        for layer in layers:
            self._by_root.discard(layer.watch_root, layer)

    @property
    def cached_users(self) -> int:
        """How many users' layers and views the pipeline holds now."""
        return len(self._users)

    # -- what operators see ----------------------------------------------------------------

    def observe(self, observer: PipelineObserver | None) -> None:
        """Tell ``observer`` from now on about markets that fail to load and environment builds
        (see :class:`~harness.pipeline.status.PipelineObserver`); ``None`` stops telling."""
        self._observer = observer
        if self.environments is not None:
            self.environments.observer = observer

    def readiness(self) -> Readiness:
        """Whether the shared skill sources have loaded, from memory (no file or market is
        asked): see :class:`~harness.pipeline.status.Readiness`. :meth:`warm` loads them."""
        from harness.pipeline.status import Readiness

        shared = self._layers  # global folders, markets, the workspace's folders
        return Readiness(
            loaded=bool(self._base_inputs),  # a refresh rebuilds the base from layers that keep their skills
            sources=len(shared),
            unanswered=sum(not layer.answered for layer in shared),
            failing=sum(layer.failing for layer in shared),
        )

    async def warm(self) -> Readiness:
        """Load the shared skill sources now, as a turn's first step does (joining a load in
        flight; sources that answer from memory are not asked), without staging; returns the
        :meth:`readiness` that follows."""
        await self._current_base()
        return self.readiness()

    @property
    def cache_usage(self) -> dict[str, int]:
        """Bytes in the staging cache, by part, from memory (no file is read): ``skills``, the
        staged files as the staging manifest records them, and with environments on,
        ``environments``, those this process built or found. Empty without a shell."""
        if self.stager is None:
            return {}
        usage = {"skills": self.stager.staged_bytes}
        if self.environments is not None:
            usage["environments"] = self.environments.size
        return usage

    def _current_shared_view(self, base: _Base, resolved: _Resolved) -> _UserView | None:
        """The view of users without skills of their own, when it is built for ``base``."""
        shared = self._shared_view
        if shared is None or shared.base is not base or shared.environments != resolved.environments:
            return None
        return shared

    def _build_view(
        self,
        context: RuntimeContext,
        base: _Base,
        resolved: _Resolved,
        user: tuple[LayerResult, ...],
        layers: tuple[SkillLayer, ...],
    ) -> _UserView:
        """The merged skills of one user: the base's layer 1–3 skills, shared by every user, with
        the user's own skills over them. Users without skills or folders of their own share one
        view whole; the others hold only what differs (their skills, the base skills those
        replace, the files-roots their folders cover)."""
        if not _owns_skills(user):
            shared = self._current_shared_view(base, resolved)
            if shared is None:
                shared = _UserView(
                    base=base,
                    user=user,
                    skills=SkillOverlay(resolved.skills),
                    shadowed=base.merged.shadowed,
                    shadowed_skills=SkillOverlay(resolved.shadowed),
                    catalog_key=(),
                    search=resolved.search,
                    diagnostics=_hidden_diagnostics(resolved.unshown, "workspace"),
                    environments=resolved.environments,
                )
                self._shared_view = shared
            return dataclasses.replace(shared, user=user)
        merged = merge_layers(user, base=base.merged)
        owner = {id(entry): layer for layer, result in zip(layers, user, strict=True) for entry in result.entries}
        own: dict[str, ResolvedSkill] = {}
        gone: set[str] = set()
        moved: dict[str, ResolvedSkill] = {}  # base skills the user's replace: shadowed now
        for result in user:
            for entry in result.entries:
                replaced = base.merged.entries.get(entry.skill.name)
                if replaced is not None and replaced.skill.skill_id in resolved.skills:
                    replaced_id = replaced.skill.skill_id
                    if replaced_id not in gone:
                        gone.add(replaced_id)
                        moved[replaced_id] = resolved.skills[replaced_id]
        for entry in merged.entries.values():
            if entry.skill.layer is Layer.USER:
                own[entry.skill.skill_id] = self._resolve(entry, owner[id(entry)])
        skills = SkillOverlay(resolved.skills, own, gone)
        shadowed = SkillOverlay(resolved.shadowed, moved)
        covered = self._covered(user, layers)
        hidden = self._hidden_roots(resolved, skills, covered, shadowed=False)
        for skill_id in hidden:
            skills[skill_id] = dataclasses.replace(skills[skill_id], files_root=None)
        for skill_id in self._hidden_roots(resolved, shadowed, covered, shadowed=True):
            shadowed[skill_id] = dataclasses.replace(shadowed[skill_id], files_root=None)
        own_entries = frozenset(self._entry(s) for s in skills.own.values())
        return _UserView(
            base=base,
            user=user,
            skills=skills,
            shadowed=merged.shadowed,
            shadowed_skills=shadowed,
            catalog_key=(own_entries, skills.gone, frozenset(shadowed.own), shadowed.gone),
            search=SkillIndex([s.skill for s in own.values()], base=resolved.search, fts=False),
            diagnostics=_hidden_diagnostics(hidden, context.user_id or ""),
            environments=resolved.environments,
        )

    async def _view_catalog(self, view: _UserView) -> Catalog:
        """The view's catalog: rendered once for all views with its key (every user without
        skills of their own, users whose own skills render alike), the most recent kept.
        Rendering a catalog of thousands of skills is a worker thread's job; one rendered while
        the catalogs were forgotten (a new base) serves only the turn that asked."""
        catalog = self._catalogs.get(view.catalog_key)
        if catalog is None:
            generation = self._catalogs_generation
            catalog = await self._off_loop(self._catalog, view.skills, view.shadowed_skills)
            if generation != self._catalogs_generation:
                return catalog
            self._catalogs[view.catalog_key] = catalog
            while len(self._catalogs) > _MAX_CATALOGS:
                self._catalogs.popitem(last=False)
        else:
            self._catalogs.move_to_end(view.catalog_key)
        return catalog

    def _covered(self, user: tuple[LayerResult, ...], layers: tuple[SkillLayer, ...]) -> frozenset[str]:
        """The names of the user's top-level folders that replace the workspace's same-name
        folders in the user's shell: a sandbox merges the user's ``skills/`` over the
        workspace's by name, a user folder replacing the workspace's whole (nested skills
        included). Empty when the user's shell does not merge them."""
        if not self.filesystem.has_shell:
            return frozenset()
        user_fs = _shown_in(layers[0])
        if not (user_fs.has_shell and user_fs.shell_path(SKILLS_DIR) == self.filesystem.shell_path(SKILLS_DIR)):
            return frozenset()
        return frozenset(
            name for layer, result in zip(layers, user) if layer.prefix == SKILLS_DIR for name in result.top_level
        )

    def _hidden_roots(
        self, resolved: _Resolved, skills: Mapping[str, ResolvedSkill], covered: frozenset[str], *, shadowed: bool
    ) -> dict[str, str]:
        """Layer 1–3 skills of ``skills`` whose folder the user's shell does not show, with the
        reason: those the base resolution found unshown (links, folders other than
        ``skills/``, see :meth:`_unshown`), and those under a ``covered`` folder name."""
        # The shadowed skills are the base's shadowed ones and the base skills the user's own
        # replace (moved there from the base's skills): both tables are looked in.
        unshowns = (resolved.unshown_shadowed, resolved.unshown) if shadowed else (resolved.unshown,)
        by_folders = (resolved.folders_shadowed, resolved.folders) if shadowed else (resolved.folders,)
        hidden = {
            skill_id: reason for unshown in unshowns for skill_id, reason in unshown.items() if skill_id in skills
        }
        for name in sorted(covered):
            for skill_id in (skill_id for by_folder in by_folders for skill_id in by_folder.get(name, ())):
                if skill_id in skills and skill_id not in hidden and skills[skill_id].skill.layer is not Layer.USER:
                    hidden[skill_id] = (
                        "its folder is covered by this user's own folder of the same name in the user's shell, "
                        "so its files-root is not rendered; rename one of the folders"
                    )
        return hidden

    def _unshown(self, skills: Mapping[str, ResolvedSkill]) -> dict[str, str]:
        """Workspace skills whose folder no user's shell shows, with the reason: a folder
        reached through a link, or in a folder other than ``skills/``, is not inside what a
        sandbox binds."""
        if not self.filesystem.has_shell:
            return {}
        hidden: dict[str, str] = {}
        for skill_id, s in skills.items():
            if s.skill.layer is not Layer.WORKSPACE:
                continue
            if s.entry.link is not None and not self._link_shown(s.entry):
                hidden[skill_id] = (
                    f"its folder is a link to {s.entry.link}, which the shell does not show; "
                    "copy the folder into the workspace or install it in the global layer"
                )
            elif s.source.prefix != SKILLS_DIR and not self._link_shown(s.entry):
                hidden[skill_id] = (
                    f"its folder is in {s.source.prefix}/, which the shell does not show (only {SKILLS_DIR}/ "
                    f"of the workspace is); move the folder into {SKILLS_DIR}/ to give the shell its files"
                )
        return hidden

    def _by_folder(self, skills: Mapping[str, ResolvedSkill]) -> dict[str, tuple[str, ...]]:
        """The skills whose files-root lies in the shown ``skills/`` folder, by the name of the
        top-level folder there they are in (what a user's same-name folder would cover)."""
        if not self.filesystem.has_shell:
            return {}
        prefix = self.filesystem.shell_path(SKILLS_DIR) + "/"
        found: dict[str, list[str]] = {}
        for skill_id, s in skills.items():
            if s.files_root is not None and s.files_root.startswith(prefix):
                found.setdefault(s.files_root[len(prefix) :].split("/", 1)[0], []).append(skill_id)
        return {name: tuple(ids) for name, ids in found.items()}

    def _link_shown(self, entry: LayerEntry) -> bool:
        """Whether the shell sees a workspace folder where it is on the host (a host shell does,
        following links; a sandbox shows only what it binds)."""
        host = self.filesystem.host_path(entry.path)
        return host is not None and self.filesystem.shell_path(entry.path) == str(host)

    @property
    def _environments_generation(self) -> int:
        return self.environments.generation if self.environments is not None else 0

    async def _resolve_base(self, base: _Base) -> _Resolved:
        """Layers 1–3 resolved once per merge (and once per change of their environments),
        shared by every user's view: the merged skills, those the merge shadowed that a full id
        still names, what no shell shows, and the search index over them. Resolved in the
        worker thread, once however many turns ask at the same time, with the catalog entries
        of its skills: for thousands of skills this takes longer than any turn should wait for
        the event loop."""
        known = self._resolved_now(base)
        if known is not None:
            return known
        async with self._resolve_lock:
            known = self._resolved_now(base)
            if known is not None:
                return known
            generation = self._catalogs_generation
            resolved, parts = await self._off_loop(self._resolved_with_parts, base)
            kept = generation == self._catalogs_generation  # else the relevance changed meanwhile
            self._set_resolved(resolved)
            if kept:
                self._parts = (self._catalogs_generation, resolved, parts)
            return resolved

    def _resolved_with_parts(self, base: _Base) -> tuple[_Resolved, CatalogParts]:
        with collections_paused(len(base.merged.entries)):
            resolved = self._resolved_for(base, self._environments_generation)
            return resolved, self._new_parts(resolved)

    def _resolved_now(self, base: _Base) -> _Resolved | None:
        """The resolved base when it is ``base`` with the environments' current generation."""
        resolved = self._resolved
        if resolved is None or resolved.base is not base or resolved.environments != self._environments_generation:
            return None
        return resolved

    def _set_resolved(self, resolved: _Resolved) -> None:
        """Serve ``resolved`` from now on: catalogs are rendered anew, the catalog entries of
        the skills it resolved as before are kept (a merge after one changed skill makes one
        new entry, not thousands of objects for the garbage collector to go through)."""
        self._resolved = resolved
        entries = self._entries
        self._forget_catalogs()
        self._entries = {
            skill_id: known
            for skill_id, known in entries.items()
            if resolved.skills.get(skill_id) is known[0] or resolved.shadowed.get(skill_id) is known[0]
        }

    def _resolved_for(self, base: _Base, generation: int) -> _Resolved:
        """``base`` resolved (blocking, touches no state of the pipeline but the entry cache).
        A skill whose entry and source are the ones the resolution before had keeps its
        resolved skill, so that its catalog entry is kept too."""
        before = self._resolved
        known = {} if before is None or before.environments != generation else {**before.shadowed, **before.skills}

        def resolve(entry: LayerEntry) -> ResolvedSkill:
            source = base.sources[entry.skill.skill_id]
            same = known.get(entry.skill.skill_id)
            if same is not None and same.entry is entry and same.source is source:
                return same
            return self._resolve(entry, source)

        skills = {entry.skill.skill_id: resolve(entry) for entry in base.merged.entries.values()}
        shadowed = {entry.skill.skill_id: resolve(entry) for entry in base.merged.loadable_losers()}
        return _Resolved(
            base=base,
            environments=generation,
            skills=skills,
            shadowed=shadowed,
            unshown=self._unshown(skills),
            unshown_shadowed=self._unshown(shadowed),
            folders=self._by_folder(skills),
            folders_shadowed=self._by_folder(shadowed),
            search=SkillIndex(s.skill for s in skills.values()),
        )

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
            return self.filesystem.shell_path(f"{CACHE_DIR}/{_stage_item(entry, source).key}")
        in_place_elsewhere = source.layer is Layer.WORKSPACE and source.prefix != SKILLS_DIR
        if (entry.link is not None or in_place_elsewhere) and not self._link_shown(entry):
            return None
        return _shown_in(source).shell_path(entry.path)

    def render(self, skills: Mapping[str, ResolvedSkill], shadowed: Mapping[str, ResolvedSkill] | None = None) -> str:
        """The catalog text for ``skills`` (and the ``shadowed`` skills it names) with this
        pipeline's tools, budget, labels and relevance."""
        return self._catalog(skills, shadowed or {}).text

    def _catalog(self, skills: Mapping[str, ResolvedSkill], shadowed: Mapping[str, ResolvedSkill]) -> Catalog:
        """The catalog of ``skills``: built from the base's rendered parts when ``skills`` are the
        base's with a few changes (a user's view), else from scratch."""
        shadowed_ids = sorted(
            f"{s.skill.name}_{self.labels.label(s.skill.source)}" for s in shadowed.values() if not s.skill.hidden
        )
        options = {
            "load_tool": LOAD_TOOL,
            "shell_tool": SHELL_TOOL if self.filesystem.has_shell else None,
            "budget": self._catalog_budget,
            "search_tool": SEARCH_TOOL,
            "shadowed": shadowed_ids,
            "catalog_format": self._catalog_format,
        }
        resolved = self._resolved
        if isinstance(skills, SkillOverlay) and resolved is not None and skills.base is resolved.skills:
            return self._catalog_parts(resolved).build(
                without=skills.gone | skills.own.keys(),
                extra=[self._entry(s) for s in skills.own.values() if not s.skill.hidden],
                **options,  # type: ignore[arg-type]
            )
        return build_catalog([self._entry(s) for s in skills.values() if not s.skill.hidden], **options)  # type: ignore[arg-type]

    def _catalog_parts(self, resolved: _Resolved) -> CatalogParts:
        """The rendered parts of the resolved base's catalog, which users' catalogs are made of:
        made once per base and relevance (a worker thread may make them while the base changes,
        so they are kept with what they were made for)."""
        generation, known = self._catalogs_generation, self._parts
        if known is not None and known[0] == generation and known[1] is resolved:
            return known[2]
        parts = self._new_parts(resolved)
        self._parts = (generation, resolved, parts)
        return parts

    def _new_parts(self, resolved: _Resolved) -> CatalogParts:
        return CatalogParts(self._entry(s) for s in resolved.skills.values() if not s.skill.hidden)

    def _forget_catalogs(self) -> None:
        self._catalogs_generation += 1
        self._catalogs.clear()
        self._entries.clear()
        self._parts = None

    def _entry(self, s: ResolvedSkill) -> CatalogEntry:
        """The catalog entry of ``s``; those of the shared base's skills are made once per merge."""
        skill_id = s.skill.skill_id
        known = self._entries.get(skill_id)
        if known is not None and known[0] is s:
            return known[1]
        scores = self._relevance or {}
        entry = entry_for(
            s.skill,
            s.files_root,
            s.workflow,
            source=self.labels.label(s.skill.source),
            relevance=scores.get(skill_id, 0.0),
        )
        base = self._resolved
        if base is not None and (base.skills.get(skill_id) is s or base.shadowed.get(skill_id) is s):
            self._entries[skill_id] = (s, entry)
        return entry

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


def _stage_item(entry: LayerEntry, layer: SkillLayer) -> StageItem:
    """The staging item of a staged layer's ``entry`` (or of a skill a shell runs)."""
    return _stage_item_type()(entry=entry, reader=layer)


@functools.cache
def _stage_item_type() -> type[StageItem]:
    """``StageItem``, its module loaded with the first staged layer or shell: a pipeline over
    folders without a shell stages nothing."""
    from harness.pipeline.staging import StageItem

    return StageItem


def _one_per_folder(result: LayerResult, layer: SkillLayer) -> LayerResult:
    """A staged skill lives in ``.skills-cache/<source>/<folder>``, so of two nested folders with
    one name only the first in path order is kept (as a market does), the other reported. (An
    on-demand market's skills at different paths have different sources: both are kept.)"""
    kept: dict[str, LayerEntry] = {}
    diagnostics = list(result.diagnostics)
    source = layer.source
    for entry in sorted(result.entries, key=lambda e: e.path):
        key = _stage_item(entry, layer).key
        folder = key.partition("/")[2]
        if key in kept:
            diagnostics.append(
                Diagnostic.warning(
                    code="duplicate-folder",
                    message=(
                        f"duplicate skill folder {folder!r} in the {source} skills: {entry.path} skipped, "
                        f"{kept[key].path} kept (both would be staged as {CACHE_DIR}/{key})"
                    ),
                    location=entry.skill.location,
                )
            )
        else:
            kept[key] = entry
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


def _owns_skills(user: tuple[LayerResult, ...]) -> bool:
    """Whether a user's own layers hold skills or folders (else the user shares one view)."""
    return any(result.entries or result.top_level for result in user)


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

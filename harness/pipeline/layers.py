"""The sources a turn's skills come from: one :class:`SkillLayer` per repository.

The global folder, the workspace's ``skills/``, a user's area and every market are all
repositories; a layer turns their bundles into parsed :class:`Skill` values, remembers what it
parsed (an unchanged SKILL.md is never parsed twice), knows whether it must look again, and
serves its last good skills when its repository fails.
"""

from __future__ import annotations

import errno
import functools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import anyio

from filesystems import AbstractFilesystem, relative_path_problem
from harness.diagnostics import Diagnostic, Severity
from harness.skills.rules import unsafe_segment_reason
from harness.skills.skill import Layer, Skill, load_skill
from repositories.bulk import collections_paused

if TYPE_CHECKING:  # the ingest scan's modules load with a market's scan policy, never for folders
    from harness.pipeline.scan_pool import ScanPool
    from harness.pipeline.verdicts import ScanMany, VerdictStore
    from harness.skills.scanner import MarketScanPolicy, Scanner, ScanVerdict

from repositories import (
    BundleFile,
    ContentBlocked,
    FileListing,
    LastGood,
    RepositoryError,
    RepositoryUnavailable,
    SkillBundle,
    SkillRepository,
    Snapshot,
    sub_source,
)

if TYPE_CHECKING:
    from harness.pipeline.lock import LayerPins

log = logging.getLogger(__name__)

DEFAULT_MAX_FILE_SIZE = 50 * 1024 * 1024
"""The largest market file staged or read by default (``max_file_size``)."""

# The ingest scan reads a changed market's files in batches of about this many bytes (one
# batched read and one worker-thread hop each), so a huge market never sits in memory whole.
_SCAN_BATCH_BYTES = 16 * 1024 * 1024
# The pieces an on-demand market's file is passed on in once judged (see SkillLayer.read_chunks).
_CHUNK = 1 << 20

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "LayerEntry",
    "LayerResult",
    "SkillLayer",
    "describe_error",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerEntry:
    """A parsed skill with what staging and the load tool need: its files and a content digest.

    ``files`` is the whole listing unless ``listed`` is ``False`` (a folder layer read lazily):
    then it holds what the load listed (the folder's top level and the workflow definition
    files), and :meth:`SkillLayer.list_files` gives the whole listing.
    """

    skill: Skill
    digest: str
    files: tuple[BundleFile, ...]
    path: str  # the folder's path inside the layer's filesystem (its folder name in a market)
    key: str  # what names the folder in the repository's reads (``SkillBundle.key``)
    link: str | None = None  # the real host folder when an operator's layer reached it through a link
    listed: bool = True
    plugin: str = ""  # the plugin's name, unfolded, when the market gathers plugins (``SkillBundle.sub_source``)
    # The market serves the files only on use (``SkillBundle.on_demand``): ``skill.raw`` is a
    # stand-in of the listed frontmatter, the real SKILL.md is read through the layer.
    on_demand: bool = False
    origin: str = ""  # the skill's URI at its origin (``SkillBundle.origin``), when it has one

    @property
    def dynamic(self) -> bool:
        """Whether the market has no digest of the skill's content to give (``dynamic:``, an MCP
        server's ``"resources": "dynamic"``): nothing of it can be verified, staged or approved."""
        return self.digest.startswith("dynamic:")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Scanned:
    """What the ingest scan made of one bundle: the verdict over its main file and every text
    file up to the policy's limit, or why there is none; and the files too large to judge."""

    verdict: ScanVerdict | None = None
    error: Exception | None = None
    retry: bool = False  # the files could not be read: scan again on the next load
    too_large: tuple[BundleFile, ...] = ()


# What a layer's last parse made of one bundle: the entry alone when it gave a skill and nothing
# to report (most bundles: one object less each for the garbage collector), else the bundle's
# token (``_token``), the entry or ``None`` and the diagnostics.
_Parsed = LayerEntry | tuple[str, LayerEntry | None, tuple[Diagnostic, ...]]

# One bundle of a scan batch: the bundle, the paths read for the scan, the files too large to read.
_ScanItem = tuple[SkillBundle, tuple[str, ...], tuple[BundleFile, ...]]


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerResult:
    """What one source contributes to a turn."""

    entries: tuple[LayerEntry, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    # The source did not answer this time: ``entries`` are its last good ones (maybe none), so
    # nothing it staged before may be removed for not being offered.
    failed: bool = False
    top_level: tuple[str, ...] = ()  # the names at the top of a folder layer (for a sandbox's merge)


_NOTHING_YET = LayerResult(entries=())
_UNREAD: dict[str, bytes] = {}


def _stale(last: LayerResult, problem: Diagnostic) -> LayerResult:
    """``last`` served again because its source failed: ``problem`` says why."""
    return LayerResult(
        entries=last.entries, diagnostics=(*last.diagnostics, problem), failed=True, top_level=last.top_level
    )


class SkillLayer:
    """One source of a turn's skills: a repository plus what the pipeline needs of it.

    Every layer is a :class:`SkillRepository` — a market, or a ``DirectoryRepository`` over the
    global folder, the workspace's ``skills/`` or a user's area — and this one type adds the
    policy they share:

    - **freshness**: while :attr:`watched` (the pipeline watches :attr:`watch_root`) and not
      marked stale, :meth:`load` returns the last result without asking the repository, so a
      warm turn costs nothing; :meth:`mark_stale` (watchers, ``invalidate()``, ``refresh()``)
      makes the next load ask. An unwatched layer asks every time (the repository answers
      cheaply when unchanged: a generation counter, a change token) unless its repository
      :meth:`~repositories.SkillRepository.answers_from_cache` (git between two checks).
    - **parse once**: each bundle is parsed (and scanned, see ``scan_policy``) once per digest.
    - **last good with a diagnostic**: a repository that fails keeps serving its last good
      skills; the failure becomes one ``market-unavailable`` (markets) or ``layer-unavailable``
      (folder layers) diagnostic, and the next load tries again.
    - **the size cap** (``max_file_size``) on every file read through it.

    ``prefix`` is the repository's folder inside ``filesystem`` (``"skills"`` for the workspace
    and a user's area): entries' ``path`` is the folder's path there. ``filesystem`` is where the
    shell finds the folders in place (``None`` for staged layers, whose files-roots live in the
    staging cache); ``staged`` says the layer is staged (layers 1–2).
    """

    def __init__(
        self,
        repository: SkillRepository,
        *,
        layer: Layer = Layer.MARKET,
        source: str | None = None,
        prefix: str = "",
        filesystem: AbstractFilesystem | None = None,
        scan_policy: MarketScanPolicy | None = None,
        verdicts: VerdictStore | None = None,
        max_file_size: int | None = None,
        scan_pool: ScanPool | None = None,
    ) -> None:
        self.repository = repository
        self.layer = layer
        self.source = source or repository.source
        self.prefix = prefix.strip("/")
        self.filesystem = filesystem
        self.staged = layer in (Layer.GLOBAL, Layer.MARKET)
        # Scanned once per bundle digest, with the parse: the verdict is cached with the entry.
        self.scan_policy = scan_policy
        # Verdicts kept across restarts (used when they are this policy's scanner's).
        self.verdicts = verdicts if verdicts is not None and scan_policy is not None else None
        if self.verdicts is not None and scan_policy is not None and self.verdicts.scanner is not scan_policy.scanner:
            self.verdicts = None
        self.max_file_size = max_file_size
        self.scan_pool = scan_pool  # large scans in worker processes (``None``: in a thread here)
        self._watched = False
        self._stale = True
        self._version: str | None = None
        self._rescan = False  # a bundle's files could not be read for the scan: load again
        self._last_good: LastGood[LayerResult] = LastGood()
        self._parsed: dict[str, _Parsed] = {}
        self.pins: LayerPins | None = None
        """What a lock says about this layer's skills (:mod:`harness.pipeline.lock`), or ``None``."""
        self._locked_files: dict[str, dict[str, bytes] | None] = {}
        # The market scan's findings on files an on-demand market served, by (skill key, path).
        self._fetch_findings: dict[tuple[str, str], tuple[Diagnostic, ...]] = {}

    @property
    def result(self) -> LayerResult:
        """The last good result (empty before the first successful load)."""
        last = self._last_good.value
        return last if last is not None else _NOTHING_YET

    @property
    def version(self) -> str | None:
        """The repository version the last result was read at (a git market's commit), or ``None``."""
        return self._version

    @property
    def answered(self) -> bool:
        """Whether the repository has answered at least once (:attr:`result` holds its skills)."""
        return self._last_good.value is not None

    @property
    def failing(self) -> bool:
        """Whether the latest load failed (the layer serves its last good skills, if any)."""
        return self._last_good.failing

    @property
    def watch_root(self) -> Path | None:
        """The host folder whose changes are the only way this layer changes, or ``None``."""
        return self.repository.watch_root

    @property
    def watched(self) -> bool:
        """Whether a watcher reports this layer's changes (through :meth:`mark_stale`)."""
        return self._watched

    @property
    def fresh(self) -> bool:
        """Whether :meth:`load` would return the last result without asking the repository:
        a watcher reports its changes, or the repository says it would answer from its cache
        (a git market between two checks)."""
        if self._stale or self._rescan or self._version is None:
            return False
        return self._watched or self.repository.answers_from_cache(self._version)

    def watch(self, watched: bool) -> None:
        """Say whether a watcher now reports this layer's changes; either way it reloads once."""
        self._watched = watched
        self._stale = True

    def mark_stale(self) -> None:
        """Make the next :meth:`load` ask the repository again (something may have changed)."""
        self._stale = True

    async def refresh(self) -> None:
        """Drop the repository's cached state and re-read on the next load."""
        self._stale = True
        await self.repository.refresh()

    async def load(self) -> LayerResult:
        """The layer's skills, parsing only bundles with a new digest.

        A failing repository keeps serving its last good skills with a diagnostic. Whatever it
        raises (a custom market is not trusted to raise only ``RepositoryError``) is reported
        the same way, never passed on to the turn.
        """
        if self.fresh:
            return self.result
        self._stale = False
        try:
            snapshot = await self.repository.snapshot()
            if snapshot.version != self._version or self._rescan:
                if self.verdicts is not None:
                    await self.verdicts.load()
                fresh = [bundle for bundle in snapshot.bundles if self._unparsed(bundle)]
                scanned = await self._scan_bundles(fresh)
                await self._read_locked(fresh)
                # Parsing a changed market is CPU work: one worker-thread hop keeps other users'
                # turns moving meanwhile. With nothing new to parse (an empty folder, a changed
                # token alone) it is done inline.
                if fresh:
                    self._last_good.keep(await anyio.to_thread.run_sync(self._parse, snapshot, scanned, len(fresh)))
                else:
                    self._last_good.keep(self._parse(snapshot, scanned))
                self._version = snapshot.version
                if self._fetch_findings:
                    self._forget_fetched({b.key for b in fresh}, {b.key for b in snapshot.bundles})
        except Exception as exc:
            return self.failed(describe_error(exc))
        if snapshot.error is not None:
            return self.failed(describe_error(snapshot.error))
        if self._last_good.answered():
            log.info("%s %r answers again (version %s)", self.layer.value, self.source, snapshot.version)
        return self.result

    def failed(self, reason: str) -> LayerResult:
        """The last good result plus a diagnostic saying why it is stale (e.g. a timeout); the
        next load asks the repository again."""
        self._stale = True
        if self.layer is Layer.MARKET:
            code = "market-unavailable"
            if self._version is None:
                message = f"market {self.source!r} is unavailable and has no skills yet: {reason}"
            else:
                message = f"market {self.source!r} failed to refresh, serving its last good skills: {reason}"
            location = self.source
        else:
            code = "layer-unavailable"
            message = f"cannot read the {self.layer.value} skills, serving the last good ones: {reason}"
            location = self.prefix or self.source
        problem = Diagnostic.error(code=code, message=message, location=location)
        if not self._last_good.failing:
            log.warning("%s", problem.message)  # the diagnostic's message has credentials masked
        served = self._last_good.serve(lambda last: _stale(last, problem))
        return served if served is not None else _stale(_NOTHING_YET, problem)

    async def list_files(self, entry: LayerEntry) -> FileListing:
        """The whole listing of ``entry``'s other files and its content token: ``entry.files`` and
        ``entry.digest`` when the load listed it whole, else the repository's listing, produced
        on first use and cached until the layer is read again. Raises ``RepositoryUnavailable``
        naming the layer when it cannot be listed."""
        if entry.listed:
            return FileListing(files=entry.files, digest=entry.digest)
        try:
            listed = await self.repository.list_files(entry.key)
        except Exception as exc:
            raise RepositoryUnavailable(
                f"{self.layer.value} {self.source!r} cannot list {entry.key}: {describe_error(exc)}"
            ) from exc
        files, refused = self._safe_files(listed.files, entry.key, entry.skill.location)
        for problem in refused:
            log.warning("%s", problem.message)
        return FileListing(files=files, digest=listed.digest)

    async def read_files(self, entry: LayerEntry, paths: Sequence[str]) -> dict[str, bytes]:
        """The files' bytes (relative to the skill folder) in one batched call; a file over
        ``max_file_size`` raises ``OSError(EFBIG)`` unread, and anything else the repository
        raises becomes ``RepositoryUnavailable`` naming the layer. What an on-demand market (an
        MCP server) serves is judged by the market scan before it is returned, since nothing of
        it was scanned on ingest (see :meth:`_judge_fetched`): ``ContentBlocked`` when the
        market's ``market_scan`` level blocks it."""
        for path in paths:
            self._check_size(entry, path)
        try:
            files = await self.repository.read_files(entry.key, list(paths))
        except (RepositoryError, OSError):
            raise
        except Exception as exc:
            raise RepositoryUnavailable(
                f"{self.layer.value} {self.source!r} failed to read {entry.key}: {describe_error(exc)}"
            ) from exc
        if entry.on_demand:
            await self._judge_fetched(entry, files)
        return files

    async def read_files_batch(
        self, requests: Sequence[tuple[LayerEntry | SkillBundle, Sequence[str]]]
    ) -> list[dict[str, bytes] | Exception]:
        """:meth:`read_files` for several entries (or the bundles of this layer's snapshot) in one
        call (see ``SkillRepository.read_files_batch``): one result or error per request, same
        errors."""
        results: list[dict[str, bytes] | Exception] = []
        asks: list[int] = []
        for index, (entry, paths) in enumerate(requests):
            try:
                for path in paths:
                    self._check_size(entry, path)
                asks.append(index)
                results.append(_UNREAD)  # replaced by the answer below
            except OSError as exc:
                results.append(exc)
        try:
            answers = await self.repository.read_files_batch([(requests[i][0].key, requests[i][1]) for i in asks])
        except Exception as exc:  # the whole batch failed: every request reports it
            answers = [exc] * len(asks)
        for index, answer in zip(asks, answers, strict=True):
            if isinstance(answer, Exception) and not isinstance(answer, (RepositoryError, OSError)):
                entry = requests[index][0]
                answer = RepositoryUnavailable(
                    f"{self.layer.value} {self.source!r} failed to read {entry.key}: {describe_error(answer)}"
                )
            results[index] = answer
        return results

    async def read_chunks(self, entry: LayerEntry, path: str) -> AsyncIterator[bytes]:
        """The bytes of one file in pieces, for streaming to disk (same errors as :meth:`read_files`).
        An on-demand market's file is read whole through :meth:`read_files`, so that the market
        scan judges it before any of it is passed on (such a market holds it whole anyway)."""
        if entry.on_demand:
            data = (await self.read_files(entry, [path]))[path]
            for start in range(0, len(data), _CHUNK):
                yield data[start : start + _CHUNK]
            return
        self._check_size(entry, path)
        try:
            async for chunk in self.repository.read_chunks(entry.key, path):
                yield chunk
        except (RepositoryError, OSError):
            raise
        except Exception as exc:
            raise RepositoryUnavailable(
                f"{self.layer.value} {self.source!r} failed to read {entry.key}/{path}: {describe_error(exc)}"
            ) from exc

    def _check_size(self, entry: LayerEntry | SkillBundle, path: str) -> None:
        if self.max_file_size is None:
            return
        size = 0
        for file in entry.files:
            if file.path == path:
                size = file.size
                break
        if size > self.max_file_size:
            raise OSError(
                errno.EFBIG,
                f"{self.source}/{entry.key}/{path} is {size} bytes, over the {self.max_file_size}-byte "
                "limit for market files (max_file_size); it is not staged or read",
            )

    def _unparsed(self, bundle: SkillBundle) -> bool:
        return self._cached(bundle) is None

    def _cached(self, bundle: SkillBundle) -> tuple[LayerEntry | None, tuple[Diagnostic, ...]] | None:
        """What the last parse made of ``bundle``'s content (entry, diagnostics), or ``None``."""
        cached = self._parsed.get(bundle.key)
        if isinstance(cached, LayerEntry):
            return (cached, ()) if cached.digest == bundle.digest and cached.plugin == bundle.sub_source else None
        return (cached[1], cached[2]) if cached is not None and cached[0] == _token(bundle) else None

    def _parse(self, snapshot: Snapshot, scanned: dict[str, _Scanned], fresh: int = 0) -> LayerResult:
        with collections_paused(fresh):  # thousands of new skills, all kept: nothing to collect
            return self._parse_all(snapshot, scanned)

    def _parse_all(self, snapshot: Snapshot, scanned: dict[str, _Scanned]) -> LayerResult:
        entries: list[LayerEntry] = []
        diagnostics = [self._problem(problem, problem in snapshot.failures) for problem in snapshot.problems]
        parsed: dict[str, _Parsed] = {}
        rescan = False
        for bundle in snapshot.bundles:
            cached = self._cached(bundle)
            if cached is not None:
                entry, found = cached
                parsed[bundle.key] = self._parsed[bundle.key]
            else:
                scan = scanned.get(bundle.key)
                entry, found = self._parse_bundle(bundle, scan)
                retry = scan is not None and scan.retry
                rescan = rescan or retry
                # Parsed again on the next load after a retry (no token matches "").
                if entry is not None and not found and not retry:
                    parsed[bundle.key] = entry
                else:
                    parsed[bundle.key] = ("" if retry else _token(bundle), entry, found)
            diagnostics.extend(found)
            if entry is not None:
                entries.append(entry)
        self._parsed = parsed
        self._rescan = rescan
        if self.pins is not None:
            diagnostics.extend(self.pins.missing(b.key for b in snapshot.bundles))
        return LayerResult(entries=tuple(entries), diagnostics=tuple(diagnostics), top_level=snapshot.top_level)

    def _problem(self, problem: str, failure: bool) -> Diagnostic:
        """A repository's problem as a diagnostic: one that cost a skill is an error."""
        if self.layer is Layer.MARKET:
            return Diagnostic.warning(code="market-problem", message=problem, location=self.source)
        watched = self.watch_root
        return Diagnostic(
            severity="error" if failure else "warning",
            code="unreadable-skill" if failure else "layer-problem",
            message=f"{self.source}: {problem}",
            location=str(watched) if watched is not None else (self.prefix or self.source),
        )

    def _parse_bundle(
        self, bundle: SkillBundle, scanned: _Scanned | None
    ) -> tuple[LayerEntry | None, tuple[Diagnostic, ...]]:
        """One bundle as an entry. A custom market is not trusted to keep the repository
        contract: a folder that is not one safe, visible segment skips the skill, and unsafe
        file paths are dropped, so neither staging nor the load tool ever sees them. (A folder
        layer's unsafe folder name is reported by the parse, at the skill's location.)"""
        unsafe_folder = _unsafe_market_folder(bundle.folder) if self.layer is Layer.MARKET else None
        if unsafe_folder:
            return None, (
                Diagnostic.error(
                    code="unsafe-market-folder",
                    message=f"skipped: market folder {bundle.folder!r} {unsafe_folder}",
                    location=self.source,
                ),
            )
        files, found = self._safe_files(bundle.files, bundle.folder, bundle.location)
        skill, diagnostics = load_skill(
            bundle.skill_md,
            folder=bundle.folder,
            location=bundle.location,
            source=sub_source(self.source, bundle.sub_source) if bundle.sub_source else self.source,
            layer=self.layer,
            files=tuple(f.path for f in files),
            skill_md_name=bundle.skill_md_name,
        )
        admitted, found_by_scan = self._admit(bundle, scanned) if skill is not None else (False, ())
        if self.pins is not None and skill is not None and admitted:
            admitted, said = self.pins.judge(bundle, self._locked_files.pop(bundle.key, None))
            found_by_scan = (*found_by_scan, said) if said is not None else found_by_scan
        entry = (
            LayerEntry(
                skill=skill,
                digest=bundle.digest,
                files=tuple(files),
                path=_join(self.prefix, bundle.key),
                key=bundle.key,
                link=bundle.link,
                listed=bundle.listed,
                plugin=bundle.sub_source,
                on_demand=bundle.on_demand,
                origin=bundle.origin,
            )
            if skill is not None and admitted
            else None
        )
        return entry, (*found, *diagnostics, *found_by_scan)

    def _safe_files(
        self, listed: Sequence[BundleFile], folder: str, location: str
    ) -> tuple[tuple[BundleFile, ...], list[Diagnostic]]:
        """The files of a listing whose paths are safe, and a warning for each one refused."""
        if isinstance(listed, tuple) and all(_path_problem(file.path) is None for file in listed):
            return listed, []  # the listing itself: a 10,000-skill market keeps no copies
        files: list[BundleFile] = []
        found: list[Diagnostic] = []
        for file in listed:
            problem = _path_problem(file.path)
            if problem is None:
                files.append(file)
                continue
            found.append(
                Diagnostic.warning(
                    code="unsafe-market-path",
                    message=f"refused {file.path!r} of {self.source}/{folder}: {problem}",
                    location=location,
                )
            )
        return tuple(files), found

    async def _read_locked(self, bundles: Sequence[SkillBundle]) -> None:
        """Read the files of the bundles the lock checks (before they are parsed); a bundle
        that cannot be read is checked as unreadable, so it is not served."""
        pins = self.pins
        if pins is None:
            return
        from harness.pipeline.lock import read_bundle_files

        for bundle in bundles:
            if not pins.wanted(bundle):
                continue
            try:
                self._locked_files.update(await read_bundle_files(self.repository, [bundle]))
            except Exception:
                self._locked_files[bundle.key] = None

    # -- the ingest scan ----------------------------------------------------------------------

    async def _scan_bundles(self, bundles: Sequence[SkillBundle]) -> dict[str, _Scanned]:
        """Scan ``bundles`` whole as :attr:`scan_policy` says (nothing for a trusted source): each
        bundle's main file and its other files up to the policy's ``scan_limit``, read through
        :meth:`read_files_batch` in batches of about ``_SCAN_BATCH_BYTES``, each batch scanned in
        one worker-thread hop. Never raises: a failure is the bundle's ``error``."""
        policy = self.scan_policy
        if policy is None or not bundles:
            return {}
        if policy.trusts(self.source):
            return {}
        from harness.skills.scanner import BINARY_SUFFIXES

        scanned: dict[str, _Scanned] = {}
        batch: list[_ScanItem] = []
        size = 0
        for bundle in bundles:
            if self.layer is Layer.MARKET and _unsafe_market_folder(bundle.folder):
                continue  # skipped by the parse, never read
            try:
                # An on-demand market's files are read only on use: its listed frontmatter is scanned.
                files = () if bundle.on_demand else await self._scanned_files(bundle)
            except Exception as exc:
                scanned[bundle.key] = _Scanned(error=exc, retry=True)
                continue
            limit, largest = policy.scan_limit, self.max_file_size  # a file over largest is neither staged nor read
            readable = tuple(f.path for f in files if f.size <= limit and (largest is None or f.size <= largest))
            too_large = tuple(
                f
                for f in files
                if f.size > limit and (largest is None or f.size <= largest) and _suffix(f.path) not in BINARY_SUFFIXES
            )
            batch.append((bundle, readable, too_large))
            size += len(bundle.skill_md) + sum(
                f.size for f in files if f.size <= limit and (largest is None or f.size <= largest)
            )
            if size >= _SCAN_BATCH_BYTES:
                scanned.update(await self._scan_batch(policy, batch))
                batch, size = [], 0
        if batch:
            scanned.update(await self._scan_batch(policy, batch))
        return scanned

    async def _scanned_files(self, bundle: SkillBundle) -> tuple[BundleFile, ...]:
        """The bundle's other files with safe paths (listed now when the snapshot deferred it)."""
        listed = bundle.files if bundle.listed else (await self.repository.list_files(bundle.key)).files
        return self._safe_files(listed, bundle.folder, bundle.location)[0]

    async def _scan_batch(self, policy: MarketScanPolicy, batch: list[_ScanItem]) -> dict[str, _Scanned]:
        answers = await self.read_files_batch([(bundle, paths) for bundle, paths, _ in batch])
        # A scan holds the GIL: the markets sharing a pool scan one batch at a time, in the order
        # they came, so the first market is scanned (and staged) while the next one waits,
        # instead of every market finishing its scan together at the end.
        turns = self.scan_pool.turns if self.scan_pool is not None else None
        return await anyio.to_thread.run_sync(self._scan_read, policy, batch, answers, limiter=turns)

    def _scan_read(
        self, policy: MarketScanPolicy, batch: list[_ScanItem], answers: list[dict[str, bytes] | Exception]
    ) -> dict[str, _Scanned]:
        """The verdicts of bundles whose files were read (in a worker thread): per file from the
        verdict store when there is one, else by the policy's scanner."""
        scanner = policy.scanner
        scanned: dict[str, _Scanned] = {}
        # The bundles read (their index in ``batch``) and their files, in two lists: a batch of
        # 10,000 skills makes no pair objects for the garbage collector to walk.
        ready: list[int] = []
        contents: list[dict[str, bytes]] = []
        for index, ((bundle, _, _), answer) in enumerate(zip(batch, answers, strict=True)):
            if isinstance(answer, Exception):
                scanned[bundle.key] = _Scanned(error=answer, retry=True)
            else:
                ready.append(index)
                contents.append({bundle.skill_md_name: bundle.skill_md, **answer})
        pool = self.scan_pool
        scan = (lambda pairs: pool.scan(scanner, pairs)) if pool is not None else None
        try:
            with collections_paused(len(contents)):
                if self.verdicts is not None:
                    outcomes = self.verdicts.verdicts(contents, scan)
                else:
                    outcomes = [_combined(scanner, files, scan) for files in contents]
        except Exception as exc:  # a broken custom scanner must not fail the turn
            outcomes = [exc] * len(ready)
        del contents
        alike: dict[int, _Scanned] = {}  # skills with one verdict (most share the clean one) share its record
        for index, outcome in zip(ready, outcomes, strict=True):
            bundle, _, too_large = batch[index]
            if isinstance(outcome, Exception):
                scanned[bundle.key] = _Scanned(error=outcome)
            elif too_large:
                scanned[bundle.key] = _Scanned(verdict=outcome, too_large=too_large)
            else:
                shared = alike.get(id(outcome))
                if shared is None:
                    shared = alike[id(outcome)] = _Scanned(verdict=outcome)
                scanned[bundle.key] = shared
        return scanned

    def _admit(self, bundle: SkillBundle, scanned: _Scanned | None) -> tuple[bool, tuple[Diagnostic, ...]]:
        """Whether the bundle is admitted after its scan, and one diagnostic per finding and per
        file too large to scan. A failed scan is a diagnostic too (blocking sources keep the
        skill out then, as they do when a file could not be judged)."""
        policy = self.scan_policy
        if policy is None:
            return True, ()
        if policy.trusts(self.source):
            return True, ()
        admitted, found = _judged(policy, self.source, bundle.folder, bundle.location, scanned, "skill hidden")
        return admitted, tuple(d for _, d in found)

    # -- content served on demand ---------------------------------------------------------------

    @property
    def fetch_diagnostics(self) -> tuple[Diagnostic, ...]:
        """The market scan's warnings about files an on-demand market served on use (see
        :meth:`read_files`), the latest read of each file: every turn reports them, as it
        reports the ingest scan's findings, until the skill changes."""
        return tuple(d for found in self._fetch_findings.values() for d in found)

    async def _judge_fetched(self, entry: LayerEntry, files: Mapping[str, bytes]) -> None:
        """Scan what an on-demand market served for ``entry`` as the ingest scan judges other
        markets' files ahead of use, under the same policy: a dynamic skill's files on every
        read (the server makes them afresh), a verified skill's once per content (the verdict
        store's, kept across restarts). A source whose trust level blocks refuses a dangerous
        verdict, a file too large to judge and a failed scan: ``ContentBlocked`` naming the
        market, the skill, the file and the rule, the bytes never delivered. Otherwise the
        findings are logged and kept as warnings (:attr:`fetch_diagnostics`)."""
        policy = self.scan_policy
        if policy is None or not files:
            return
        if policy.trusts(self.source):
            return
        from harness.skills.scanner import BINARY_SUFFIXES

        limit = policy.scan_limit
        readable = {path: data for path, data in files.items() if len(data) <= limit}
        too_large = tuple(
            BundleFile(path=path, size=len(data), mode=0o644)
            for path, data in sorted(files.items())
            if len(data) > limit and _suffix(path) not in BINARY_SUFFIXES
        )
        store = None if entry.dynamic else self.verdicts  # content made afresh is not worth keeping
        try:
            verdict = await anyio.to_thread.run_sync(_verdict_of, policy.scanner, store, readable)
            scanned = _Scanned(verdict=verdict, too_large=too_large)
        except Exception as exc:  # a broken custom scanner: judged as a failed scan
            scanned = _Scanned(error=exc)
        admitted, found = _judged(
            policy, self.source, entry.key, entry.skill.location, scanned, "blocked by the market scan, not served"
        )
        if not admitted:
            raise ContentBlocked("; ".join(d.message for _, d in found))
        latest: dict[tuple[str, str], tuple[Diagnostic, ...]] = {(entry.key, path): () for path in ("", *files)}
        for path, diagnostic in found:
            latest[(entry.key, path)] += (diagnostic,)
        for key, diagnostics in latest.items():
            if diagnostics != self._fetch_findings.pop(key, ()):
                for diagnostic in diagnostics:  # said once per finding, not on every read
                    log.warning("%s", diagnostic.message)
            if diagnostics:
                self._fetch_findings[key] = diagnostics

    def _forget_fetched(self, changed: set[str], offered: set[str]) -> None:
        """Drop the fetched files' findings of skills whose content changed or that are gone."""
        stale = [key for key in self._fetch_findings if key[0] in changed or key[0] not in offered]
        for key in stale:
            del self._fetch_findings[key]


def _judged(
    policy: MarketScanPolicy, source: str, skill: str, location: str, scanned: _Scanned | None, refusal: str
) -> tuple[bool, list[tuple[str, Diagnostic]]]:
    """What ``source``'s trust level makes of one skill's scan: whether its content may be
    served, and a diagnostic per finding and per file too large to judge (with the file's path;
    ``""`` for a failed scan). Errors, each ending in ``refusal``, when it may not."""
    blocking = policy.blocks(source)
    where = f"market {source!r}, skill {skill!r}"
    if scanned is None or scanned.verdict is None:
        reason = describe_error(scanned.error) if scanned is not None and scanned.error else "not scanned"
        return not blocking, [
            (
                "",
                Diagnostic(
                    severity="error" if blocking else "warning",
                    code="market-scan-failed",
                    message=f"{where}: the scan failed ({reason})" + (f"; {refusal}" if blocking else ""),
                    location=location,
                ),
            )
        ]
    ingest = policy.check(source, {}, known=scanned.verdict)  # the files were scanned by the caller
    admitted = ingest.admitted and not (blocking and scanned.too_large)
    if not ingest.verdict.findings and not scanned.too_large:
        return admitted, []  # nothing to say (most skills)
    refused = "" if admitted else f"; {refusal}"
    severity: Severity = "warning" if admitted else "error"
    findings = [
        (
            f.path,
            Diagnostic(
                severity=severity,
                code="market-scan-finding" if admitted else "market-scan-blocked",
                message=f"{where}, file {f.path} line {f.line}: rule {f.rule} ({f.category}, {f.severity}): "
                f"{f.message}{refused}",
                location=location,
            ),
        )
        for f in ingest.verdict.findings
    ]
    unjudged = [
        (
            f.path,
            Diagnostic(
                severity=severity,
                code="market-scan-skipped",
                message=f"{where}, file {f.path}: {f.size} bytes, over the {policy.scan_limit}-byte scan limit "
                f"(market_scan.scan_limit), so it was not scanned{refused}",
                location=location,
            ),
        )
        for f in scanned.too_large
    ]
    return admitted, [*findings, *unjudged]


def _verdict_of(scanner: Scanner, store: VerdictStore | None, files: Mapping[str, bytes]) -> ScanVerdict:
    """The scanner's verdict on ``files``: through ``store`` (stored verdicts reused) when given."""
    return store.verdict(files) if store is not None else scanner.scan(files)


def describe_error(exc: BaseException) -> str:
    """An exception as one line for a diagnostic: the message of a repository error, the type and
    message of anything else, and every leaf of an exception group (as task groups raise)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(inner) for inner in exc.exceptions)
    if isinstance(exc, RepositoryError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _token(bundle: SkillBundle) -> str:
    """What a parsed bundle is cached under: a skill moved to another plugin is parsed again."""
    return f"{bundle.digest}\0{bundle.sub_source}"


def _combined(scanner: Scanner, files: dict[str, bytes], scan: ScanMany | None) -> ScanVerdict | Exception:
    """One skill's verdict without a verdict store: its files scanned alone, then combined."""
    from harness.skills.scanner import ScanVerdict

    if scan is None:
        return scanner.scan(files)
    outcomes = scan(list(files.items()))
    failed = next((o for o in outcomes if isinstance(o, Exception)), None)
    return failed or ScanVerdict.combined(o for o in outcomes if isinstance(o, ScanVerdict))


@functools.lru_cache(maxsize=4096)
def _path_problem(path: str) -> str | None:
    """``relative_path_problem`` of a market file's path: the same few paths (``scripts/run.py``,
    ``LICENSE``) recur in every skill of a market, so each is judged once."""
    return relative_path_problem(path)


def _suffix(path: str) -> str:
    return PurePosixPath(path).suffix.lower()


def _unsafe_market_folder(folder: str) -> str | None:
    return unsafe_segment_reason(folder) or ("is hidden" if folder.startswith(".") else None)


def _join(folder: str, path: str) -> str:
    return f"{folder}/{path}" if folder and path else folder or path

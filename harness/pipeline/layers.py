"""The sources a turn's skills come from: folders read through a filesystem, and markets.

A layer turns raw files or bundles into parsed :class:`Skill` values and remembers what it
parsed, so an unchanged SKILL.md is never parsed twice. Deciding *when* to look again
(watchers, generation counters, market versions) is the pipeline's job.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from filesystems import AbstractFilesystem
from filesystems.paths import VCS_FOLDERS
from harness.diagnostics import Diagnostic
from harness.learning.scanner import MarketScanPolicy, TrustLevel
from harness.skills.rules import unsafe_segment_reason
from harness.skills.skill import Layer, Skill, load_skill
from repositories import BundleFile, RepositoryError, RepositoryUnavailable, SkillBundle, SkillRepository
from repositories.directory import discover_host, read_below, read_host_file
from repositories.discovery import FILE, IGNORE_FILES, Child, Discovery, SkillLayout, discover, tree_from_paths

log = logging.getLogger(__name__)

__all__ = [
    "FolderLayer",
    "LayerEntry",
    "LayerResult",
    "MarketLayer",
    "SkillSource",
    "describe_error",
    "unsafe_file_path",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerEntry:
    """A parsed skill with what staging and the load tool need: its files and a content digest."""

    skill: Skill
    digest: str
    files: tuple[BundleFile, ...]
    path: str  # the folder's path inside the layer's filesystem or market
    link: str | None = None  # the real host folder when an operator's layer reached it through a link


@dataclass(frozen=True, kw_only=True, slots=True)
class LayerResult:
    """What one source contributes to a turn."""

    entries: tuple[LayerEntry, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    # The source did not answer this time: ``entries`` are its last good ones (maybe none), so
    # nothing it staged before may be removed for not being offered.
    failed: bool = False
    top_level: tuple[str, ...] = ()  # the names at the top of a folder layer (for a sandbox's merge)


class SkillSource:
    """Common interface of folder layers and markets: read a skill's files on demand."""

    source: str
    layer: Layer
    modes_given = False  # see SkillRepository.modes_given

    async def read_files(self, entry: LayerEntry, paths: Sequence[str]) -> dict[str, bytes]:
        """Bytes of ``paths`` (relative to the skill folder) in one batched call."""
        raise NotImplementedError

    async def read_chunks(self, entry: LayerEntry, path: str) -> AsyncIterator[bytes]:
        """The bytes of one file in pieces (default: one whole read), for streaming to disk."""
        yield (await self.read_files(entry, [path]))[path]


class FolderLayer(SkillSource):
    """Skill folders below ``prefix`` of a filesystem (global dir, workspace, a user's area).

    Skills are found with the discovery rules every layer and market shares (README, "Discovery
    rules"): nested and dot-folders are searched, a folder with a SKILL.md is a skill and
    everything below it is its files; the reserved names (``_drafts``, ``.archive``, …) at the
    top are never read. On a host folder the walk lists the host tree itself, so links,
    unreadable folders and undecodable names are seen and reported (each costs at most its own
    skill); on a store without host files it is one batched ``walk()``. ``follow_links``
    (default: the operator's global and workspace layers) follows links to skill folders (never
    links inside one), deduplicated by real path; a user's area never follows any.
    """

    def __init__(
        self,
        fs: AbstractFilesystem,
        prefix: str,
        *,
        source: str,
        layer: Layer,
        follow_links: bool | None = None,
    ) -> None:
        self.fs = fs
        self.prefix = prefix.strip("/")
        self.source = source
        self.layer = layer
        self.follow_links = layer in (Layer.GLOBAL, Layer.WORKSPACE) if follow_links is None else follow_links
        self._parsed: dict[str, tuple[str, Skill | None, tuple[Diagnostic, ...]]] = {}
        # Skills reached through a followed link: their path in the layer -> their real host folder.
        self._linked: dict[str, str] = {}

    async def load(self) -> LayerResult:
        """Walk the folder, parse new or changed SKILL.md files; every problem is a diagnostic."""
        found = await self._discover()
        root = self.fs.host_path(self.prefix)
        where = str(root) if root is not None else (self.prefix or self.source)
        diagnostics = [
            Diagnostic(
                severity="error" if problem in found.failures else "warning",
                code="unreadable-skill" if problem in found.failures else "layer-problem",
                message=f"{self.source}: {problem}",
                location=where,
            )
            for problem in found.problems
        ]
        linked = {self._path(layout): layout.node for layout in found.skills if layout.link}
        self._linked = linked
        changed = [
            layout for layout in found.skills if self._parsed.get(self._path(layout), ("",))[0] != layout.main.token
        ]
        contents, unreadable = await self._read_mains(changed)
        diagnostics += unreadable
        entries: list[LayerEntry] = []
        parsed: dict[str, tuple[str, Skill | None, tuple[Diagnostic, ...]]] = {}
        for layout in found.skills:
            folder_path = self._path(layout)
            bundle_files = tuple(BundleFile(path=layout.relative(e), size=e.size, mode=e.mode) for e in layout.files)
            cached = self._parsed.get(folder_path)
            if cached is not None and cached[0] == layout.main.token:
                skill, problems = cached[1], cached[2]
            elif folder_path in contents:
                skill, problem_list = load_skill(
                    contents[folder_path],
                    folder=layout.folder,
                    location=_location(root, self.prefix, folder_path),
                    source=self.source,
                    layer=self.layer,
                    files=tuple(f.path for f in bundle_files),
                    skill_md_name=layout.skill_md_name,
                )
                problems = tuple(problem_list)
            else:
                continue
            parsed[folder_path] = (layout.main.token, skill, problems)
            diagnostics.extend(problems)
            if skill is not None:
                entries.append(
                    LayerEntry(
                        skill=_with_files(skill, bundle_files),
                        digest=layout.digest()[:32],
                        files=bundle_files,
                        path=folder_path,
                        link=linked.get(folder_path),
                    )
                )
        self._parsed = parsed
        return LayerResult(entries=tuple(entries), diagnostics=tuple(diagnostics), top_level=found.top_level)

    async def read_files(self, entry: LayerEntry, paths: Sequence[str]) -> dict[str, bytes]:
        linked = self._linked.get(entry.path)
        if linked is not None:
            # The skill folder is the link's real target; nothing below it may cross another link.
            return await anyio.to_thread.run_sync(read_below, linked, tuple(paths))
        data = await self.fs.read_many([_join(entry.path, p) for p in paths])
        return {p: data[_join(entry.path, p)] for p in paths}

    def _path(self, layout: SkillLayout[str]) -> str:
        return _join(self.prefix, layout.root)

    async def _discover(self) -> Discovery[str]:
        host = self.fs.host_path(self.prefix)
        if host is not None:
            area = self.fs.host_path("") or host
            return await anyio.to_thread.run_sync(_discover_host, host, area, self.follow_links)
        stats = await self.fs.walk(self.prefix)
        start = len(self.prefix) + 1 if self.prefix else 0
        ignore = await self.fs.read_many([s.path for s in stats if s.name in IGNORE_FILES])
        list_dir = tree_from_paths(
            (s.path[start:], Child(s.name, FILE, s.path, s.size, s.mode, s.version or f"{s.mtime}")) for s in stats
        )
        return discover(
            "",
            list_dir,
            root_name=self.prefix.rsplit("/", 1)[-1] or self.source,
            read=ignore.__getitem__,
            by_folder=False,
        )

    async def _read_mains(self, layouts: Sequence[SkillLayout[str]]) -> tuple[dict[str, bytes], list[Diagnostic]]:
        """The SKILL.md bytes of ``layouts`` keyed by folder path; one that cannot be read is a
        diagnostic and costs only its own skill."""
        contents: dict[str, bytes] = {}
        problems: list[Diagnostic] = []
        plain: dict[str, str] = {}
        for layout in layouts:
            folder_path = self._path(layout)
            if layout.link:
                try:
                    contents[folder_path] = await anyio.to_thread.run_sync(read_host_file, layout.main.node)
                except OSError as exc:
                    problems.append(self._unreadable(folder_path, layout.skill_md_name, exc))
            else:
                plain[_join(folder_path, layout.skill_md_name)] = folder_path
        try:
            data = await self.fs.read_many(list(plain)) if plain else {}
        except OSError:
            data = {}
            for path, folder_path in plain.items():
                try:
                    data[path] = await self.fs.read_bytes(path)
                except OSError as exc:
                    problems.append(self._unreadable(folder_path, path.rsplit("/", 1)[-1], exc))
        contents.update((plain[path], text) for path, text in data.items())
        return contents, problems

    def _unreadable(self, folder_path: str, name: str, exc: OSError) -> Diagnostic:
        return Diagnostic(
            severity="error",
            code="unreadable-skill",
            message=f"{self.source}: cannot read {folder_path}/{name}, skill skipped: {exc.strerror or exc}",
            location=folder_path,
        )


class MarketLayer(SkillSource):
    """A skill market (layer 2): parses each bundle once per digest."""

    def __init__(
        self,
        repository: SkillRepository,
        *,
        source: str | None = None,
        scan_policy: MarketScanPolicy | None = None,
        max_file_size: int | None = None,
    ) -> None:
        self.repository = repository
        self.source = source or repository.source
        # Scanned once per bundle digest, with the parse: the verdict is cached with the entry.
        self.scan_policy = scan_policy
        self.max_file_size = max_file_size
        self.modes_given = repository.modes_given
        self.layer = Layer.MARKET
        self._version: str | None = None
        self._result = LayerResult(entries=())
        # Set by a caller that watches ``repository.watch_root``: while not dirty, a load
        # returns the last result without asking the market.
        self.watched = False
        self.dirty = True
        self._failing = False
        self._parsed: dict[str, tuple[str, LayerEntry | None, tuple[Diagnostic, ...]]] = {}

    @property
    def result(self) -> LayerResult:
        """The last good result (empty before the first successful load)."""
        return self._result

    async def load(self) -> LayerResult:
        """Ask the market for its snapshot (cheap when unchanged) and parse what changed.

        A failing market keeps serving its last good skills; the failure becomes a diagnostic.
        Whatever the market raises (a custom market is not trusted to raise only
        ``RepositoryError``) is reported the same way, never passed on to the turn.
        """
        if self.watched and not self.dirty and self._version is not None:
            return self._result
        self.dirty = False
        try:
            snapshot = await self.repository.snapshot()
            if snapshot.version != self._version:
                self._result = self._parse(snapshot.bundles, snapshot.problems)
                self._version = snapshot.version
        except Exception as exc:
            if self._version is None:
                return self._with_failure(
                    f"market {self.source!r} is unavailable and has no skills yet: {describe_error(exc)}"
                )
            return self._with_failure(
                f"market {self.source!r} failed to refresh, serving its last good skills: {describe_error(exc)}"
            )
        if snapshot.error is None and self._failing:
            log.info("market %r answers again (version %s)", self.source, snapshot.version)
            self._failing = False
        if snapshot.error is not None:
            return self._with_failure(
                f"market {self.source!r} failed to refresh, serving its last good skills: {snapshot.error}"
            )
        return self._result

    def failed(self, reason: str) -> LayerResult:
        """The last good result plus a diagnostic saying why it is stale (e.g. a timeout)."""
        return self._with_failure(reason)

    async def read_files(self, entry: LayerEntry, paths: Sequence[str]) -> dict[str, bytes]:
        """The files' bytes; a file over ``max_file_size`` raises ``OSError(EFBIG)`` unread, and
        anything else the market raises becomes ``RepositoryUnavailable`` naming the market."""
        for path in paths:
            self._check_size(entry, path)
        try:
            return await self.repository.read_files(entry.path, list(paths))
        except (RepositoryError, OSError):
            raise
        except Exception as exc:
            raise RepositoryUnavailable(
                f"market {self.source!r} failed to read {entry.path}: {describe_error(exc)}"
            ) from exc

    async def read_chunks(self, entry: LayerEntry, path: str) -> AsyncIterator[bytes]:
        self._check_size(entry, path)
        try:
            async for chunk in self.repository.read_chunks(entry.path, path):
                yield chunk
        except (RepositoryError, OSError):
            raise
        except Exception as exc:
            raise RepositoryUnavailable(
                f"market {self.source!r} failed to read {entry.path}/{path}: {describe_error(exc)}"
            ) from exc

    def _check_size(self, entry: LayerEntry, path: str) -> None:
        if self.max_file_size is None:
            return
        size = next((f.size for f in entry.files if f.path == path), 0)
        if size > self.max_file_size:
            raise OSError(
                errno.EFBIG,
                f"{self.source}/{entry.path}/{path} is {size} bytes, over the {self.max_file_size}-byte "
                "limit for market files (max_file_size); it is not staged or read",
            )

    def _with_failure(self, message: str) -> LayerResult:
        problem = Diagnostic(severity="error", code="market-unavailable", message=message, location=self.source)
        if not self._failing:
            log.warning("%s", problem.message)  # the diagnostic's message has credentials masked
            self._failing = True
        return LayerResult(entries=self._result.entries, diagnostics=(*self._result.diagnostics, problem), failed=True)

    def _parse(self, bundles: Sequence[SkillBundle], problems: Sequence[str]) -> LayerResult:
        entries: list[LayerEntry] = []
        diagnostics = [
            Diagnostic(severity="warning", code="market-problem", message=problem, location=self.source)
            for problem in problems
        ]
        parsed: dict[str, tuple[str, LayerEntry | None, tuple[Diagnostic, ...]]] = {}
        for bundle in bundles:
            cached = self._parsed.get(bundle.folder)
            if cached is not None and cached[0] == bundle.digest:
                entry, found = cached[1], cached[2]
            else:
                entry, found = self._parse_bundle(bundle)
            parsed[bundle.folder] = (bundle.digest, entry, found)
            diagnostics.extend(found)
            if entry is not None:
                entries.append(entry)
        self._parsed = parsed
        return LayerResult(entries=tuple(entries), diagnostics=tuple(diagnostics))

    def _parse_bundle(self, bundle: SkillBundle) -> tuple[LayerEntry | None, tuple[Diagnostic, ...]]:
        """One bundle as an entry. A custom market is not trusted to keep the repository
        contract: a folder that is not one safe segment skips the skill, and unsafe file paths
        are dropped, so neither staging nor the load tool ever sees them."""
        unsafe_folder = unsafe_segment_reason(bundle.folder) or ("is hidden" if bundle.folder.startswith(".") else None)
        if unsafe_folder:
            return None, (
                Diagnostic(
                    severity="error",
                    code="unsafe-market-folder",
                    message=f"skipped: market folder {bundle.folder!r} {unsafe_folder}",
                    location=self.source,
                ),
            )
        files: list[BundleFile] = []
        found: list[Diagnostic] = []
        for file in bundle.files:
            problem = unsafe_file_path(file.path)
            if problem is None:
                files.append(file)
                continue
            found.append(
                Diagnostic(
                    severity="warning",
                    code="unsafe-market-path",
                    message=f"refused {file.path!r} of {self.source}/{bundle.folder}: {problem}",
                    location=bundle.location,
                )
            )
        skill, diagnostics = load_skill(
            bundle.skill_md,
            folder=bundle.folder,
            location=bundle.location,
            source=self.source,
            layer=Layer.MARKET,
            files=tuple(f.path for f in files),
            skill_md_name=bundle.skill_md_name,
        )
        admitted, scanned = self._scan(bundle) if skill is not None else (False, ())
        entry = (
            LayerEntry(skill=skill, digest=bundle.digest, files=tuple(files), path=bundle.folder)
            if skill is not None and admitted
            else None
        )
        return entry, (*found, *diagnostics, *scanned)

    def _scan(self, bundle: SkillBundle) -> tuple[bool, tuple[Diagnostic, ...]]:
        """Scan the bundle's main file as :attr:`scan_policy` says: admitted or not, and one
        diagnostic per finding. A scanner failure is a diagnostic too (blocking sources keep
        the skill out then)."""
        policy = self.scan_policy
        if policy is None:
            return True, ()
        where = f"market {self.source!r}, skill {bundle.folder!r}"
        try:
            ingest = policy.check(self.source, {bundle.skill_md_name: bundle.skill_md})
        except Exception as exc:  # a broken custom rule or scanner must not fail the turn
            blocking = policy.trust_of(self.source) is TrustLevel.ENFORCE
            return not blocking, (
                Diagnostic(
                    severity="error" if blocking else "warning",
                    code="market-scan-failed",
                    message=f"{where}: the scan failed ({type(exc).__name__}: {exc})"
                    + ("; skill hidden" if blocking else ""),
                    location=bundle.location,
                ),
            )
        blocked = not ingest.admitted
        return ingest.admitted, tuple(
            Diagnostic(
                severity="error" if blocked else "warning",
                code="market-scan-blocked" if blocked else "market-scan-finding",
                message=f"{where}, file {f.path} line {f.line}: rule {f.rule} ({f.category}, {f.severity}): "
                f"{f.message}" + ("; skill hidden" if blocked else ""),
                location=bundle.location,
            )
            for f in ingest.verdict.findings
        )


def describe_error(exc: BaseException) -> str:
    """An exception as one line for a diagnostic: the message of a repository error, the type and
    message of anything else, and every leaf of an exception group (as task groups raise)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(inner) for inner in exc.exceptions)
    if isinstance(exc, RepositoryError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def unsafe_file_path(path: str) -> str | None:
    """Why ``path`` is not a clean relative path inside a skill folder (``None`` when it is):
    absolute, ``..``/empty/``.`` segments, VCS metadata, backslashes, NUL or control characters."""
    if not path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "is empty or contains NUL or control characters"
    if path.startswith("/") or "\\" in path:
        return "is absolute or contains a backslash"
    parts = path.split("/")
    if any(part in {"..", "", "."} for part in parts):
        return "escapes its folder or is not normalised"
    if any(part in VCS_FOLDERS for part in parts):
        return "is version-control metadata"
    return None


def _join(folder: str, path: str) -> str:
    return f"{folder}/{path}" if folder and path else folder or path


def _discover_host(host: Path, area: Path, follow: bool) -> Discovery[str]:
    """Discover below ``host``; when links are not followed, a layer folder that is itself a
    link (or lies below one inside ``area``) is refused: its real path must be where it stands."""
    if not host.is_dir():
        return Discovery(skills=[], problems=[])
    if not follow and os.path.realpath(host) != os.path.normpath(
        os.path.join(os.path.realpath(area), os.path.relpath(host, area))
    ):
        return Discovery(
            skills=[], problems=[f"symlink skipped: {host.name} (this folder is a link; links are not followed here)"]
        )
    return discover_host(host, follow=follow, skip_prefix=".tmp-", by_folder=False)


def _location(root: Path | None, prefix: str, folder_path: str) -> str:
    """The host folder of a skill when the layer is on this host, else its path in the layer."""
    if root is None:
        return folder_path
    relative = folder_path[len(prefix) + 1 :] if prefix else folder_path
    return f"{root}/{relative}"


def _with_files(skill: Skill, files: tuple[BundleFile, ...]) -> Skill:
    paths = tuple(f.path for f in files)
    if skill.files == paths:
        return skill
    return dataclasses.replace(skill, files=paths)

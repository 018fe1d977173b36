"""The skill repository contract and the values it delivers."""

from __future__ import annotations

import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import anyio

from filesystems import AsyncResource, has_dot_segment
from repositories.discovery import SKILL_MD_NAMES, check_folder, normalise_file_path
from repositories.errors import (
    BundleNotFound,
    InvalidBundle,
    RepositoryClosed,
    RepositoryError,
    RepositoryReadOnly,
    RepositoryUnavailable,
)
from repositories.last_good import LastGood
from repositories.sources import check_source

if TYPE_CHECKING:
    from filesystems import KeyValueStore, ProgressCallback

__all__ = [
    "BundleFile",
    "FileContents",
    "FileListing",
    "SkillBundle",
    "SkillBundleContents",
    "SkillRepository",
    "Snapshot",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class BundleFile:
    """One file of a skill folder other than its SKILL.md, listed but not read.

    ``path`` is a relative POSIX path inside the skill folder (never starting with ``.`` in any
    segment); ``size`` is in bytes; ``mode`` holds the POSIX permission bits (e.g. ``0o755``).
    """

    path: str
    size: int
    mode: int


@dataclass(frozen=True, kw_only=True, slots=True)
class FileListing:
    """The whole listing of a bundle (``SkillRepository.list_files``): its other files, sorted by
    path, and a token that changes whenever any file of the bundle changes (the bundle's
    ``digest`` when the snapshot listed it whole)."""

    files: tuple[BundleFile, ...]
    digest: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillBundle:
    """A raw skill as a repository offers it; the harness parses ``skill_md`` itself.

    - ``folder``: the skill folder's name (its last path segment), unique in a snapshot.
    - ``skill_md`` / ``skill_md_name``: the main file's bytes, read eagerly, and its name
      (``"SKILL.md"``, or ``"skill.md"`` when only the lowercase one exists).
    - ``files``: every other regular file, sorted by path; dot-files and symlinks are never
      listed. Read them with ``SkillRepository.read_files(folder, paths)``.
    - ``listed``: ``False`` when the market deferred part of the listing
      (``DirectoryRepository(lazy_files=True)``): ``files`` then holds only what it listed at
      load, and ``SkillRepository.list_files(key)`` gives the whole listing.
    - ``location``: human-readable origin (a host path, ``git-url@commit:path``,
      ``mysql://host/db/table#folder``, ``pkg:package/folder``).
    - ``digest``: a content token that changes whenever any file of the bundle changes, so callers
      can skip re-parsing a bundle whose digest they have seen. One that starts with ``dynamic:``
      says the market has no digest of the content to give (an MCP server's dynamic skill): its
      files are read afresh on each use and nothing may be bound to them.
    - ``path``: set only by a repository that keeps nested folders of one name apart
      (``DirectoryRepository(nested=True)``): the folder's relative path, which then identifies
      it in ``read_files`` instead of ``folder``.
    - ``link``: the real host folder when the repository reached the folder through a link it
      was told to follow (``DirectoryRepository(follow_links=True)``), else ``None``.
    - ``sub_source``: set only by a market that gathers several origins (a plugin marketplace:
      the plugin's name). The skill's source slug is then ``<market slug>.<sub_source>``
      (:func:`~repositories.sources.sub_source`), so its skill id says where it came from;
      staging, scanning and trust still go by the market's slug.
    - ``on_demand``: set by a market that serves a skill's files only on use (an MCP server):
      ``skill_md`` is then a stand-in made of the listed frontmatter alone, the real main file
      is read (and verified by the market) with ``read_files(key, [skill_md_name])`` when the
      skill is loaded or run, and the harness stages the skill only then, under
      ``<source slug>.<sub_source>/<folder>`` so same-named skills at different paths stay apart.
      Unless the bundle is dynamic, its ``digest`` then covers every file (the real main file
      included) and the market refuses any file that does not match it when it is read, so a
      lock names the skill by its listing (``digest`` and stand-in) without reading a file.
    - ``origin``: where the skill lives at its origin, for markets that address skills by URI
      (an MCP server's ``skill://…/SKILL.md``); shown with the skill wherever it is listed or loaded.
    """

    folder: str
    skill_md: bytes
    skill_md_name: str
    files: tuple[BundleFile, ...]
    location: str
    digest: str
    path: str = ""
    link: str | None = None
    sub_source: str = ""
    listed: bool = True
    on_demand: bool = False
    origin: str = ""

    @property
    def key(self) -> str:
        """What names this bundle in ``read_files``: its ``path`` when set, else its ``folder``."""
        return self.path or self.folder

    @property
    def dynamic(self) -> bool:
        """Whether the market has no digest of the content to give (see ``digest``)."""
        return self.digest.startswith("dynamic:")


@dataclass(frozen=True, kw_only=True, slots=True)
class FileContents:
    """A file to save: relative POSIX ``path`` inside the skill folder, its bytes and mode bits."""

    path: str
    data: bytes
    mode: int = 0o644

    def __post_init__(self) -> None:
        if not 0 <= self.mode <= 0o7777:
            raise InvalidBundle(f"invalid mode {self.mode:o} for {self.path!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillBundleContents:
    """A whole skill folder with every file's bytes: what ``save()`` takes.

    ``files`` are the files other than the main file; their paths must be safe relative paths
    without dot segments, unique, and must not name the main file. Validated on construction
    (``InvalidBundle``).
    """

    folder: str
    skill_md: bytes
    skill_md_name: str = "SKILL.md"
    files: tuple[FileContents, ...] = ()

    def read(self, paths: Sequence[str], *, where: str) -> dict[str, bytes]:
        """The bytes of each of ``paths`` (the main file by its name, the others by theirs);
        :class:`BundleNotFound` naming the first that is not there (``where``: the skill's place)."""
        data = {item.path: item.data for item in self.files}
        data[self.skill_md_name] = self.skill_md
        missing = [path for path in paths if path not in data]
        if missing:
            raise BundleNotFound(f"{where}: {missing[0]} does not exist")
        return {path: data[path] for path in paths}

    def __post_init__(self) -> None:
        check_folder(self.folder)
        if self.skill_md_name not in SKILL_MD_NAMES:
            raise InvalidBundle(f"skill_md_name must be one of {SKILL_MD_NAMES}, not {self.skill_md_name!r}")
        seen: set[str] = set()
        for item in self.files:
            try:
                clean = normalise_file_path(item.path)
            except RepositoryError as exc:
                raise InvalidBundle(f"skill {self.folder!r}: {exc}") from exc
            if clean != item.path or clean in seen or clean == self.skill_md_name:
                raise InvalidBundle(
                    f"skill {self.folder!r}: file path {item.path!r} is not normalised, "
                    "repeated, or names the main file"
                )
            seen.add(clean)


@dataclass(frozen=True, kw_only=True, slots=True)
class Snapshot:
    """Everything a repository offers at one version.

    ``bundles`` are sorted by folder. ``problems`` lists what was skipped and why (e.g.
    ``"symlink skipped: x/scripts/link"``). ``error`` is set when the latest refresh failed and
    this is the last good snapshot, still being served. ``failures`` are the problems that cost a
    skill or a folder (unreadable), ``top_level`` the names at the top of a folder market.
    """

    version: str
    bundles: tuple[SkillBundle, ...]
    problems: tuple[str, ...] = ()
    error: RepositoryError | None = None
    failures: frozenset[str] = frozenset()
    top_level: tuple[str, ...] = ()

    def bundle(self, folder: str) -> SkillBundle | None:
        """The bundle of ``folder``, or ``None``."""
        for bundle in self.bundles:
            if bundle.folder == folder:
                return bundle
        return None


class SkillRepository(AsyncResource, ABC):
    """A skill market: delivers raw skill bundles plus a cheap change token.

    The contract a custom market implements (subclass and fill in the ``_``-prefixed primitives;
    the public methods add the shared policy):

    - ``source``: the slug skill ids carry (lowercase ``[a-z0-9._-]``, ≤ 64 chars), derived by
      the backend from what it is and overridable with ``source=``.
    - ``version()``: a cheap change token — equal tokens mean equal content. MySQL: one query of
      the generation counter; git: the served commit, after an ``ls-remote`` when
      ``check_interval`` elapsed; directory: a stat walk of the tree.
    - ``snapshot()``: the bundles at the current version. Re-reads only when the version moved
      (or after ``refresh()``); when reading fails it returns the last good snapshot with
      ``error`` set, and raises ``RepositoryUnavailable`` only if there never was a good one.
    - ``read_files(folder, paths)`` / ``read_file(folder, path)``: bytes on demand, in one thread
      hop per call. Paths are relative POSIX paths inside the folder (``SKILL.md`` included);
      unsafe paths raise ``UnsafePath``, missing ones ``BundleNotFound``.
    - ``list_files(folder)``: the whole listing of a bundle, produced on first use when the
      snapshot deferred it (``SkillBundle.listed`` is ``False``), else the bundle's ``files``.
    - ``read_chunks(folder, path)``: one file as an async iterator of byte pieces, so a large
      file never has to be held whole (directory and git markets stream from disk / ``git
      cat-file``; other backends fall back to one read).
    - ``refresh()``: forget cached state and re-read now (errors land in ``Snapshot.error``).
    - ``writable`` / ``save(bundle)`` / ``delete(folder)``: the optional write side. ``save``
      replaces the whole folder; both raise ``RepositoryReadOnly`` when not writable and
      ``BundleNotFound`` when deleting a folder that does not exist.
    - ``progress``: when set, hears about the market's long work as
      :class:`~filesystems.Progress` reports (a git market's clone or fetch: ``task="cloning"``
      or ``"fetching"``). ``SkillPipeline(progress=...)`` sets it on its markets; backends
      without long work ignore it, and none pays anything while it is ``None``.
    - Async context manager; ``aclose()`` is idempotent, and any use after it raises
      ``RepositoryClosed``.

    Invariants every backend keeps: dot-files/folders (``.env``, ``.git``) and symlinks are never
    delivered (symlinks are reported in ``Snapshot.problems``, never followed); backend errors
    are translated into ``repositories.errors``; blocking I/O runs in a worker thread, one hop
    per tree rather than per file.
    """

    source: str
    writable: bool
    #: ``True`` when :meth:`read_files_batch` reads many folders in one step (one worker-thread
    #: hop), so staging should hand it many skills at once rather than one at a time.
    batch_reads: bool = False
    #: Hears about long work of this market (see the class docstring); ``None``: nobody listens.
    progress: ProgressCallback | None = None
    #: ``True`` when acting on this market's skills (running their scripts) needs the user's
    #: activation approval, bound to each skill's content digest and asked again when it changes
    #: (an MCP market's default; set it on any other market to switch the same approval on).
    #: Markets listed in the agent's ``trusted_markets`` are exempt.
    activation_approval: bool = False

    def __init__(self, *, source: str, writable: bool = False) -> None:
        super().__init__()
        self.source = check_source(source)
        self.writable = writable
        self._last_good: LastGood[Snapshot] = LastGood()
        self._stale = False
        # Made when a load needs it and let go once nobody holds or waits for it: a process
        # serving many users keeps a folder market per user folder, and a lock is 0.8 KiB.
        self._lock: anyio.Lock | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} source={self.source!r}>"

    async def __aenter__(self) -> Self:
        self._check_open()
        return await super().__aenter__()

    @property
    def watch_root(self) -> Path | None:
        """A host folder whose file changes are the only way this market changes, or ``None``.

        A caller that watches it (inotify) may skip :meth:`snapshot` until something below it
        changes; the directory market returns its folder, markets over a network ``None``.
        """
        return None

    @property
    def change_hints(self) -> tuple[Path, ...]:
        """Host folders whose file changes suggest this market changed (a local git remote's
        refs, a shared clone's ref): a caller that watches them calls :meth:`hint_changed`, so
        the next :meth:`version` checks at once. None by default."""
        return ()

    def hint_changed(self) -> None:
        """Something below :attr:`change_hints` changed: check at the next call, whatever the
        market's check interval."""
        self._invalidate()

    def share_checks(self, store: KeyValueStore) -> None:
        """Share this market's change checks with every process that opens ``store`` (replicas
        over one MySQL store), so they ask a remote about once per interval between them.
        Markets whose check is a round trip honour it (git); the default ignores it."""

    def default_check_interval(self, seconds: float) -> None:
        """Ask for changes at most every ``seconds`` unless this market was given an interval of
        its own. Markets whose check costs a round trip (git's ``ls-remote``) honour it; the
        default ignores it (a folder is watched, a MySQL check is one cheap query)."""

    def answers_from_cache(self, version: str) -> bool:
        """Whether :meth:`snapshot` would now return the snapshot at ``version`` it already
        holds without asking the backend: a caller holding that snapshot may skip the call (and
        the await). Only markets whose check has an interval can say so (git between two
        checks); the default, ``False``, always asks."""
        return False

    async def version(self) -> str:
        """The current change token; raises ``RepositoryUnavailable`` when it cannot be read."""
        self._check_open()
        return await self._version()

    async def snapshot(self) -> Snapshot:
        """The bundles at the current version (see the class docstring for the failure policy)."""
        self._check_open()
        current = self._last_good.value
        if current is not None and not self._stale:
            # The common case, nothing changed: concurrent turns ask for the version side by side
            # instead of queueing on the lock; a failure falls through to the locked path.
            with contextlib.suppress(RepositoryError):
                if await self._version() == current.version:
                    return current
        lock = self._lock
        if lock is None:
            lock = self._lock = anyio.Lock()
        try:
            async with lock:
                try:
                    version = await self._version()
                    current = self._last_good.value
                    if current is None or self._stale or version != current.version:
                        current = self._last_good.keep(await self._load(version))
                        self._stale = False
                    self._last_good.answered()
                    return current
                except RepositoryError as exc:
                    return await self._serve_last_good(exc)
        finally:
            # Released with no await since: a waiter it was handed to holds it (``locked``).
            if self._lock is lock and not lock.locked() and not lock.statistics().tasks_waiting:
                self._lock = None

    async def _serve_last_good(self, exc: RepositoryError) -> Snapshot:
        """The last good snapshot with ``error`` set; before the first, the one at the
        backend's fallback version (if it has one and it reads)."""
        if self._last_good.value is None:
            fallback = await self._fallback_version()
            if fallback is not None:
                with contextlib.suppress(RepositoryError):
                    self._last_good.keep(await self._load(fallback))
        served = self._last_good.serve(lambda snapshot: dataclasses.replace(snapshot, error=exc))
        if served is not None:
            return served
        if isinstance(exc, RepositoryUnavailable):
            raise exc
        raise RepositoryUnavailable(f"{self.source}: no good snapshot yet: {exc}") from exc

    async def _served_snapshot(self) -> Snapshot:
        """The snapshot last served, or a new one when there is none yet."""
        served = self._last_good.value
        return served if served is not None else await self.snapshot()

    async def refresh(self) -> None:
        """Drop cached state and re-read now; a failure is reported by the returned snapshots."""
        self._check_open()
        self._stale = True
        self._invalidate()
        try:
            await self.snapshot()
        except RepositoryUnavailable:
            pass

    async def read_file(self, folder: str, path: str) -> bytes:
        """The bytes of one file of a skill folder."""
        return (await self.read_files(folder, [path]))[path]

    async def read_files(self, folder: str, paths: Sequence[str]) -> dict[str, bytes]:
        """The bytes of several files of one skill folder, keyed by the paths as given."""
        self._check_open()
        _check_key(folder)
        clean = {path: normalise_file_path(path) for path in paths}
        if not clean:
            return {}
        data = await self._read_files(folder, tuple(sorted(set(clean.values()))))
        return {path: data[name] for path, name in clean.items()}

    async def list_files(self, folder: str) -> FileListing:
        """Every file of the bundle ``folder`` (its ``key``) other than its main file, with a
        content token. Answers from the snapshot when it listed the bundle whole; otherwise the
        backend lists it now (cached until the market is read again). ``BundleNotFound`` for an
        unknown bundle; ``RepositoryUnavailable`` when part of the folder cannot be read."""
        self._check_open()
        _check_key(folder)
        listed = await self._list_files(folder)
        if listed is not None:
            return listed
        snapshot = await self._served_snapshot()
        for bundle in snapshot.bundles:
            if bundle.key == folder and bundle.listed:
                return FileListing(files=bundle.files, digest=bundle.digest)
        raise BundleNotFound(f"{self.source}: no skill folder {folder!r} (any more)")

    async def read_files_batch(
        self, requests: Sequence[tuple[str, Sequence[str]]]
    ) -> list[dict[str, bytes] | Exception]:
        """:meth:`read_files` for several folders: one result per ``(folder, paths)`` request, in
        order, each the bytes keyed by the paths as given or the error that request met (one bad
        request never fails the others)."""
        self._check_open()
        results: list[dict[str, bytes] | Exception] = []
        asks: list[tuple[int, str, dict[str, str]]] = []
        for index, (folder, paths) in enumerate(requests):
            try:
                _check_key(folder)
                asks.append((index, folder, {path: normalise_file_path(path) for path in paths}))
                results.append({})
            except RepositoryError as exc:
                results.append(exc)
        answers = await self._read_files_batch(
            [(folder, tuple(sorted(set(clean.values())))) for _, folder, clean in asks if clean]
        )
        answered = iter(answers)
        for index, _, clean in asks:
            if not clean:
                continue
            answer = next(answered)
            results[index] = answer if isinstance(answer, Exception) else {p: answer[n] for p, n in clean.items()}
        return results

    async def _read_files_batch(
        self, requests: list[tuple[str, tuple[str, ...]]]
    ) -> list[dict[str, bytes] | Exception]:
        """Backends that can read many folders in one step override this; the default reads
        them one after another."""
        answers: list[dict[str, bytes] | Exception] = []
        for folder, paths in requests:
            try:
                answers.append(await self._read_files(folder, paths))
            except Exception as exc:
                answers.append(exc)
        return answers

    async def read_chunks(self, folder: str, path: str, *, chunk_size: int = 1 << 20) -> AsyncIterator[bytes]:
        """The bytes of one file in pieces of at most ``chunk_size`` bytes, for files too large
        to hold in memory (staging streams them to disk). Same paths and errors as
        :meth:`read_files`; errors may also surface while iterating. Backends that can stream
        override ``_read_chunks``; the default reads the file whole and slices it."""
        self._check_open()
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be > 0, not {chunk_size}")
        _check_key(folder)
        async for chunk in self._read_chunks(folder, normalise_file_path(path), chunk_size):
            yield chunk

    async def save(self, bundle: SkillBundleContents) -> None:
        """Store ``bundle``, replacing the folder of that name whole."""
        self._check_writable("save")
        await self._save(bundle)
        self._stale = True

    async def delete(self, folder: str) -> None:
        """Remove the skill folder ``folder``."""
        self._check_writable("delete")
        try:
            check_folder(folder)
        except InvalidBundle as exc:
            raise BundleNotFound(str(exc)) from exc
        await self._delete(folder)
        self._stale = True

    def _check_open(self) -> None:
        if self._closed:
            raise RepositoryClosed(f"repository {self.source!r} is closed")

    def _check_writable(self, action: str) -> None:
        self._check_open()
        if not self.writable:
            raise RepositoryReadOnly(
                f"cannot {action} in repository {self.source!r}: it is read-only "
                "(open it with writable=True if the backend supports writing)"
            )

    # Backend primitives.

    @abstractmethod
    async def _version(self) -> str:
        """Return the current change token; raise a ``RepositoryError`` on failure."""

    @abstractmethod
    async def _load(self, version: str) -> Snapshot:
        """Read every bundle; ``version`` is the token just returned by ``_version()``."""

    @abstractmethod
    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        """Read normalised ``paths`` of ``folder`` in one hop; missing ones raise ``BundleNotFound``."""

    async def _list_files(self, folder: str) -> FileListing | None:
        """The whole listing of a bundle whose snapshot listing was deferred, or ``None`` to use
        the snapshot's (the default: every backend lists bundles whole unless it says otherwise)."""
        return None

    async def _read_chunks(self, folder: str, path: str, chunk_size: int) -> AsyncIterator[bytes]:
        """Yield the normalised ``path`` of ``folder`` piece by piece (default: one whole read)."""
        data = (await self._read_files(folder, (path,)))[path]
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    async def _save(self, bundle: SkillBundleContents) -> None:
        raise RepositoryReadOnly(f"repository {self.source!r} does not support writing")

    async def _delete(self, folder: str) -> None:
        raise RepositoryReadOnly(f"repository {self.source!r} does not support writing")

    async def _fallback_version(self) -> str | None:
        """A version readable without the backend's remote side (git: the cached clone), if any."""
        return None

    def _invalidate(self) -> None:
        """Forget backend caches so the next ``_version()``/``_load()`` reads afresh."""


def _check_key(key: str) -> None:
    """A bundle key is a folder name or, for nested folders, a relative path ending in one."""
    *parents, folder = key.split("/")
    try:
        check_folder(folder)
        if parents and (has_dot_segment("/".join(parents)) or "\\" in key):
            raise InvalidBundle(f"invalid skill folder path {key!r}: it is not a clean relative path")
    except InvalidBundle as exc:
        raise BundleNotFound(str(exc)) from exc

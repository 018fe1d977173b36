"""Stage market and global skill files into ``<workspace>/.skills-cache/<source>/<folder>/``.

Shell commands can only run scripts that exist on disk, so every file of every layer 1–2
skill is written there — the union of what the configured sources offer, independent of users,
overrides and visibility filters, so one user's turn never removes what another's serves.

- Unchanged files (same SHA-256 and mode) are not rewritten; a manifest
  (``.skills-cache/.manifest.json``) lets a warm turn skip reading and hashing entirely. The
  manifest is trusted until a *verify* pass (periodic, or on demand) re-hashes what is on disk
  and repairs anything changed or deleted behind the stager's back. A verify reads the sources
  a chunk of skills at a time (each chunk written and let go before the next is read), keeps a
  file's record when it still holds, and a pass parses the manifest only when another process
  changed it: a long-running process's memory does not climb with each verify.
- Writes are atomic (temp file + ``os.replace``) and the manifest is written last, so a process
  killed mid-stage leaves every file old or new, never torn, and a manifest that claims nothing
  that is not in place; the next stage finishes the work. Nothing is fsynced (the cache can
  always be rebuilt from its sources): instead the manifest records the machine's boot
  (``.manifest.boot``), and the first stage after a reboot — when a power loss may have kept
  renames but lost data — verifies every file before trusting the manifest again.
- Skills are written side by side (a few threads under the one lock): creating and renaming
  files waits on the filesystem's journal, not the CPU. Each skill's files are read in one
  call; a source that reads in batches (a folder on the host) is read 64 skills per
  worker-thread hop.
- A restart trusts the manifest: when it lists exactly the offered skills at their digests (and
  the machine has not rebooted since), a new process writes its lease and serves, reading no
  staged file; only the verify pass re-hashes.
- A staged folder is removed only when a source that answered no longer offers it: a source
  that failed, timed out or never answered keeps what it staged (``keep_sources``). Processes
  that share a workspace with different configurations each hold a *lease*
  (``.skills-cache/.leases/<host>-<pid>-<token>.json``, see :mod:`harness.pipeline.leases`) naming
  what they serve, what they keep for a source that did not answer, and the folders a command of
  theirs runs in (:meth:`Stager.using`); nothing leased by a live process is removed. All changes
  happen under an exclusive file lock. A folder is removed from the manifest first, then renamed
  into ``.skills-cache/.trash`` and deleted there: a pass killed halfway leaves a manifest that
  names only whole folders, and trash the next pass empties.
- Nothing outside ``.skills-cache`` is touched; unsafe market paths are refused per file.
- Each file is capped (``max_file_size``, checked against the listed size before reading);
  large files stream to ``.skills-cache/.incoming`` while hashed, never held whole in memory.
- One mode rule for every source (:func:`staged_mode`): a script (a ``#!`` first line or a
  script suffix) or a file the source marked executable gets ``+x`` where ``r`` is set, whatever
  kind of market it came from; never setuid/setgid/sticky or group/world writable. Staged
  copies are read-only (``0444`` / ``0555``) and so are their folders (``0555``): the stager
  opens a folder for writing only during its own pass and seals it again.
- A staged folder is checked before a command of its skill runs (:meth:`Stager.check`): one
  ``lstat`` walk of that folder against the manifest's records of what was written (size,
  times, inode, mode); only files whose record differs are hashed, changed or missing ones are
  restored from the source, and entries that are not the skill's (``__pycache__``, outputs,
  links) are removed without following links. A root process's shell ignores permission bits,
  so this restore, not the modes, is what gives the next user the market's bytes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from filesystems import AsyncResource, has_dot_segment, relative_path_problem
from harness.diagnostics import Diagnostic
from harness.pipeline.layers import DEFAULT_MAX_FILE_SIZE, LayerEntry, SkillLayer, describe_error
from harness.pipeline.leases import DEFAULT_LEASE_GRACE, Lease
from harness.pipeline.memory import release_free_memory

if TYPE_CHECKING:
    from filesystems import ProgressCallback, ProgressReporter

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_FILE_SIZE", "INCOMING_DIR", "StageItem", "StageResult", "Stager", "staged_mode"]

EXEC_SUFFIXES = frozenset({".sh", ".bash", ".py", ".rb", ".pl", ".js", ".mjs"})
_READ_ONLY = ~0o222  # staged files and folders: nobody writes them but the stager
_OPEN_DIR = 0o755  # a staged folder while the stager writes into it
_SEALED_DIR = _OPEN_DIR & _READ_ONLY
# Manifest entries of another format lack the records `check` compares: their skills are restaged.
_FORMAT = 2
_MANIFEST = ".manifest.json"
_BOOT = ".manifest.boot"  # the boot the manifest was last written in (see the module notes)
_LEASES = ".leases"
_LOCK = ".lock"
_TRASH = ".trash"  # removed folders are renamed here, then deleted
_TEMP_PATTERN = ".*.tmp-*"  # what _atomic_write leaves behind when its process is killed
_READ_CONCURRENCY = 16
_BATCH = 64  # skills read per worker-thread hop from a source that reads in batches
_WRITE_CONCURRENCY = 4
#: Where large files stream while they are hashed, before they reach their staged folder.
INCOMING_DIR = ".incoming"
_STREAM_ABOVE = 1 << 20  # files larger than this stream to disk instead of one batched read
_VERIFY_CHUNK_BYTES = 512 << 10  # a verify pass reads and writes about this much at a time,
_VERIFY_CHUNK_SKILLS = 256  # and this many skills (or an eighth of them)
_INCOMING_MAX_AGE = 3600.0


@dataclass(frozen=True, kw_only=True, slots=True)
class StageItem:
    """One skill to stage: its entry and the source that can read its files."""

    entry: LayerEntry
    reader: SkillLayer

    @property
    def key(self) -> str:
        """``<source>/<folder>``: where it lives below ``.skills-cache``. The source is the
        market's slug, or for a skill served on demand (an MCP server's) the skill's own source
        slug, which names the path prefix that keeps same-named skills apart (``<slug>.team-a``)."""
        source = self.entry.skill.source if self.entry.on_demand else self.reader.source
        return f"{source}/{self.folder}"

    @property
    def folder(self) -> str:
        """The staged folder's name: the skill's real folder name."""
        return self.entry.path.rstrip("/").rpartition("/")[2]  # PurePosixPath(path).name, without the cost


@dataclass(frozen=True, kw_only=True, slots=True)
class StageResult:
    """File counts of one staging pass (``removed`` counts files of removed folders too)."""

    written: int = 0
    unchanged: int = 0
    removed: int = 0
    diagnostics: tuple[Diagnostic, ...] = field(default=())

    def as_dict(self) -> dict[str, int]:
        """The JSON shape of ``harness skills stage --json``."""
        return {"written": self.written, "unchanged": self.unchanged, "removed": self.removed}


def staged_mode(path: str, data: bytes, given: int) -> int:
    """The mode a skill file copied out of a source gets, the same for every kind of source:
    ``0755`` for a script (``data`` starts with ``#!``, or ``path`` has a suffix in
    :data:`EXEC_SUFFIXES`) or a file the source gave any exec bit, else ``0644``. A git tree
    stores most scripts ``100644`` and a folder copied by hand keeps whatever mode it had, so the
    source's bits alone would make a skill runnable from one market and not another.
    Setuid/setgid/sticky and group/world write bits are never kept (the cache is shared; the
    shell may run as another uid). The staging cache drops the write bits as well."""
    if given & 0o111 or data.startswith(b"#!") or _suffix(path) in EXEC_SUFFIXES:
        return 0o755
    return 0o644


def _suffix(path: str) -> str:
    """``PurePosixPath(path).suffix`` without building the path (once per staged file)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Fetched:
    """One read file: its bytes, or a streamed copy in ``.incoming`` (``temp``)."""

    sha256: str
    head: bytes
    data: bytes | None = None
    temp: Path | None = None


class Stager(AsyncResource):
    """Keeps ``cache_dir`` equal to the union of what this process's sources offer.

    ``progress``, when given, hears about a pass that writes: ``Progress(task="staging",
    unit="files", done=..., total=files to write, subject=cache_dir)``, counted as each skill's files land,
    at most every ``progress_interval`` seconds (``None``: the reporter's default) and once more
    at the end. A pass with nothing to
    fetch (a warm turn, a restart over the same cache) reports nothing.
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        verify_interval: float | None = 600.0,
        lease_grace: float = DEFAULT_LEASE_GRACE,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        progress: ProgressCallback | None = None,
        progress_interval: float | None = None,
    ) -> None:
        if max_file_size < 1:
            raise ValueError(f"max_file_size must be at least 1 byte, not {max_file_size}")
        super().__init__()
        self.cache_dir = cache_dir
        self.max_file_size = max_file_size
        self.verify_interval = verify_interval
        self.progress = progress
        self.progress_interval = progress_interval
        self._lock = anyio.Lock()
        self._last_key: tuple[object, ...] | None = None
        self._last_notes: tuple[Diagnostic, ...] = ()
        self._last_items: tuple[StageItem, ...] | None = None
        self._last_files = 0
        self._last_verify = time.monotonic()
        self._plain_dirs: set[Path] = set()
        # What the last pass staged (key -> item) and the manifest it left, for `check`.
        self._served: dict[str, StageItem] = {}
        self._records: dict[str, Any] = {}
        self._records_digest: bytes | None = None  # the SHA-256 of the manifest's bytes `_records` came from
        self._lease = Lease(cache_dir / _LEASES, grace=lease_grace)
        self._in_use: Counter[str] = Counter()  # keys a command runs in now (see `using`)
        self.staged_bytes = 0
        """Bytes of the staged files as the manifest records them (updated by each pass that
        reads or writes the manifest; read from memory)."""

    async def stage(
        self,
        items: Sequence[StageItem],
        *,
        verify: bool = False,
        keep_sources: frozenset[str] = frozenset(),
        partial: bool = False,
    ) -> StageResult:
        """Bring the cache in line with ``items``; a no-op (no I/O) when nothing changed.

        ``keep_sources`` are sources that did not answer this time: their staged folders stay
        even when ``items`` no longer lists them. ``partial``: ``items`` are some of what is
        served (one market, staged while the others still load): they are written, nothing is
        removed, and the lease only gains their keys (until the next full pass).

        After a verify pass the C allocator's free pages go back to the operating system
        (:func:`~harness.pipeline.memory.release_free_memory`, outside the lock turns wait on):
        the buffers the pass read every staged file through do not stay resident.
        """
        verified = self._last_verify
        result = await self._stage(items, verify, keep_sources, partial)
        if self._last_verify != verified:
            await anyio.to_thread.run_sync(release_free_memory)
        return result

    async def _stage(
        self, items: Sequence[StageItem], verify: bool, keep_sources: frozenset[str], partial: bool
    ) -> StageResult:
        async with self._lock:
            if self.verify_interval is not None and time.monotonic() - self._last_verify >= self.verify_interval:
                verify = True
            # A warm turn passes the very tuple it passed last time: skip even building the key.
            if not verify and not partial and items is self._last_items and not keep_sources:
                return StageResult(unchanged=self._last_files, diagnostics=self._last_notes)
            key = (*sorted((item.key, item.entry.digest) for item in items), *sorted(keep_sources))
            if key == self._last_key and not verify and not partial:
                self._last_items = items if isinstance(items, tuple) else None
                return StageResult(unchanged=self._last_files, diagnostics=self._last_notes)
            oversize = self._oversize(items)
            contents: dict[str, dict[str, _Fetched]] = {}
            diagnostics: list[Diagnostic] = []
            try:
                # A restart over a cache that already holds exactly what we serve trusts the
                # manifest (only the verify pass re-hashes) and just claims it with our lease.
                claimed, manifest, rebooted = await anyio.to_thread.run_sync(self._claim, items, verify)
                verify = verify or rebooted
                if claimed is not None:
                    result = claimed
                else:
                    needed = [
                        item
                        for item in items
                        if verify or _recorded_digest(manifest.get(item.key)) != item.entry.digest
                    ]
                    result = await self._write(items, needed, contents, diagnostics, verify, keep_sources, partial)
            except OSError as exc:  # the cache itself is unusable (disk full, read-only, gone)
                result = StageResult(
                    diagnostics=(
                        Diagnostic.error(
                            code="stage-failed",
                            message=f"could not update {self.cache_dir}: {_os_reason(exc)}; what was staged before is served",
                            location=str(self.cache_dir),
                        ),
                    )
                )
            finally:
                await anyio.to_thread.run_sync(_remove_temps, contents)
            self._served = {item.key: item for item in items}
            result = StageResult(
                written=result.written,
                unchanged=result.unchanged,
                removed=result.removed,
                diagnostics=(*oversize, *diagnostics, *result.diagnostics),
            )
            if result.written or result.removed:
                log.info(
                    "staged %s: %d written, %d unchanged, %d removed",
                    self.cache_dir,
                    result.written,
                    result.unchanged,
                    result.removed,
                )
            for diagnostic in result.diagnostics:
                if diagnostic.severity == "error":
                    log.warning("%s", diagnostic)
            if partial:
                self._last_key = self._last_items = None  # the next full pass does its whole work
            elif not any(d.severity == "error" for d in result.diagnostics):
                self._last_key = key
                self._last_items = items if isinstance(items, tuple) else None
                self._last_files = result.written + result.unchanged
                self._last_notes = result.diagnostics
            if verify:
                self._last_verify = time.monotonic()
            return result

    async def check(self, key: str) -> None:
        """Make the staged folder ``key`` (``<source>/<folder>``) hold exactly what the last pass
        staged there, before a command of that skill runs.

        One ``lstat`` walk of that folder in a worker thread, compared with the manifest's
        records; when nothing differs that is all it costs. Otherwise, under the stager's locks:
        files whose record differs are hashed, those whose bytes or mode changed (or that are
        missing) are rewritten from the source, entries that are not the skill's are removed
        (never through a link), and the folders are sealed read-only again. A file that cannot
        be restored (the source does not answer) is removed rather than left to run, and the
        skill is restaged by the next pass. A key the stager does not serve is left alone.
        """
        record = self._records.get(key)
        if key not in self._served or not isinstance(record, dict):
            return
        if not await anyio.to_thread.run_sync(_drifted, self.cache_dir / key, record.get("files", {})):
            return
        async with self._lock:
            item = self._served.get(key)
            if item is None:
                return
            contents: dict[str, dict[str, _Fetched]] = {}
            try:
                if await anyio.to_thread.run_sync(self._restore, item, None):
                    await self._fetch([item], contents)  # a failed read leaves the files to be removed
                    await anyio.to_thread.run_sync(self._restore, item, contents.get(key, {}))
            finally:
                await anyio.to_thread.run_sync(_remove_temps, contents)

    @contextlib.contextmanager
    def using(self, keys: Iterable[str]) -> Iterator[None]:
        """Hold the staged folders ``keys`` while a command runs in them: a pass that no longer
        stages one keeps it (and its lease names it) until the block ends. Costs no I/O."""
        held = list(keys)
        self._in_use.update(held)
        try:
            yield
        finally:
            self._in_use.subtract(held)
            for key in held:
                if self._in_use[key] <= 0:
                    del self._in_use[key]
                    if key not in self._served:
                        self._last_key = self._last_items = None  # the next pass removes it

    async def renew(self) -> None:
        """Write this stager's lease again, unchanged: another host's process counts it as live
        for ``lease_grace`` seconds after its last write (see :mod:`harness.pipeline.leases`). A
        stager that has staged nothing yet holds no lease and writes none."""
        async with self._lock:
            if self._lease.written:
                await anyio.to_thread.run_sync(self._renew_locked)

    def _renew_locked(self) -> None:
        with _file_lock(self.cache_dir / _LOCK):
            self._lease.write(self._lease.keys)

    async def _aclose(self) -> None:
        """Give up this stager's lease so others may clean what only it served."""
        self._lease.release()

    async def _write(
        self,
        items: Sequence[StageItem],
        needed: list[StageItem],
        contents: dict[str, dict[str, _Fetched]],
        diagnostics: list[Diagnostic],
        verify: bool,
        keep_sources: frozenset[str],
        partial: bool,
    ) -> StageResult:
        """Read ``needed`` and bring the cache in line with ``items``. A verify pass reads every
        skill: it goes in chunks (:func:`_chunks`), each one read, written and let go before the
        next is read, so what it holds at once does not grow with the markets' bytes;
        the last chunk's pass is the whole pass (removals, the lease). ``contents`` holds the
        chunk being written, for the caller to remove its streamed copies."""
        chunks = _chunks(needed, _VERIFY_CHUNK_BYTES) if verify else [needed]
        reporter = self._reporter(needed)
        written = unchanged = removed = 0
        notes: list[Diagnostic] = []
        done: set[str] = set()  # skills written by an earlier chunk: the last pass counts them as unchanged
        try:
            for number, chunk in enumerate(chunks, 1):
                contents.clear()
                diagnostics.extend(await self._fetch(chunk, contents))
                last = number == len(chunks)
                result = await anyio.to_thread.run_sync(
                    self._apply,
                    items if last else chunk,
                    contents,
                    verify,
                    keep_sources,
                    reporter,
                    partial or not last,
                    done,
                )
                await anyio.to_thread.run_sync(_remove_temps, contents)
                done.update(item.key for item in chunk)
                written += result.written
                unchanged += result.unchanged
                removed += result.removed
                notes.extend(result.diagnostics)
        finally:
            if reporter is not None:
                reporter.finish()
        return StageResult(written=written, unchanged=unchanged, removed=removed, diagnostics=tuple(notes))

    def _fetched_paths(self, item: StageItem) -> set[str]:
        """The files of ``item`` a pass reads: those read whole and those streamed."""
        return {item.entry.skill.skill_md_name, *(f.path for f in item.entry.files if f.size <= self.max_file_size)}

    def _reporter(self, needed: Sequence[StageItem]) -> ProgressReporter | None:
        """A progress reporter over the files of ``needed`` about to be written, when someone listens."""
        total = sum(len(self._fetched_paths(item)) for item in needed) if self.progress is not None else 0
        if self.progress is None or not total:
            return None
        from filesystems import ProgressReporter  # loaded only by programs that listen

        return ProgressReporter(
            self.progress,
            task="staging",
            total=total,
            unit="files",
            subject=str(self.cache_dir),
            interval=self.progress_interval,
        )

    # -- reading ---------------------------------------------------------------------------

    def _oversize(self, items: Sequence[StageItem]) -> tuple[Diagnostic, ...]:
        """A warning per listed file over the cap (no I/O: sizes come from the listing)."""
        return tuple(
            Diagnostic.warning(
                code="file-too-large",
                message=(
                    f"not staged: {item.key}/{f.path} is {f.size} bytes, over the {self.max_file_size}-byte "
                    "limit (max_file_size)"
                ),
                location=item.entry.skill.location,
            )
            for item in items
            for f in item.entry.files
            if f.size > self.max_file_size
        )

    async def _fetch(self, items: Sequence[StageItem], contents: dict[str, dict[str, _Fetched]]) -> list[Diagnostic]:
        """Read ``items`` into ``contents`` (small files batched, large ones streamed to disk)."""
        diagnostics: list[Diagnostic] = []
        limiter = anyio.Semaphore(_READ_CONCURRENCY)
        incoming = self.cache_dir / INCOMING_DIR
        if any(f.size > _STREAM_ABOVE for item in items for f in item.entry.files):
            await anyio.to_thread.run_sync(lambda: incoming.mkdir(parents=True, exist_ok=True))

        prefetched = await self._read_batched(items)

        async def fetch(item: StageItem) -> None:
            files = [f for f in item.entry.files if f.size <= self.max_file_size]
            small = self._small_paths(item)
            large = [f.path for f in files if f.size > _STREAM_ABOVE]
            fetched: dict[str, _Fetched] = {}
            complete = False
            async with limiter:
                try:
                    read = prefetched.pop(item.key, None)
                    if isinstance(read, Exception):
                        raise read
                    if read is None:
                        read = await item.reader.read_files(item.entry, small)
                    for path, data in read.items():
                        fetched[path] = self._checked(item, path, data)
                    missing = sorted(set(small) - set(fetched))
                    if missing:
                        raise FileNotFoundError(errno.ENOENT, f"the source returned no {', '.join(missing)}")
                    for path in large:
                        fetched[path] = await self._stream(item, path, incoming)
                    complete = True
                except Exception as exc:  # one bad skill must not stop the others
                    diagnostics.append(
                        Diagnostic.error(
                            code="stage-read-failed",
                            message=(
                                f"could not read files of {item.key} to stage them, what was staged "
                                f"before is kept: {describe_error(exc)}"
                            ),
                            location=item.entry.skill.location,
                        )
                    )
                finally:
                    contents[item.key] = fetched  # the caller removes streamed copies, also on failure
            if not complete:
                del contents[item.key]
                await anyio.to_thread.run_sync(_remove_temps, {item.key: fetched})

        async with anyio.create_task_group() as group:
            for item in items:
                group.start_soon(fetch, item)
        return diagnostics

    def _small_paths(self, item: StageItem) -> list[str]:
        """The files of ``item`` read whole (SKILL.md and those up to the streaming size)."""
        small = (f.path for f in item.entry.files if f.size <= min(self.max_file_size, _STREAM_ABOVE))
        return [item.entry.skill.skill_md_name, *small]

    async def _read_batched(self, items: Sequence[StageItem]) -> dict[str, dict[str, bytes] | Exception]:
        """The small files of the items whose source reads in batches (a folder on the host),
        ``_BATCH`` skills per worker-thread hop instead of one hop per skill."""
        by_reader: dict[int, list[StageItem]] = {}
        for item in items:
            if item.reader.repository.batch_reads:
                by_reader.setdefault(id(item.reader), []).append(item)
        read: dict[str, dict[str, bytes] | Exception] = {}
        for group in by_reader.values():
            for start in range(0, len(group), _BATCH):
                batch = group[start : start + _BATCH]
                answers = await batch[0].reader.read_files_batch([(i.entry, self._small_paths(i)) for i in batch])
                read.update(zip((i.key for i in batch), answers, strict=True))
        return read

    def _checked(self, item: StageItem, path: str, data: bytes) -> _Fetched:
        if len(data) > self.max_file_size:  # the listing understated the size
            raise _too_large(item, path, self.max_file_size)
        return _Fetched(sha256=hashlib.sha256(data).hexdigest(), head=data[:2], data=data)

    async def _stream(self, item: StageItem, path: str, incoming: Path) -> _Fetched:
        """Copy one file into ``incoming`` chunk by chunk, hashing as it goes."""
        temp = incoming / f"{os.getpid()}-{os.urandom(8).hex()}"
        digest = hashlib.sha256()
        head = b""
        size = 0
        handle = await anyio.to_thread.run_sync(lambda: open(temp, "xb"))
        try:
            async for chunk in item.reader.read_chunks(item.entry, path):
                size += len(chunk)
                if size > self.max_file_size:
                    raise _too_large(item, path, self.max_file_size)
                head = head or chunk[:2]
                digest.update(chunk)
                await anyio.to_thread.run_sync(handle.write, chunk)
        except BaseException:
            handle.close()
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        handle.close()
        return _Fetched(sha256=digest.hexdigest(), head=head, temp=temp)

    # -- writing (worker thread, under the file lock) --------------------------------------

    def _read_manifest(self) -> tuple[dict[str, Any], bytes | None]:
        """The manifest on disk and the SHA-256 of its bytes (``None`` when there is none). When
        those bytes are the ones this stager last read or wrote, its records are returned (a
        shallow copy: entries are replaced, never changed in place) instead of parsing them again:
        a pass holds one copy of the manifest, not two."""
        try:
            raw = (self.cache_dir / _MANIFEST).read_bytes()
        except FileNotFoundError:
            return {}, None
        digest = hashlib.sha256(raw).digest()
        if digest == self._records_digest:
            return dict(self._records), digest
        try:
            data = json.loads(raw)
        except ValueError:
            return {}, None
        return (data, digest) if isinstance(data, dict) else ({}, None)

    def _write_manifest(self, manifest: dict[str, Any]) -> bytes:
        """Write ``manifest`` (atomically); returns the SHA-256 of what was written."""
        raw = json.dumps(manifest, sort_keys=True).encode()
        _atomic_write(self.cache_dir / _MANIFEST, raw, 0o644)
        return hashlib.sha256(raw).digest()

    def _claim(self, items: Sequence[StageItem], verify: bool) -> tuple[StageResult | None, dict[str, Any], bool]:
        """When the manifest lists exactly ``items`` at their digests and was written since the
        machine last booted, write this process's lease and serve the cache as it is (no file
        hashed, no folder listed). Returns that result (else ``None``), the manifest it read, and
        whether the machine rebooted since (the cache is then verified: see the module notes)."""
        try:
            with _file_lock(self.cache_dir / _LOCK):
                manifest, digest = self._read_manifest()
                rebooted = bool(manifest) and _read_boot(self.cache_dir) != _BOOT_ID
                if verify or rebooted or manifest.keys() != {item.key for item in items}:
                    return None, manifest, rebooted
                if any(_recorded_digest(manifest[item.key]) != item.entry.digest for item in items):
                    return None, manifest, False
                self._lease.write({*manifest, *self._in_use})
        except FileNotFoundError:  # no cache yet
            return None, {}, False
        self._keep_records(manifest, digest)
        files = sum(len(entry.get("files", {})) for entry in manifest.values() if isinstance(entry, dict))
        return StageResult(unchanged=files), manifest, False

    def _keep_records(self, manifest: dict[str, Any], digest: bytes | None) -> None:
        """Hold ``manifest`` as what the cache holds now, ``digest`` the SHA-256 of its bytes on
        disk (worker thread, under the file lock)."""
        self._records = manifest
        self._records_digest = digest
        files = (entry.get("files") for entry in manifest.values() if isinstance(entry, dict))
        self.staged_bytes = sum(
            size
            for records in files
            if isinstance(records, dict)
            for record in records.values()
            if isinstance(record, dict) and isinstance(size := record.get("size"), int)
        )

    def _apply(
        self,
        items: Sequence[StageItem],
        contents: dict[str, dict[str, _Fetched]],
        verify: bool,
        keep_sources: frozenset[str],
        reporter: ProgressReporter | None = None,
        partial: bool = False,
        counted: frozenset[str] | set[str] = frozenset(),
    ) -> StageResult:
        """Write ``contents`` and bring the cache in line with ``items`` (worker thread). Skills
        of ``items`` not in ``contents`` count as unchanged, except those in ``counted`` (an
        earlier chunk of the same pass counted them)."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.cache_dir / _LOCK):
            self._plain_dirs = set()  # folders below the cache checked to be no links, this pass
            _remove_temp_files([*self.cache_dir.glob(_TEMP_PATTERN), *(self.cache_dir / _LEASES).glob(_TEMP_PATTERN)])
            _remove_temp_files(_abandoned(self.cache_dir / INCOMING_DIR))
            _empty_trash(self.cache_dir / _TRASH)
            manifest, _ = self._read_manifest()
            written = unchanged = removed = 0
            diagnostics: list[Diagnostic] = []
            writes = [(item, files) for item in items if (files := contents.get(item.key)) is not None]
            for item in items:
                if item.key not in contents and item.key not in counted:
                    unchanged += len(manifest.get(item.key, {}).get("files", {}))
            # Source folders stay open for the whole pass: the skills below them are written side by side.
            opened: set[Path] = set()
            try:
                for source in {item.key.partition("/")[0] for item, _ in writes} | {
                    p.name for p in _dirs(self.cache_dir)
                }:
                    _drop_links(self.cache_dir / source)
                    self._open_folder(self.cache_dir, self.cache_dir / source, opened)

                # Skills are written side by side (each file still temp + rename): creating and renaming
                # files waits on the filesystem's journal far more than on the CPU.
                def write_skill(
                    write: tuple[StageItem, dict[str, _Fetched]],
                ) -> tuple[tuple[int, int, int], dict[str, Any], list[Diagnostic]]:
                    outcome = self._write_skill(write[0], write[1], manifest.get(write[0].key), verify)
                    if reporter is not None:
                        reporter.advance(len(write[1]))
                    return outcome

                with concurrent.futures.ThreadPoolExecutor(min(_WRITE_CONCURRENCY, max(len(writes), 1))) as pool:
                    outcomes = list(pool.map(write_skill, writes))
                for (item, _), (counts, entry_manifest, found) in zip(writes, outcomes, strict=True):
                    written += counts[0]
                    unchanged += counts[1]
                    removed += counts[2]
                    diagnostics.extend(found)
                    manifest[item.key] = entry_manifest  # a failed skill's entry keeps its old digest
                ours = {item.key for item in items} | set(self._in_use)
                kept: dict[str, int] = {}
                held: set[str] = set()  # folders of sources that did not answer: kept, and leased
                gone: list[str] = []
                keep = set() if partial else ours | self._lease.others()
                for key in sorted(set(manifest) | self._folders_on_disk()) if not partial else ():
                    if key in keep:
                        continue
                    source = key.partition("/")[0]
                    if source in keep_sources or any(source.startswith(f"{kept}.") for kept in keep_sources):
                        kept[source] = kept.get(source, 0) + 1
                        held.add(key)
                        continue
                    gone.append(key)
                    manifest.pop(key, None)
                # A partial pass adds what it wrote to the lease (another process's clean-up must
                # not remove it before our full pass); the full pass names exactly what we serve.
                self._lease.write(self._lease.keys | ours if partial else ours | held)
                # The manifest first: a pass killed while it removes folders leaves one that names
                # only whole folders (what is left of the others goes with the next pass).
                digest = self._write_manifest(manifest)
                for key in gone:
                    removed += self._remove_folder(key)
            finally:
                _seal(opened)
            diagnostics.extend(
                Diagnostic.warning(
                    code="stage-kept",
                    message=f"kept {count} staged folder(s) of {source}: it did not answer, so what it offered before stays",
                    location=source,
                )
                for source, count in sorted(kept.items())
            )
            if _BOOT_ID is not None and _read_boot(self.cache_dir) != _BOOT_ID:
                _atomic_write(self.cache_dir / _BOOT, _BOOT_ID.encode(), 0o644)
            self._keep_records(manifest, digest)
            return StageResult(written=written, unchanged=unchanged, removed=removed, diagnostics=tuple(diagnostics))

    def _write_skill(
        self, item: StageItem, files: dict[str, _Fetched], old: dict[str, Any] | None, verify: bool
    ) -> tuple[tuple[int, int, int], dict[str, Any], list[Diagnostic]]:
        folder = self.cache_dir / item.key
        _drop_links(folder)
        if folder.is_dir():
            _remove_temp_files(folder.rglob(_TEMP_PATTERN))
        modes = {f.path: f.mode for f in item.entry.files}
        old_files: dict[str, Any] = (old or {}).get("files", {})
        new_files: dict[str, dict[str, Any]] = {}
        opened: set[Path] = set()  # this skill's folders made writable for this pass, sealed at its end
        folders: set[Path] = set()  # with verify, every folder of the skill: sealed again too
        landed: list[str] = []  # paths whose file on disk is the new version
        written = unchanged = removed = 0
        diagnostics: list[Diagnostic] = []
        try:
            for path, fetched in sorted(files.items()):
                problem = relative_path_problem(path)
                if problem:
                    diagnostics.append(
                        Diagnostic.warning(
                            code="unsafe-market-path",
                            message=f"refused to stage {path!r} of {item.key}: {problem}",
                            location=item.entry.skill.location,
                        )
                    )
                    continue
                mode = staged_mode(path, fetched.head, modes.get(path, 0o644)) & _READ_ONLY
                target = folder / path
                current = _current_record(target, fetched.sha256, mode, old_files.get(path), verify)
                if current is not None:
                    new_files[path] = current
                    unchanged += 1
                    landed.append(path)
                    continue
                new_files[path] = {"sha256": fetched.sha256, "mode": mode}
                try:
                    if target.parent not in opened:  # once per folder of the skill
                        self._open_folder(folder.parent, target.parent, opened)
                    new_files[path] = self._land(target, fetched, mode)
                except OSError as exc:
                    diagnostics.append(
                        Diagnostic.error(
                            code="stage-write-failed",
                            message=f"could not stage {item.key}/{path}: {_os_reason(exc)}",
                            location=str(target),
                        )
                    )
                    continue
                written += 1
                landed.append(path)
            stale = set(old_files) - set(new_files)
            for path in stale:
                target = folder / path
                if not self._inside(target.parent) or not target.parent.is_dir():
                    continue
                self._open_folder(folder.parent, target.parent, opened)
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
                    removed += 1
            if verify:
                found = _scan(folder)
                removed += self._prune(folder, found, new_files, opened)
                folders = {folder / rel for rel in _folders_of(new_files) if rel in found}
        finally:
            _seal(opened | folders)
        if any(d.severity == "error" for d in diagnostics):
            # The folder is part old, part new: record what is on disk now (the old records, the
            # files this pass landed) under the old digest, so the next pass restages the skill
            # and removes whatever it no longer has, including files written this time.
            on_disk = {path: record for path, record in old_files.items() if path not in stale}
            on_disk.update((path, new_files[path]) for path in landed)
            entry = {"format": _FORMAT, "digest": (old or {}).get("digest"), "files": on_disk}
            return (written, unchanged, removed), entry, diagnostics
        entry = {"format": _FORMAT, "digest": item.entry.digest, "files": new_files}
        return (written, unchanged, removed), entry, diagnostics

    def _land(self, target: Path, fetched: _Fetched, mode: int) -> dict[str, Any]:
        """Put ``fetched`` at ``target`` (temp + rename, in an open folder); return its record."""
        if fetched.temp is not None:
            os.chmod(fetched.temp, mode)
            os.replace(fetched.temp, target)
        else:
            _atomic_write(target, fetched.data or b"", mode, parents=False)
        return _record(fetched.sha256, os.lstat(target))

    def _restore(self, item: StageItem, fetched: dict[str, _Fetched] | None) -> bool:
        """Bring ``item``'s staged folder back to its manifest entry (see :meth:`check`): remove
        what is not the skill's, keep files whose bytes and mode still match their record (only
        those whose ``lstat`` differs are hashed), rewrite the others from ``fetched``. With
        ``fetched=None`` nothing is rewritten: returns whether some file needs the source's bytes."""
        folder = self.cache_dir / item.key
        with _file_lock(self.cache_dir / _LOCK):
            manifest, digest = self._read_manifest()
            entry = manifest.get(item.key)
            if not isinstance(entry, dict):
                return False  # removed since the check began
            self._plain_dirs = set()
            # What this stager wrote for the version it serves is what each file must hold: a
            # record rewritten in the manifest on disk (a tenant's shell can write it) is not.
            ours = self._records.get(item.key)
            trusted = ours.get("files") if isinstance(ours, dict) and ours.get("digest") == item.entry.digest else None
            files: dict[str, Any] = dict(trusted if isinstance(trusted, dict) else entry.get("files", {}))
            opened: set[Path] = set()
            folders: set[Path] = set()  # the skill's folders as found: sealed again too
            lost: list[str] = []
            try:
                _drop_links(folder.parent)
                self._open_folder(self.cache_dir, folder.parent, opened)
                _drop_links(folder)
                self._open_folder(folder.parent, folder, opened)
                found = _scan(folder)
                self._prune(folder, found, files, opened)
                folders = {folder / rel for rel in _folders_of(files) if rel in found}
                for path, record in files.items():
                    if _matches(record, found.get(path)):
                        continue
                    current = _current_record(
                        folder / path, record.get("sha256", ""), record.get("mode", 0), None, True
                    )
                    if current is not None:
                        files[path] = current  # touched, not changed
                    else:
                        lost.append(path)
                if fetched is None and lost:
                    return True
                for path in lost:
                    target = folder / path
                    self._open_folder(folder, target.parent, opened)
                    source = fetched.get(path) if fetched is not None else None
                    if source is not None and source.sha256 == files[path].get("sha256"):
                        files[path] = self._land(target, source, files[path]["mode"])
                        continue
                    # No trustworthy bytes for it: never leave a changed file to run.
                    with contextlib.suppress(FileNotFoundError):
                        target.unlink()
                    del files[path]
                    entry["digest"] = None  # the next pass restages the skill
                    self._last_key = self._last_items = None
                    log.warning(
                        "removed %s/%s: it was changed and could not be restored from its source", item.key, path
                    )
            finally:
                _seal(opened | folders)
            if lost or files != entry.get("files"):
                manifest[item.key] = {**entry, "files": files}
                digest = self._write_manifest(manifest)
            self._keep_records(manifest, digest)
            return False

    def _prune(self, folder: Path, found: dict[str, os.stat_result], files: dict[str, Any], opened: set[Path]) -> int:
        """Remove the entries of ``found`` (a :func:`_scan` of ``folder``) that are not the skill's
        files or their folders (links included, never followed); returns how many files went."""
        folders = _folders_of(files)
        gone: set[str] = set()
        removed = 0
        for rel, st in sorted(found.items()):
            kind = stat.S_IFMT(st.st_mode)
            if (rel in files and kind == stat.S_IFREG) or (rel in folders and kind == stat.S_IFDIR):
                continue
            if any(parent in gone for parent in _parents(rel)):
                continue
            gone.add(rel)
            path = folder / rel
            if not self._inside(path.parent):
                continue
            self._open_folder(folder.parent, path.parent, opened)
            with contextlib.suppress(FileNotFoundError):
                if kind == stat.S_IFDIR:
                    _unseal_tree(path)
                    shutil.rmtree(path)
                    removed += sum(
                        1 for r, s in found.items() if r.startswith(rel + "/") and not stat.S_ISDIR(s.st_mode)
                    )
                else:
                    path.unlink()
                    removed += 1
        return removed

    def _inside(self, folder: Path) -> bool:
        """Whether ``folder`` lies inside the cache without crossing a link: every component
        below the cache root is ``lstat``-ed (once per pass) and none may be a symlink."""
        try:
            below = folder.relative_to(self.cache_dir)
        except ValueError:
            return False
        if has_dot_segment(below.as_posix()):  # the cache itself (".") or a climb out of it
            return False
        current = self.cache_dir
        for part in below.parts:
            current = current / part
            if current in self._plain_dirs:
                continue
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return False
            except FileNotFoundError:
                return True  # created below by mkdir, inside what was checked
            self._plain_dirs.add(current)
        return True

    def _open_folder(self, base: Path, folder: Path, opened: set[Path]) -> None:
        """Create ``folder`` or make it writable, with every folder between it and ``base`` (which
        the caller opened); each one is added to ``opened`` for :func:`_seal` to close again.
        Checked before anything is created: a planted link would already lead out of the cache."""
        if not self._inside(folder):
            raise PermissionError(errno.EPERM, f"{folder} resolves outside {self.cache_dir}")
        depth = len(folder.relative_to(base).parts)
        for current in [*reversed(folder.parents[: depth - 1]), folder] if depth else []:
            if current in opened:
                continue
            try:
                os.mkdir(current, _OPEN_DIR)
            except FileExistsError:
                os.chmod(current, _OPEN_DIR)
            opened.add(current)

    def _folders_on_disk(self) -> set[str]:
        found: set[str] = set()
        for source in _dirs(self.cache_dir):
            found.update(f"{source.name}/{folder.name}" for folder in _dirs(source))
        return found

    def _remove_folder(self, key: str) -> int:
        """Remove the staged folder ``key`` (its source folder is open): renamed into the trash
        first, so no half-removed folder is ever left under its key; returns its file count."""
        folder = self.cache_dir / key
        count = 0
        if folder.is_symlink():
            folder.unlink()
        elif folder.is_dir():
            count = sum(1 for p in folder.rglob("*") if not p.is_dir())
            trash = self.cache_dir / _TRASH
            try:
                _drop_links(trash)
                trash.mkdir(exist_ok=True)
                os.chmod(folder, _OPEN_DIR)  # moving a folder rewrites its "..": it must be writable
                os.rename(folder, trash / os.urandom(8).hex())
            except OSError as exc:  # removed in place then: a pass cut short finishes it next time
                log.warning("could not move %s to the trash (%s); removing it in place", folder, _os_reason(exc))
                _unseal_tree(folder)
                shutil.rmtree(folder, ignore_errors=True)
            _empty_trash(trash)
        with contextlib.suppress(OSError):
            folder.parent.rmdir()  # only succeeds when the source folder is now empty
        return count


def _boot_id() -> str | None:
    """This boot of the machine (Linux), or ``None`` where the kernel does not say."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


_BOOT_ID = _boot_id()


def _read_boot(cache_dir: Path) -> str | None:
    try:
        return (cache_dir / _BOOT).read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _recorded_digest(entry: Any) -> object:
    """The digest a manifest entry records, ``None`` for an entry of another format."""
    return entry.get("digest") if isinstance(entry, dict) and entry.get("format") == _FORMAT else None


def _record(digest: str, st: os.stat_result) -> dict[str, Any]:
    """What the manifest keeps of one staged file: its hash, and the ``lstat`` it had when it was
    written — new bytes, a new mode or another inode change the size, ``mtime`` or ``ctime``,
    and ``ctime`` cannot be set back."""
    return {
        "sha256": digest,
        "mode": stat.S_IMODE(st.st_mode),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
    }


def _matches(record: Any, st: os.stat_result | None) -> bool:
    """Whether ``st`` is the ``lstat`` of the regular file ``record`` was taken of."""
    return (
        st is not None
        and stat.S_ISREG(st.st_mode)
        and isinstance(record, dict)
        and record == _record(record.get("sha256", ""), st)
    )


def _current_record(target: Path, digest: str, mode: int, old: Any, verify: bool) -> dict[str, Any] | None:
    """The record of ``target`` when it already holds ``digest`` with ``mode``, else ``None``:
    the manifest's ``old`` record is trusted unless ``verify``, which hashes the file."""
    if not verify:
        if isinstance(old, dict) and old.get("sha256") == digest and old.get("mode") == mode and "ino" in old:
            return old
        return None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with open(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != mode:
            return None
        if hashlib.file_digest(handle, "sha256").hexdigest() != digest:
            return None
    record = _record(digest, st)
    return old if record == old else record  # a pass keeps one record per file in memory, not two


def _parents(rel: str) -> list[str]:
    """The folders above the relative path ``rel`` in its skill folder (``""`` is the folder itself)."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts))]


def _folders_of(files: Iterable[str]) -> set[str]:
    """Every folder of a staged skill that holds one of ``files`` (``""`` included)."""
    return {parent for path in files for parent in _parents(path)}


def _scan(folder: Path) -> dict[str, os.stat_result]:
    """Every entry of a staged folder by relative path (``""`` for the folder itself), ``lstat``-ed
    in one walk; links and other non-folders are never entered. Empty when ``folder`` is missing
    or not a real folder."""
    try:
        top = os.lstat(folder)
    except FileNotFoundError:
        return {}
    if not stat.S_ISDIR(top.st_mode):
        return {}
    found = {"": top}
    pending = [("", str(folder))]
    while pending:
        prefix, host = pending.pop()
        try:
            with os.scandir(host) as entries:
                for entry in entries:
                    with contextlib.suppress(FileNotFoundError):
                        st = entry.stat(follow_symlinks=False)
                        found[prefix + entry.name] = st
                        if stat.S_ISDIR(st.st_mode):
                            pending.append((f"{prefix}{entry.name}/", entry.path))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return found


def _drifted(folder: Path, files: dict[str, Any]) -> bool:
    """Whether the staged ``folder`` differs from its manifest ``files``: a file whose ``lstat`` is
    not its record's, an entry that is not the skill's, a folder that is not sealed."""
    found = _scan(folder)
    if found.keys() != files.keys() | _folders_of(files):
        return True
    return any(
        not _matches(files[rel], st) if rel in files else st.st_mode != stat.S_IFDIR | _SEALED_DIR
        for rel, st in found.items()
    )


def _seal(folders: Iterable[Path]) -> None:
    """Make staged folders read-only again after the stager's own writes."""
    for folder in folders:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(folder, _SEALED_DIR)


def _unseal_tree(folder: Path) -> None:
    """Make ``folder`` and the folders below it writable (links are not followed), so it can be
    removed by a process that is not root."""
    for parent, _, _ in os.walk(folder):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(parent, _OPEN_DIR)


def _chunks(items: list[StageItem], limit: int) -> list[list[StageItem]]:
    """``items`` in order, cut into runs whose listed sizes add up to about ``limit`` bytes (a
    skill larger than that is a run of its own) and of at most :data:`_VERIFY_CHUNK_SKILLS` skills
    or an eighth of them, whichever is more (each run rewrites the manifest); at least one run."""
    most = max(_VERIFY_CHUNK_SKILLS, -(-len(items) // 8))
    chunks: list[list[StageItem]] = [[]]
    size = 0
    for item in items:
        weight = sum(f.size for f in item.entry.files)
        if chunks[-1] and (size + weight > limit or len(chunks[-1]) >= most):
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += weight
    return chunks


def _too_large(item: StageItem, path: str, limit: int) -> OSError:
    return OSError(errno.EFBIG, f"{item.key}/{path} is larger than the {limit}-byte limit (max_file_size)")


def _remove_temps(contents: dict[str, dict[str, _Fetched]]) -> None:
    """Delete streamed copies that were not moved into place."""
    for files in contents.values():
        for fetched in files.values():
            if fetched.temp is not None:
                with contextlib.suppress(FileNotFoundError):
                    fetched.temp.unlink()


def _abandoned(incoming: Path) -> list[Path]:
    """Streamed copies left by processes killed mid-stage (older than any live stream)."""
    try:
        entries = list(incoming.iterdir())
    except FileNotFoundError:
        return []
    now = time.time()
    found = []
    for path in entries:
        with contextlib.suppress(OSError):
            if now - path.lstat().st_mtime > _INCOMING_MAX_AGE:
                found.append(path)
    return found


def _atomic_write(target: Path, data: bytes, mode: int, *, parents: bool = True) -> None:
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{target.parent}/.{target.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        # A plain descriptor, not a buffered file object: one is opened per staged file.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _drop_links(*paths: Path) -> None:
    """Remove symlinks planted where staged folders belong (the links only, never their targets),
    so neither writes nor stale-file removal can follow them out of the cache."""
    for path in paths:
        if path.is_symlink():
            path.unlink()


def _remove_temp_files(paths: Iterable[Path]) -> None:
    """Delete temporary files of writers killed mid-write. Only called under the cache's file
    lock, and every write into the cache happens under it, so no live writer owns one."""
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except FileNotFoundError:
        return []


def _empty_trash(trash: Path) -> None:
    """Delete what removed folders left in ``trash`` (a planted link is removed, never followed)."""
    _drop_links(trash)
    try:
        entries = list(trash.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            _unseal_tree(entry)
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)

"""Watch host folders for skill edits, so a warm turn needs no per-file ``stat``.

One watcher per tree (inotify instances are limited), never one per user. Changes under
``.skills-cache`` (the stager's own writes) and ``.harness`` are ignored. External edits reach
the pipeline after the debounce (``DEBOUNCE_MS``) plus watchfiles' step, well under a second.

A ``git pull`` or an unpacked archive changes thousands of files at once, while a busy pipeline
holds thousands of users' layers: :class:`ChangeIndex` maps changed paths to what they touch at
a cost that does not grow with the number of layers, and :class:`TreeWatcher` hands them over in
slices so that no other task waits long for the event loop.

On Linux a watch is the harness's own (:mod:`harness.pipeline.inotify`): folders are watched, and
events read, in a worker thread, and what it holds shrinks when folders go. Elsewhere it is
watchfiles', which keeps an entry for every folder it ever watched: there a watch over folders
that come and go is set up afresh now and then (:attr:`TreeWatcher.renew_after`).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import anyio

from filesystems import CACHE_DIR, MACHINE_DIR

if TYPE_CHECKING:  # annotations only: anyio loads these modules when a watcher first runs
    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from harness.pipeline.inotify import Inotify

__all__ = ["DEBOUNCE_MS", "RENEW_AFTER", "ChangeIndex", "TreeWatcher", "WatchBackend", "WorkspaceWatcher"]

DEBOUNCE_MS = 50
# Removed paths a recursive watch sees before it is set up afresh (what the native watcher kept
# of the removed folders is then dropped with it).
RENEW_AFTER = 20_000
# Changed paths handed to ``on_change`` at once; the event loop runs other tasks between slices.
_SLICE = 256
# Deep watches a WorkspaceWatcher keeps at most (each waits in a worker thread).
_MAX_TIERS = 6
_IGNORED_FOLDERS = (CACHE_DIR, MACHINE_DIR, "__pycache__", ".git")
# Compiled by ``re`` when a watcher first sees a change, not at import.
_IGNORED_PART = rf"/(?:{'|'.join(map(re.escape, _IGNORED_FOLDERS))})(?:/|$)"
log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: How folders are watched: ``"inotify"`` (Linux, see :mod:`harness.pipeline.inotify`),
#: ``"watchfiles"`` (any platform), or ``"auto"``: inotify where there is one.
WatchBackend = Literal["auto", "inotify", "watchfiles"]


def _native(backend: WatchBackend) -> bool:
    from harness.pipeline.inotify import inotify_available  # loaded when a watcher first runs

    return backend == "inotify" or (backend == "auto" and inotify_available())


class TreeWatcher:
    """Calls ``on_change(paths)`` with host paths changed below ``root`` (one folder or several;
    with ``recursive=False`` only the folders' own entries are watched).

    Run it with ``await task_group.start(watcher.run)``: it reports ready once watching. If
    watching is impossible (no inotify, limits reached) ``on_failure(reason)`` is called and the
    caller falls back to re-reading every turn.

    Changes are coalesced: whatever arrived while earlier ones were being handed over is handed
    over next as one set. A large set comes in slices of a few hundred paths, with a checkpoint
    between them, so ``on_change`` should cost about as much per path whatever else it holds.
    """

    def __init__(
        self,
        root: Path | Sequence[Path],
        on_change: Callable[[set[Path]], None],
        on_failure: Callable[[str], None],
        *,
        recursive: bool = True,
        backend: WatchBackend = "auto",
    ) -> None:
        self.roots = (root,) if isinstance(root, Path) else tuple(root)
        self.root = self.roots[0] if self.roots else Path()
        self.recursive = recursive
        self.backend = backend
        self.on_change = on_change
        self.on_failure = on_failure
        self.renew_after = RENEW_AFTER
        """With watchfiles: removed paths a recursive watch sees before it is set up afresh (see
        :meth:`run`)."""
        self.renewals = 0
        """How many times the watch was set up afresh."""
        self._stop = anyio.Event()
        self._wake = anyio.Event()  # stop, or renew the watch

    def stop(self) -> None:
        """Ask the watcher to finish."""
        self._stop.set()
        self._wake.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch until :meth:`stop` (or cancellation).

        watchfiles keeps an entry for every folder it ever watched, also once the folder is gone,
        so a tree where folders come and go would grow it for as long as the process runs. After
        :attr:`renew_after` removed paths a fresh watch is set up (registered before the old one
        stops, so nothing falls between them) and the old one, with what it kept, is dropped:
        memory stays bounded by the tree, at the cost of one walk of it per renewal. The inotify
        backend keeps nothing of removed folders and is never renewed."""
        if _native(self.backend):
            await self._run_inotify(task_status)
            return
        shortest = min((len(str(root)) for root in self.roots), default=0)
        send, receive = anyio.create_memory_object_stream[list[str]](math.inf)
        async with anyio.create_task_group() as group:
            group.start_soon(self._deliver, receive)
            async with send:
                previous: anyio.Event | None = None
                while not self._stop.is_set():
                    current = anyio.Event()  # this watch's own stop
                    group.start_soon(self._pump, self._batches(shortest, current), send.clone())
                    # The watch is registered when the generator first runs; let it get that far.
                    for _ in range(3):
                        await anyio.sleep(0)
                    if previous is None:
                        task_status.started()
                    else:
                        previous.set()
                        self.renewals += 1
                    previous = current
                    await self._wake.wait()
                    self._wake = anyio.Event()
                if previous is not None:
                    previous.set()

    async def _run_inotify(self, task_status: TaskStatus[None]) -> None:
        """:meth:`run` on inotify: the folders are watched, and events read, in a worker thread."""
        from harness.pipeline.inotify import Inotify

        roots = [str(root) for root in self.roots]
        try:
            watch = await anyio.to_thread.run_sync(
                lambda: Inotify(roots, recursive=self.recursive, skip=_IGNORED_FOLDERS)
            )
        except OSError as exc:
            self._failed(exc)
            task_status.started()
            return
        try:
            send, receive = anyio.create_memory_object_stream[list[str]](math.inf)
            reading = anyio.CancelScope()
            async with anyio.create_task_group() as group:
                group.start_soon(self._deliver, receive)
                group.start_soon(self._read, watch, send, reading)
                task_status.started()
                await self._stop.wait()
                reading.cancel()
        finally:
            with anyio.CancelScope(shield=True):  # the kernel drops every watch: ~3 ms a thousand
                await anyio.to_thread.run_sync(watch.close)

    async def _read(self, watch: Inotify, send: MemoryObjectSendStream[list[str]], scope: anyio.CancelScope) -> None:
        """Hand over what the watch reports, a batch per :data:`DEBOUNCE_MS`, until ``scope`` is cancelled."""
        shortest = min((len(root) for root in watch.roots), default=0)
        async with send:
            with scope:
                try:
                    while True:
                        await anyio.wait_readable(watch.fd)
                        await anyio.sleep(DEBOUNCE_MS / 1000)  # what comes meanwhile joins this batch
                        changed = await anyio.to_thread.run_sync(watch.read)
                        relevant = [path for path in changed if _relevant(shortest, path)]
                        if relevant:
                            send.send_nowait(relevant)
                except OSError as exc:
                    self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        """The watch is over: changes below the roots are found by re-reading every turn."""
        log.warning("cannot watch %s (%s); skills there are re-read every turn", self.root, exc)
        self.on_failure(str(exc))
        self.stop()

    def _batches(self, shortest: int, stop: anyio.Event) -> AsyncIterator[set[tuple[Any, str]]]:
        from watchfiles import awatch

        return awatch(
            *self.roots,
            watch_filter=lambda _change, path: _relevant(shortest, path),
            recursive=self.recursive,
            debounce=DEBOUNCE_MS,
            step=DEBOUNCE_MS,
            stop_event=stop,
            rust_timeout=0,
        )

    async def _pump(
        self, batches: AsyncIterator[set[tuple[Any, str]]], send: MemoryObjectSendStream[list[str]]
    ) -> None:
        """Read one watch's batches as they come; :meth:`_deliver` hands them over. Once the
        watch has seen :attr:`renew_after` removed paths, :meth:`run` is woken to renew it."""
        from watchfiles import Change

        removed = 0
        async with send:
            try:
                async for batch in batches:
                    send.send_nowait([path for _, path in batch])
                    if self.recursive and removed < self.renew_after:
                        removed += sum(change == Change.deleted for change, _ in batch)
                        if removed >= self.renew_after:
                            self._wake.set()
            except (OSError, RuntimeError) as exc:
                self._failed(exc)

    async def _deliver(self, receive: MemoryObjectReceiveStream[list[str]]) -> None:
        async with receive:
            async for batch in receive:
                pending = set(batch)
                while True:  # everything that arrived meanwhile joins this pass
                    try:
                        pending.update(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                paths = list(pending)
                for start in range(0, len(paths), _SLICE):
                    if start:
                        await anyio.sleep(0)
                    try:
                        self.on_change({Path(path) for path in paths[start : start + _SLICE]})
                    except Exception as exc:  # a failed handler must not end the watch unnoticed
                        log.warning(
                            "handling changes below %s failed (%s); skills there are re-read every turn",
                            self.root,
                            exc,
                            exc_info=True,
                        )
                        self.on_failure(str(exc))


class ChangeIndex(Generic[_T]):
    """Which items a set of changed host paths touches, each item registered under a folder.

    A changed path touches the items of a folder when it is the folder, lies below it, or is one
    of its ancestors (the folder itself, or a parent, created, moved or removed). Answering costs
    a dict lookup per distinct folder among the paths' parents plus one per path, and grows with
    the items touched, never with the items registered. Paths compare as pure paths (nothing is
    resolved), so register folders spelled as the watcher reports them.
    """

    def __init__(self) -> None:
        self._items: dict[str, list[_T]] = {}  # folder -> its items
        self._below: dict[str, set[str]] = {}  # ancestor -> registered folders below it

    def __len__(self) -> int:
        return sum(len(items) for items in self._items.values())

    def add(self, folder: Path | None, item: _T) -> None:
        """Register ``item`` under ``folder`` (nothing when ``folder`` is ``None``)."""
        if folder is None:
            return
        key = str(folder)
        items = self._items.setdefault(key, [])
        if not items:
            for ancestor in _ancestors(key):
                self._below.setdefault(ancestor, set()).add(key)
        items.append(item)

    def discard(self, folder: Path | None, item: _T) -> None:
        """Forget ``item`` (compared by identity) under ``folder``; nothing if it is not there."""
        if folder is None:
            return
        key = str(folder)
        items = [other for other in self._items.get(key, ()) if other is not item]
        if items:
            self._items[key] = items
        elif self._items.pop(key, None) is not None:
            for ancestor in _ancestors(key):
                below = self._below[ancestor]
                below.discard(key)
                if not below:
                    del self._below[ancestor]

    def touched(self, paths: Iterable[Path]) -> list[_T]:
        """The items ``paths`` touch, each once."""
        folders: set[str] = set()
        walked: set[str] = set()
        for path in paths:
            key = str(path)
            folders.update(self._below.get(key, ()))
            while key not in walked:  # the parents another path already walked are done
                walked.add(key)
                if key in self._items:
                    folders.add(key)
                parent = os.path.dirname(key)
                if parent == key:
                    break
                key = parent
        return [item for folder in folders for item in self._items[folder]]


def _ancestors(folder: str) -> Iterable[str]:
    parent = os.path.dirname(folder)
    while parent != folder:
        yield parent
        folder, parent = parent, os.path.dirname(parent)


def _relevant(start: int, path: str) -> bool:
    """Not below an ignored folder (looked for from ``start``, the watched folder's length); a
    plain string scan, as staging makes thousands of events."""
    return re.compile(_IGNORED_PART).search(path, start) is None


class WorkspaceWatcher:
    """Watches a workspace without what the harness writes there: the workspace folder's own
    entries, and each of its top-level folders with everything below, except the machine-owned
    ones (``.skills-cache``, ``.harness``) and ``.git``. Nothing below those is ever watched
    (inotify watches are a per-user limit, and the staging cache holds a folder per staged
    skill and file folder).

    When a top-level folder appears (a new user's area) it is watched from then on and reported
    as changed, since what was written in it before the watch began was not seen. A folder that
    goes loses its watch with it. On inotify that is one recursive watch that skips those
    folders; with watchfiles, a watch per new folder, later merged with others (see :meth:`run`).
    Run it like :class:`TreeWatcher`.
    """

    def __init__(
        self,
        root: Path,
        on_change: Callable[[set[Path]], None],
        on_failure: Callable[[str], None],
        *,
        backend: WatchBackend = "auto",
    ) -> None:
        self.root = root
        self.on_change = on_change
        self.on_failure = on_failure
        self.backend = backend
        self._tree: TreeWatcher | None = None  # the inotify backend's one watch
        self._stop = anyio.Event()
        self._moved = anyio.Event()  # the top level changed: watch the new set
        self.folders: frozenset[str] = frozenset()
        """The names of the top-level folders watched (names, not paths: comparing thousands of
        paths on every new folder kept the event loop for tens of milliseconds)."""

    def stop(self) -> None:
        """Ask the watcher to finish."""
        self._stop.set()
        self._moved.set()
        if self._tree is not None:
            self._tree.stop()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch until :meth:`stop` (or cancellation)."""
        if _native(self.backend):
            self._tree = TreeWatcher(self.root, self.on_change, self.on_failure, backend="inotify")
            if self._stop.is_set():
                self._tree.stop()
            await self._tree.run(task_status=task_status)
            return
        async with anyio.create_task_group() as group:
            top = TreeWatcher(self.root, self._on_top, self.on_failure, recursive=False)
            await group.start(top.run)
            # The deep watches, newest last, each over some of the top-level folders. Setting a
            # watch up walks every folder below its roots in native code that keeps the GIL (no
            # other task runs meanwhile), so new folders get a watch of their own, and watches
            # are merged only when the newer one holds about as many folders as the one before
            # it: a folder is walked again O(log n) times, and a long walk happens only when the
            # folders watched have grown by half.
            tiers: list[tuple[frozenset[str], TreeWatcher]] = []
            started = False
            while not self._stop.is_set():
                folders = await anyio.to_thread.run_sync(self._top_folders)
                added = folders - self.folders
                self.folders = folders
                if added:
                    tiers.append((added, await self._watch(group, added)))
                    while len(tiers) > 1 and (2 * len(tiers[-1][0]) >= len(tiers[-2][0]) or len(tiers) > _MAX_TIERS):
                        (older, first), (newer, second) = tiers[-2], tiers[-1]
                        merged = (older | newer) & folders  # folders gone since are not watched again
                        tiers[-2:] = [(merged, await self._watch(group, merged))] if merged else []
                        first.stop()
                        second.stop()
                    if started:
                        self.on_change({self.root / name for name in added})
                if not started:
                    task_status.started()
                    started = True
                await self._moved.wait()
                self._moved = anyio.Event()
                await anyio.sleep(DEBOUNCE_MS / 1000)  # a burst of new folders is watched at once
            top.stop()
            for _, watcher in tiers:
                watcher.stop()

    async def _watch(self, group: TaskGroup, folders: frozenset[str]) -> TreeWatcher:
        """A started recursive watch over the top-level ``folders``."""
        roots = await anyio.to_thread.run_sync(lambda: [self.root / name for name in sorted(folders)])
        watcher = TreeWatcher(roots, self.on_change, self.on_failure)
        await group.start(watcher.run)
        return watcher

    def _on_top(self, paths: set[Path]) -> None:
        self.on_change(paths)
        if any(path.parent == self.root and path.name not in _IGNORED_FOLDERS for path in paths):
            self._moved.set()

    def _top_folders(self) -> frozenset[str]:
        try:
            with os.scandir(self.root) as entries:
                return frozenset(
                    entry.name
                    for entry in entries
                    if entry.name not in _IGNORED_FOLDERS and entry.is_dir(follow_symlinks=False)
                )
        except OSError:
            return frozenset()

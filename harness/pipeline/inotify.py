"""Linux's inotify, one watch per folder: what a :class:`~harness.pipeline.watch.TreeWatcher` runs
on Linux.

A recursive watch is a kernel watch per folder and a table from watch descriptor to folder. The
table here loses a folder's entry as soon as the kernel says its watch is gone (``IN_IGNORED``:
the folder was removed) or the folder moves away, so it is as large as the tree is now, never as
large as the tree ever was: folders that come and go for months cost nothing that stays.

Every method blocks (a walk of the folders, a read of the queued events): the watcher calls them
from a worker thread, one call at a time, so the event loop runs on while a large tree is set up.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import struct
import sys
from collections.abc import Callable, Collection, Iterable

__all__ = ["Inotify", "inotify_available"]

_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ISDIR = 0x4000, 0x8000, 0x40000000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x1000000, 0x2000000, 0x4000000
# What a folder's watch reports: its entries written, created, moved and removed, and itself.
_MASK = (_MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF | _MOVE_SELF) | (
    _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
)
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
_READ_SIZE = 1 << 16
# A folder that vanished (or never was one) between being listed and being watched: not an error.
_GONE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})

_Calls = tuple[Callable[[int], int], Callable[[int, bytes, int], int], Callable[[int, int], int]]


@functools.cache
def _calls() -> _Calls | None:
    """``inotify_init1``, ``inotify_add_watch`` and ``inotify_rm_watch``, or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add, remove = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
    except (OSError, AttributeError):
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    remove.argtypes, remove.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return init, add, remove


def inotify_available() -> bool:
    """Whether this platform has inotify (Linux)."""
    return _calls() is not None


class Inotify:
    """An inotify instance watching ``roots`` (with ``recursive``, every folder below them whose
    name is not in ``skip``). Raises :class:`OSError` when it cannot be set up (no inotify, or the
    user's limit of instances or watches reached).

    :meth:`read` returns the paths changed since the last call; in a recursive watch it also
    watches the folders created or moved in meanwhile, and counts what was in them as changed
    (it may have been written before their watch began). :meth:`close` when done.
    """

    def __init__(self, roots: Iterable[str], *, recursive: bool, skip: Collection[str] = ()) -> None:
        calls = _calls()
        if calls is None:
            raise OSError(errno.ENOSYS, "inotify is not available on this platform")
        self._init, self._add, self._remove = calls
        self.roots = tuple(roots)
        self.recursive = recursive
        self.skip = frozenset(skip)
        self.folders: dict[int, str] = {}
        """The folders watched, by watch descriptor."""
        fd = self._init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise _error("cannot start watching")
        self.fd = fd
        try:
            self._watch_all()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop watching (the kernel drops every watch with the descriptor)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.folders.clear()

    def read(self) -> set[str]:
        """The paths changed since the last call: every event queued now, in order."""
        changed: set[str] = set()
        while True:
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return changed
            self._handle(chunk, changed)

    def _handle(self, chunk: bytes, changed: set[str]) -> None:
        offset = 0
        while offset < len(chunk):
            wd, mask, _, length = _HEADER.unpack_from(chunk, offset)
            offset += _HEADER.size
            name = os.fsdecode(chunk[offset : offset + length].rstrip(b"\0"))
            offset += length
            if mask & _Q_OVERFLOW:  # events were lost: everything may have changed
                changed.update(self.roots)
                self._watch_all()
                continue
            if mask & _IGNORED:  # the kernel dropped the watch: its folder is gone
                self.folders.pop(wd, None)
                continue
            folder = self.folders.get(wd)
            if folder is None:
                continue
            path = f"{folder}/{name}" if name else folder
            changed.add(path)
            if mask & (_DELETE_SELF | _MOVE_SELF) and folder in self.roots:
                self._watch_again(folder, changed)
                continue
            if not (mask & _ISDIR and name and self.recursive):
                continue
            if mask & _MOVED_FROM:  # gone from here: its watches would report it under this path
                self._forget(path)
            if mask & (_CREATE | _MOVED_TO) and name not in self.skip:
                found: list[str] = []
                self._watch_tree(path, found)
                changed.update(found)

    def _watch_again(self, root: str, changed: set[str]) -> None:
        """``root`` was removed or moved away (a deploy that swaps folders by renaming them):
        watch what is at its path now, all of it changed; an error when nothing is."""
        self._forget(root)
        if not self._watch(root):
            raise OSError(errno.ENOENT, f"{root} was removed or moved away: it is no longer watched")
        if self.recursive:
            found: list[str] = []
            self._watch_tree(root, found)
            changed.update(found)

    def _watch_all(self) -> None:
        for root in self.roots:
            if not self._watch(root):
                raise OSError(errno.ENOENT, f"cannot watch {root}: no such folder")
            if self.recursive:
                self._watch_tree(root, None)

    def _watch(self, folder: str) -> bool:
        """Watch ``folder``; False when it is gone (or not a folder)."""
        wd = self._add(self.fd, os.fsencode(folder), _MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code in _GONE:
                return False
            raise _error(f"cannot watch {folder}", code)
        self.folders[wd] = folder
        return True

    def _watch_tree(self, top: str, found: list[str] | None) -> None:
        """Watch ``top`` and the folders below it; with ``found``, list what is below it too.

        Each folder is watched before it is listed: what is created in it afterwards is an event,
        what was there before is in the listing."""
        pending = [top]
        while pending:
            folder = pending.pop()
            if not self._watch(folder):
                continue
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if found is not None:
                            found.append(entry.path)
                        if entry.name not in self.skip and entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
            except OSError:  # removed meanwhile: its parent reports that
                continue

    def _forget(self, top: str) -> None:
        """Stop watching ``top`` and the folders below it (a walk of the table: folders moving
        away are rare)."""
        below = top + "/"
        for wd, folder in list(self.folders.items()):
            if folder == top or folder.startswith(below):
                del self.folders[wd]
                self._remove(self.fd, wd)


def _error(what: str, code: int | None = None) -> OSError:
    code = ctypes.get_errno() if code is None else code
    reason = os.strerror(code)
    if code == errno.ENOSPC:
        reason += " (the limit fs.inotify.max_user_watches is reached)"
    elif code == errno.EMFILE:
        reason += " (the limit fs.inotify.max_user_instances is reached)"
    return OSError(code, f"{what}: {reason}")

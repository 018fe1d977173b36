"""A filesystem over a versioned key-value store, shared by every replica that opens the store."""

from __future__ import annotations

import errno
import os
import weakref
from contextlib import AbstractAsyncContextManager

import anyio

from .base import AbstractFilesystem, FileStat
from .errors import VersionConflict
from .paths import segment_problem
from .stores.base import KeyValueStore, StoreEntry

__all__ = ["RemoteFilesystem"]

_DIR_MODE = 0o755


def _check_agent_id(agent_id: str) -> str:
    if not isinstance(agent_id, str) or segment_problem(agent_id) is not None:
        raise ValueError(f"agent id {agent_id!r} must be a non-empty path segment")
    return agent_id


def _file_stat(path: str, entry: StoreEntry) -> FileStat:
    return FileStat(
        path=path,
        size=entry.size,
        mtime=entry.mtime,
        mode=entry.mode,
        is_dir=False,
        version=str(entry.version),
    )


def _dir_stat(path: str, mtime: float) -> FileStat:
    return FileStat(path=path, size=0, mtime=mtime, mode=_DIR_MODE, is_dir=True, version="")


class RemoteFilesystem(AbstractFilesystem):
    """Files as keys of a :class:`~filesystems.stores.KeyValueStore`.

    The shared workspace of agent ``agent_id`` lives under the keys ``agents/<agent_id>/shared/``
    and ``scoped(user_id)`` under ``agents/<agent_id>/users/<user_id>/``: the areas are disjoint
    key ranges, so no path of one view can name a key of another. Folders are implicit (a
    folder exists while a key lies below it); :meth:`mkdir` of an empty folder stores a marker
    key ending in ``/``. Versions are the store's write generation, so they never repeat.
    :meth:`generation` is the store's counter — one cheap query tells whether anything changed.

    There is no shell and no host path. Moves within the store are one transaction. With
    ``owns_store=True`` (the default) :meth:`aclose` closes the store; scoped views never do.
    """

    def __init__(
        self, store: KeyValueStore, *, agent_id: str, owns_store: bool = True, _prefix: str | None = None
    ) -> None:
        super().__init__()
        self._store = store
        self._agent_id = _check_agent_id(agent_id)
        # ``_prefix`` is given only to scoped views (a user's area); views never own the store.
        self._is_view = _prefix is not None
        self._prefix = _prefix or f"agents/{agent_id}/shared/"
        self._owns_store = owns_store and not self._is_view

    def __repr__(self) -> str:
        return f"RemoteFilesystem({self._store!r}, prefix={self._prefix!r})"

    @property
    def store(self) -> KeyValueStore:
        """The key-value store underneath."""
        return self._store

    def _key(self, path: str) -> str:
        return self._prefix + path

    def _below(self, path: str) -> str:
        """The key prefix of everything inside the folder ``path``."""
        return self._prefix + path + "/" if path else self._prefix

    def _path(self, key: str) -> str:
        return key[len(self._prefix) :]

    async def _aclose(self) -> None:
        if self._owns_store:
            await self._store.aclose()

    async def generation(self) -> int | None:
        """The store's write counter. Concurrent callers (many users' turns on one store) share
        one query in flight instead of each sending their own, so a caller may see the value as
        of up to one query before it asked; the next call sees any later write."""
        flight = _FLIGHTS.get(self._store)
        if flight is not None:
            await flight.done.wait()
            if flight.value is not None:
                return flight.value
            # The shared query failed or was cancelled: ask on our own (and raise our own error).
        flight = _FLIGHTS[self._store] = _Flight()
        try:
            flight.value = await self._store.generation()
            return flight.value
        finally:
            if _FLIGHTS.get(self._store) is flight:
                del _FLIGHTS[self._store]
            flight.done.set()

    # -- reading ----------------------------------------------------------------------------

    async def _read_bytes(self, path: str) -> bytes:
        record = await self._store.get(self._key(path))
        if record is None:
            if await self._store.has_prefix(self._below(path)):
                raise IsADirectoryError(f"{path!r} is a folder, not a file")
            raise FileNotFoundError(f"no such file: {path!r}")
        return record.data

    async def _read_many(self, paths: list[str]) -> dict[str, bytes]:
        found = await self._store.get_many([self._key(path) for path in paths])
        return {self._path(key): record.data for key, record in found.items()}

    async def _stat(self, path: str) -> FileStat:
        if not path:
            return _dir_stat("", 0.0)
        record = await self._store.get(self._key(path))
        if record is not None:
            return _file_stat(path, record)
        if await self._store.has_prefix(self._below(path)):
            return _dir_stat(path, 0.0)
        raise FileNotFoundError(f"no such file or folder: {path!r}")

    async def _below_or_raise(self, path: str) -> list[StoreEntry]:
        """Every entry below the folder ``path``; raises if ``path`` is a file."""
        entries = await self._store.list_prefix(self._below(path))
        if not entries and path and await self._store.get(self._key(path)) is not None:
            raise NotADirectoryError(f"{path!r} is a file, not a folder")
        return entries

    async def _list(self, path: str) -> list[FileStat]:
        entries = await self._below_or_raise(path)
        if not entries and path:
            raise FileNotFoundError(f"no such folder: {path!r}")
        base = self._below(path)
        files: list[FileStat] = []
        folders: dict[str, float] = {}
        for entry in entries:
            rest = entry.key[len(base) :]
            if not rest:
                continue
            name, slash, _ = rest.partition("/")
            child = f"{path}/{name}" if path else name
            if slash:
                folders[child] = max(folders.get(child, 0.0), entry.mtime)
            else:
                files.append(_file_stat(child, entry))
        return files + [_dir_stat(child, mtime) for child, mtime in folders.items()]

    async def _walk(self, path: str) -> list[FileStat]:
        entries = await self._below_or_raise(path)
        return [_file_stat(self._path(entry.key), entry) for entry in entries if not entry.key.endswith("/")]

    # -- writing ----------------------------------------------------------------------------

    async def _check_parents(self, path: str) -> None:
        """Refuse a path whose parent segments are files."""
        parts = path.split("/")
        parents = [self._key("/".join(parts[:i])) for i in range(1, len(parts))]
        if parents and await self._store.get_many(parents):
            raise NotADirectoryError(f"a parent of {path!r} is a file, not a folder")

    async def _check_file_target(self, path: str) -> None:
        await self._check_parents(path)
        if await self._store.has_prefix(self._below(path)):
            raise IsADirectoryError(f"{path!r} is a folder, not a file")

    async def _write_bytes(self, path: str, data: bytes, mode: int | None) -> FileStat:
        await self._check_file_target(path)
        return _file_stat(path, await self._store.put(self._key(path), data, mode=mode))

    async def _create_exclusive(self, path: str, data: bytes) -> FileStat:
        await self._check_file_target(path)
        try:
            entry = await self._store.put_if_version(self._key(path), data, None)
        except VersionConflict:
            raise FileExistsError(f"{path!r} already exists") from None
        return _file_stat(path, entry)

    async def _compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat:
        expected: int | None = None
        if expected_version is not None:
            try:
                expected = int(expected_version)
            except ValueError:
                raise VersionConflict(f"{path!r}: {expected_version!r} is not a version of this store") from None
        await self._check_file_target(path)
        return _file_stat(path, await self._store.put_if_version(self._key(path), data, expected))

    async def _append(self, path: str, data: bytes) -> None:
        await self._check_file_target(path)
        await self._store.append(self._key(path), data)

    async def _mkdir(self, path: str) -> None:
        if not path:
            return
        await self._check_parents(path)
        if await self._store.get(self._key(path)) is not None:
            raise FileExistsError(f"{path!r} exists and is a file")
        if not await self._store.has_prefix(self._below(path)):
            await self._store.put(self._below(path), b"", mode=_DIR_MODE)

    async def _delete(self, path: str) -> None:
        await self._store.delete(self._key(path))
        await self._store.delete_prefix(self._below(path))

    async def _move(self, src: str, dst: str) -> None:
        if await self._store.get(self._key(src)) is not None:
            await self._check_file_target(dst)
            await self._store.rename({self._key(src): self._key(dst)})
            return
        entries = await self._store.list_prefix(self._below(src))
        if not entries:
            raise FileNotFoundError(f"no such file or folder: {src!r}")
        await self._check_parents(dst)
        if await self._store.get(self._key(dst)) is not None:
            raise NotADirectoryError(f"cannot move folder {src!r} onto the file {dst!r}")
        occupied = await self._store.list_prefix(self._below(dst))
        if any(entry.key != self._below(dst) for entry in occupied):
            raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), dst)
        old, new = self._below(src), self._below(dst)
        await self._store.rename({entry.key: new + entry.key[len(old) :] for entry in entries})

    def _lock(self, key: str, timeout: float | None) -> AbstractAsyncContextManager[None]:
        return self._store.lock(self._prefix + key, timeout=timeout)

    def _scoped(self, user_id: str) -> RemoteFilesystem:
        # A view of a view nests, like a sub-folder of a local user area.
        prefix = f"{self._prefix}{user_id}/" if self._is_view else f"agents/{self._agent_id}/users/{user_id}/"
        return RemoteFilesystem(self._store, agent_id=self._agent_id, owns_store=False, _prefix=prefix)


class _Flight:
    """One generation query that concurrent callers wait on."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: int | None = None


_FLIGHTS: weakref.WeakKeyDictionary[KeyValueStore, _Flight] = weakref.WeakKeyDictionary()

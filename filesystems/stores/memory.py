"""An in-process key-value store, for tests, examples and single-process apps."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio

from ..errors import LockTimeout, VersionConflict
from .base import DEFAULT_MODE, KeyValueStore, StoreEntry, StoreRecord, encode_key

__all__ = ["MemoryKeyValueStore"]


class MemoryKeyValueStore(KeyValueStore):
    """Values in a dict of this process. Nothing is shared with other processes; every
    operation completes without yielding, so each one is atomic for the tasks of the process."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, StoreRecord] = {}
        self._generation = 0
        # Semaphores, not Locks: a second acquire by the same task must wait, not raise.
        self._locks: dict[str, anyio.Semaphore] = {}

    def _sorted_keys(self, prefix: str) -> list[str]:
        return sorted((k for k in self._records if k.startswith(prefix)), key=lambda k: k.encode("utf-8"))

    def _store(self, key: str, data: bytes, mode: int | None) -> StoreEntry:
        encode_key(key)
        previous = self._records.get(key)
        if mode is None:
            mode = previous.mode if previous is not None else DEFAULT_MODE
        self._generation += 1
        record = StoreRecord(
            key=key,
            size=len(data),
            mtime=time.time(),
            mode=mode,
            version=self._generation,
            data=data,
        )
        self._records[key] = record
        return _entry(record)

    async def get(self, key: str) -> StoreRecord | None:
        return self._records.get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, StoreRecord]:
        return {key: self._records[key] for key in keys if key in self._records}

    async def has_prefix(self, prefix: str) -> bool:
        return any(key.startswith(prefix) for key in self._records)

    async def list_prefix(self, prefix: str) -> list[StoreEntry]:
        return [_entry(self._records[key]) for key in self._sorted_keys(prefix)]

    async def put(self, key: str, data: bytes, *, mode: int | None = None) -> StoreEntry:
        return self._store(key, bytes(data), mode)

    async def put_if_version(
        self, key: str, data: bytes, expected_version: int | None, *, mode: int | None = None
    ) -> StoreEntry:
        current = self._records.get(key)
        found = None if current is None else current.version
        if found != expected_version:
            raise VersionConflict(f"key {key!r} is at version {found}, not the expected {expected_version}")
        return self._store(key, bytes(data), mode)

    async def append(self, key: str, data: bytes) -> StoreEntry:
        current = self._records.get(key)
        return self._store(key, (current.data if current else b"") + bytes(data), None)

    async def delete(self, key: str) -> bool:
        if self._records.pop(key, None) is None:
            return False
        self._generation += 1
        return True

    async def delete_prefix(self, prefix: str) -> int:
        keys = self._sorted_keys(prefix)
        for key in keys:
            del self._records[key]
        if keys:
            self._generation += 1
        return len(keys)

    async def rename(self, moves: Mapping[str, str]) -> None:
        present = {old: new for old, new in moves.items() if old in self._records}
        if not present:
            return
        for new in present.values():
            encode_key(new)
        self._generation += 1
        taken = {old: self._records.pop(old) for old in present}
        for old, new in present.items():
            self._records[new] = StoreRecord(
                key=new,
                size=taken[old].size,
                mtime=taken[old].mtime,
                mode=taken[old].mode,
                version=self._generation,
                data=taken[old].data,
            )

    def lock(self, name: str, *, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        return self._hold(name, timeout)

    @asynccontextmanager
    async def _hold(self, name: str, timeout: float | None) -> AsyncIterator[None]:
        lock = self._locks.setdefault(name, anyio.Semaphore(1))
        with anyio.move_on_after(timeout) as scope:
            await lock.acquire()
        if scope.cancelled_caught:
            raise LockTimeout(f"lock {name!r} is held elsewhere; gave up after {timeout} s")
        try:
            yield
        finally:
            lock.release()

    async def generation(self) -> int:
        return self._generation


def _entry(record: StoreRecord) -> StoreEntry:
    return StoreEntry(
        key=record.key,
        size=record.size,
        mtime=record.mtime,
        mode=record.mode,
        version=record.version,
    )

"""The versioned key-value store contract behind :class:`~filesystems.RemoteFilesystem`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from ..resource import AsyncResource

__all__ = [
    "DEFAULT_MODE",
    "MAX_KEY_BYTES",
    "KeyValueStore",
    "StoreEntry",
    "StoreRecord",
    "encode_key",
    "prefix_upper_bound",
]

#: Mode recorded for a value written without one.
DEFAULT_MODE = 0o644

#: Longest key, in UTF-8 bytes, every store accepts.
MAX_KEY_BYTES = 1024


@dataclass(frozen=True, kw_only=True)
class StoreEntry:
    """Metadata of one stored value.

    ``version`` is the store's generation at the value's last write: it grows on every write
    and is never reused within a store, even after a delete, so a compare-and-set cannot be
    fooled by a value that was deleted and written again.
    """

    key: str
    size: int
    mtime: float
    mode: int
    version: int


@dataclass(frozen=True, kw_only=True)
class StoreRecord(StoreEntry):
    """A stored value with its metadata."""

    data: bytes


def prefix_upper_bound(prefix: bytes) -> bytes:
    """The smallest byte string above every key starting with ``prefix`` (UTF-8 has no 0xff)."""
    return prefix + b"\xff"


def encode_key(key: str) -> bytes:
    """``key`` as UTF-8, refusing empty, NUL-containing and over-long keys."""
    raw = key.encode("utf-8")
    if not raw or b"\x00" in raw or len(raw) > MAX_KEY_BYTES:
        raise ValueError(f"store key {key[:64]!r} must be 1..{MAX_KEY_BYTES} UTF-8 bytes without NUL")
    return raw


class KeyValueStore(AsyncResource, ABC):
    """A versioned key-value store: bytes under string keys, shared by everyone who opens it.

    Every write (put, append, delete, rename) bumps a store-wide :meth:`generation` counter in
    the same transaction and stamps the written values with it as their version. Readers call
    :meth:`generation` — one cheap query — to learn whether anything changed since they last
    looked. A write by one process is visible to every other process on its next read.

    Keys are non-empty UTF-8 strings of at most 1024 bytes without NUL; listings by prefix are
    complete and sorted by key (bytewise). The store is an async context manager with an
    idempotent :meth:`aclose`; backends that connect lazily connect on first use. Backend
    failures (database down) raise :class:`~filesystems.StoreUnavailable`.
    """

    @abstractmethod
    async def get(self, key: str) -> StoreRecord | None:
        """The value under ``key``, or ``None``."""

    @abstractmethod
    async def get_many(self, keys: Sequence[str]) -> dict[str, StoreRecord]:
        """The values under ``keys`` that exist, in one round trip."""

    @abstractmethod
    async def has_prefix(self, prefix: str) -> bool:
        """Whether any key starts with ``prefix``."""

    @abstractmethod
    async def list_prefix(self, prefix: str) -> list[StoreEntry]:
        """Metadata of every key starting with ``prefix`` (all of them), sorted by key."""

    @abstractmethod
    async def put(self, key: str, data: bytes, *, mode: int | None = None) -> StoreEntry:
        """Store ``data`` under ``key`` unconditionally; ``mode=None`` keeps the old mode."""

    @abstractmethod
    async def put_if_version(
        self, key: str, data: bytes, expected_version: int | None, *, mode: int | None = None
    ) -> StoreEntry:
        """Store ``data`` only if ``key`` is at ``expected_version`` (``None``: absent).

        Raises :class:`~filesystems.VersionConflict` otherwise; check and write are one
        transaction, so of N concurrent writers expecting one version exactly one wins.
        """

    @abstractmethod
    async def append(self, key: str, data: bytes) -> StoreEntry:
        """Append ``data`` to the value under ``key`` (created if missing), atomically."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove ``key``; whether it existed."""

    @abstractmethod
    async def delete_prefix(self, prefix: str) -> int:
        """Remove every key starting with ``prefix``; how many were removed."""

    @abstractmethod
    async def rename(self, moves: Mapping[str, str]) -> None:
        """Move values ``{old key: new key}`` in one transaction, replacing existing new keys.

        Missing old keys are skipped.
        """

    @abstractmethod
    def lock(self, name: str, *, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        """An exclusive advisory lock on ``name``; :class:`~filesystems.LockTimeout` on timeout.

        Shared stores (SQLite, MySQL) exclude holders in other processes too; the lock is freed
        when its holder exits the block or dies.
        """

    @abstractmethod
    async def generation(self) -> int:
        """The store-wide write counter (see the class docstring)."""

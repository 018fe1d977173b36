"""Filesystems written outside the package pass the conformance suite by subclassing it, as a
plug-in author would: a filesystem built from scratch over dicts, and a subclass of the local one
with a shell whose peer process is opened by a function of this module."""

from __future__ import annotations

import builtins
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
import pytest_asyncio

from filesystems import AbstractFilesystem, FileStat, LocalFilesystem, LockTimeout, VersionConflict
from filesystems.testing import FilesystemCase, FilesystemConformance, PeerSpec


@dataclass
class _File:
    data: bytes
    mode: int
    version: str
    mtime: float


@dataclass
class _Tree:
    """What a dict filesystem and its scoped views share: files and folders by full path."""

    files: dict[str, _File] = field(default_factory=dict)
    folders: set[str] = field(default_factory=lambda: {""})
    writes: int = 0
    locks: dict[str, anyio.Semaphore] = field(default_factory=dict)


class DictFilesystem(AbstractFilesystem):
    """Files held in a dict; a user's area is the folder named by the user id."""

    def __init__(self, tree: _Tree | None = None, root: str = "") -> None:
        super().__init__()
        self._tree = tree or _Tree()
        self._root = root

    def _full(self, path: str) -> str:
        return "/".join(part for part in (self._root, path) if part)

    def _local(self, full: str) -> str:
        return full.removeprefix(self._root).lstrip("/")

    def _entry(self, full: str) -> FileStat:
        file = self._tree.files.get(full)
        if file is not None:
            return FileStat(
                path=self._local(full),
                size=len(file.data),
                mtime=file.mtime,
                mode=file.mode,
                is_dir=False,
                version=file.version,
            )
        if full in self._tree.folders:
            return FileStat(path=self._local(full), size=0, mtime=time.time(), mode=0o755, is_dir=True, version="")
        raise FileNotFoundError(f"no file or folder {self._local(full)!r}")

    def _below(self, full: str) -> builtins.list[str]:
        prefix = f"{full}/" if full else ""
        return [path for path in self._tree.files if path.startswith(prefix)]

    async def _read_bytes(self, path: str) -> bytes:
        if self._entry(self._full(path)).is_dir:
            raise IsADirectoryError(f"{path!r} is a folder")
        return self._tree.files[self._full(path)].data

    async def _read_many(self, paths: builtins.list[str]) -> dict[str, bytes]:
        files = self._tree.files
        return {path: files[self._full(path)].data for path in paths if self._full(path) in files}

    async def _stat(self, path: str) -> FileStat:
        return self._entry(self._full(path))

    async def _list(self, path: str) -> builtins.list[FileStat]:
        full = self._full(path)
        if not self._entry(full).is_dir:
            raise NotADirectoryError(f"{path!r} is a file")
        prefix = f"{full}/" if full else ""
        below = [p for p in [*self._tree.files, *self._tree.folders] if p.startswith(prefix) and p != full]
        return [self._entry(child) for child in {prefix + p[len(prefix) :].split("/")[0] for p in below}]

    async def _walk(self, path: str) -> builtins.list[FileStat]:
        full = self._full(path)
        if full in self._tree.files:
            raise NotADirectoryError(f"{path!r} is a file")
        return [self._entry(found) for found in self._below(full)]

    async def _write_bytes(self, path: str, data: bytes, mode: int | None) -> FileStat:
        full = self._full(path)
        if full in self._tree.folders:
            raise IsADirectoryError(f"{path!r} is a folder")
        await self._mkdir(path.rpartition("/")[0])
        old = self._tree.files.get(full)
        self._tree.writes += 1
        kept = mode if mode is not None else (old.mode if old else 0o644)
        self._tree.files[full] = _File(data=data, mode=kept, version=str(self._tree.writes), mtime=time.time())
        return self._entry(full)

    async def _create_exclusive(self, path: str, data: bytes) -> FileStat:
        if self._full(path) in self._tree.files:
            raise FileExistsError(f"{path!r} exists")
        return await self._write_bytes(path, data, None)

    async def _compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat:
        current = self._tree.files.get(self._full(path))
        if (current.version if current else None) != expected_version:
            raise VersionConflict(f"{path!r} is not at version {expected_version!r}")
        return await self._write_bytes(path, data, None)

    async def _append(self, path: str, data: bytes) -> None:
        current = self._tree.files.get(self._full(path))
        await self._write_bytes(path, (current.data if current else b"") + data, None)

    async def _mkdir(self, path: str) -> None:
        parts = self._full(path).split("/") if self._full(path) else []
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            if folder in self._tree.files:
                raise FileExistsError(f"a file is in the way of folder {path!r}")
            self._tree.folders.add(folder)

    async def _delete(self, path: str) -> None:
        full = self._full(path)
        for found in [full, *self._below(full)]:
            self._tree.files.pop(found, None)
        self._tree.folders -= {full} | {f for f in self._tree.folders if f.startswith(f"{full}/")}

    async def _move(self, src: str, dst: str) -> None:
        source = self._full(src)
        self._entry(source)
        moved = {
            found: self._tree.files[found] for found in [source, *self._below(source)] if found in self._tree.files
        }
        folders = {f for f in self._tree.folders if f == source or f.startswith(f"{source}/")}
        await self._delete(src)
        for found, file in moved.items():
            await self._write_bytes(dst + self._local(found)[len(src) :], file.data, file.mode)
        for folder in folders:
            await self._mkdir(dst + self._local(folder)[len(src) :])

    def _lock(self, key: str, timeout: float | None) -> AbstractAsyncContextManager[None]:
        # A semaphore, not a Lock: the same task taking the key twice must wait like anyone else.
        lock = self._tree.locks.setdefault(f"{self._root}:{key}", anyio.Semaphore(1))

        @asynccontextmanager
        async def held() -> AsyncIterator[None]:
            try:
                with anyio.fail_after(timeout):
                    await lock.acquire()
            except TimeoutError as exc:
                raise LockTimeout(f"lock {key!r} is held elsewhere") from exc
            try:
                yield
            finally:
                lock.release()

        return held()

    def _scoped(self, user_id: str) -> DictFilesystem:
        return DictFilesystem(self._tree, self._full(user_id))


class HostFilesystem(LocalFilesystem):
    """A third party's own filesystem built on the local one, with a shell."""


def open_host(root: str) -> HostFilesystem:
    """How the peer process of the cross-process tests opens a :class:`HostFilesystem`."""
    return HostFilesystem(root)


class TestThirdPartyFilesystems(FilesystemConformance):
    @pytest_asyncio.fixture(params=["dict", "host"])
    async def filesystem_case(self, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FilesystemCase]:
        if request.param == "dict":
            async with DictFilesystem() as fs:
                yield FilesystemCase(fs=fs)
            return
        async with HostFilesystem(tmp_path, shell=True, output_limit=1000) as host:
            peer = PeerSpec(opener=f"{__name__}:open_host", arguments={"root": str(tmp_path)})
            yield FilesystemCase(fs=host, output_limit=1000, peer=peer)

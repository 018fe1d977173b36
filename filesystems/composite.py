"""A filesystem that routes path prefixes to other filesystems."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Self

from .base import AbstractFilesystem, FileStat, normalize_path

__all__ = ["CompositeFilesystem"]


def _join(prefix: str, inner: str) -> str:
    if not prefix:
        return inner
    return f"{prefix}/{inner}" if inner else prefix


def _under(path: str, folder: str) -> bool:
    """Whether ``path`` lies strictly below ``folder`` (``""`` is the root)."""
    return path != folder and (not folder or path.startswith(folder + "/"))


class CompositeFilesystem(AbstractFilesystem):
    """``default`` everywhere except below the prefixes of ``routes``; the longest prefix wins.

    ``CompositeFilesystem(local, routes={"knowledge": remote})`` serves ``knowledge/a.md`` as
    ``a.md`` of ``remote``. Results carry full paths; a route's prefix appears as a folder in
    the listing of its parent; :meth:`walk` and :meth:`delete` cover the routes below the path.
    A move across routes is a copy followed by a delete (not atomic). Locks and
    :meth:`generation` come from ``default`` (the generation is the sum of the children's when
    they all have one). There is no shell. Entering the composite enters every child;
    :meth:`aclose` closes them all (a scoped view closes nothing).
    """

    def __init__(
        self,
        default: AbstractFilesystem,
        routes: Mapping[str, AbstractFilesystem] | None = None,
        *,
        _owns_children: bool = True,
    ) -> None:
        super().__init__()
        self._default = default
        self._routes: dict[str, AbstractFilesystem] = {}
        for prefix, fs in (routes or {}).items():
            normalised = normalize_path(prefix)
            if not normalised:
                raise ValueError("a route prefix must not be the root; use default")
            self._routes[normalised] = fs
        self._by_length = sorted(self._routes, key=len, reverse=True)
        self._owns_children = _owns_children
        self._stack: AsyncExitStack | None = None

    def __repr__(self) -> str:
        return f"CompositeFilesystem({self._default!r}, routes={self._routes!r})"

    @property
    def _children(self) -> list[AbstractFilesystem]:
        return [self._default, *self._routes.values()]

    async def __aenter__(self) -> Self:
        if self._owns_children and self._stack is None:
            async with AsyncExitStack() as stack:
                for child in self._children:
                    await stack.enter_async_context(child)
                self._stack = stack.pop_all()
        return self

    async def _aclose(self) -> None:
        if not self._owns_children:
            return
        try:
            if self._stack is not None:
                await self._stack.aclose()
        finally:
            # Children never entered are closed too; aclose() is idempotent everywhere.
            async with AsyncExitStack() as stack:
                for child in self._children:
                    stack.push_async_callback(child.aclose)

    # -- routing ----------------------------------------------------------------------------

    def _route(self, path: str) -> tuple[str, AbstractFilesystem, str]:
        """(route prefix, filesystem, path inside it) of ``path``."""
        for prefix in self._by_length:
            if path == prefix or path.startswith(prefix + "/"):
                return prefix, self._routes[prefix], path[len(prefix) + 1 :]
        return "", self._default, path

    def _routes_below(self, path: str) -> list[str]:
        return [prefix for prefix in self._routes if _under(prefix, path)]

    def _mapped(self, prefix: str, stats: list[FileStat]) -> list[FileStat]:
        """Stats of the route at ``prefix`` with full paths, minus what deeper routes shadow."""
        mapped = []
        for stat in stats:
            full = _join(prefix, stat.path)
            if self._route(full)[0] == prefix:
                mapped.append(dataclasses.replace(stat, path=full))
        return mapped

    # -- reading ----------------------------------------------------------------------------

    async def _read_bytes(self, path: str) -> bytes:
        _, fs, inner = self._route(path)
        return await fs.read_bytes(inner)

    async def _read_many(self, paths: list[str]) -> dict[str, bytes]:
        groups: dict[str, list[str]] = {}
        for path in paths:
            groups.setdefault(self._route(path)[0], []).append(path)
        found: dict[str, bytes] = {}
        for prefix, group in groups.items():
            fs = self._routes[prefix] if prefix else self._default
            inner = {path[len(prefix) + 1 :] if prefix else path: path for path in group}
            for key, data in (await fs.read_many(list(inner))).items():
                found[inner[key]] = data
        return found

    async def _stat(self, path: str) -> FileStat:
        _, fs, inner = self._route(path)
        try:
            return dataclasses.replace(await fs.stat(inner), path=path)
        except FileNotFoundError:
            if self._routes_below(path):
                return FileStat(path=path, size=0, mtime=0.0, mode=0o755, is_dir=True, version="")
            raise

    async def _list(self, path: str) -> list[FileStat]:
        prefix, fs, inner = self._route(path)
        mounts = self._routes_below(path)
        try:
            entries = self._mapped(prefix, await fs.list(inner))
        except FileNotFoundError:
            if not mounts:
                raise
            entries = []
        by_name = {entry.name: entry for entry in entries}
        for mount in mounts:
            name = mount[len(path) + 1 :].split("/")[0] if path else mount.split("/")[0]
            child = _join(path, name)
            if name not in by_name or not by_name[name].is_dir:
                by_name[name] = FileStat(path=child, size=0, mtime=0.0, mode=0o755, is_dir=True, version="")
        return list(by_name.values())

    async def _walk(self, path: str) -> list[FileStat]:
        prefix, fs, inner = self._route(path)
        files = self._mapped(prefix, await fs.walk(inner))
        for mount in self._routes_below(path):
            files += self._mapped(mount, await self._routes[mount].walk(""))
        return files

    async def generation(self) -> int | None:
        total = 0
        for child in self._children:
            value = await child.generation()
            if value is None:
                return None
            total += value
        return total

    # -- writing ----------------------------------------------------------------------------

    async def _write_bytes(self, path: str, data: bytes, mode: int | None) -> FileStat:
        _, fs, inner = self._route(path)
        return dataclasses.replace(await fs.write_bytes(inner, data, mode=mode), path=path)

    async def _create_exclusive(self, path: str, data: bytes) -> FileStat:
        _, fs, inner = self._route(path)
        return dataclasses.replace(await fs.create_exclusive(inner, data), path=path)

    async def _compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat:
        _, fs, inner = self._route(path)
        stat = await fs.compare_and_set(inner, data, expected_version)
        return dataclasses.replace(stat, path=path)

    async def _append(self, path: str, data: bytes) -> None:
        _, fs, inner = self._route(path)
        await fs.append(inner, data)

    async def _mkdir(self, path: str) -> None:
        _, fs, inner = self._route(path)
        await fs.mkdir(inner)

    async def _delete(self, path: str) -> None:
        _, fs, inner = self._route(path)
        if inner:
            await fs.delete(inner)
        else:
            for entry in await fs.list(""):
                await fs.delete(entry.path)
        for mount in self._routes_below(path):
            routed = self._routes[mount]
            for entry in await routed.list(""):
                await routed.delete(entry.path)

    async def _move(self, src: str, dst: str) -> None:
        _, src_fs, src_inner = self._route(src)
        _, dst_fs, dst_inner = self._route(dst)
        crosses = src_fs is not dst_fs or not src_inner or not dst_inner
        if not crosses and not self._routes_below(src) and not self._routes_below(dst):
            await src_fs.move(src_inner, dst_inner)
            return
        source = await self._stat(src)
        files = await self._walk(src) if source.is_dir else [source]
        contents = await self._read_many([file.path for file in files])
        for file in files:
            target = dst + file.path[len(src) :]
            await self._write_bytes(target, contents[file.path], file.mode)
        if source.is_dir:
            await self._mkdir(dst)
        await self._delete(src)

    def _lock(self, key: str, timeout: float | None) -> AbstractAsyncContextManager[None]:
        return self._default.lock(key, timeout=timeout)

    def _scoped(self, user_id: str) -> CompositeFilesystem:
        return CompositeFilesystem(
            self._default.scoped(user_id),
            {prefix: fs.scoped(user_id) for prefix, fs in self._routes.items()},
            _owns_children=False,
        )

    def _host_path(self, path: str) -> pathlib.Path | None:
        _, fs, inner = self._route(path)
        return fs.host_path(inner)

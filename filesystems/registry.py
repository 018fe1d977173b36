"""Key-value stores by URL scheme and filesystems by mode name, for the CLI and configuration files.

======================================================  ======================================
store URL                                               store
======================================================  ======================================
``memory:``                                             ``MemoryKeyValueStore``
``sqlite:///abs/path.db`` or ``sqlite://rel/path.db``   ``SQLiteKeyValueStore``
``mysql://user:pass@host:3306/db?table=t``              ``MySQLKeyValueStore``
======================================================  ======================================

==============  =====================================================================
mode            filesystem
==============  =====================================================================
``local``       ``LocalFilesystem(workspace)`` (no shell)
``local-shell`` ``LocalFilesystem(workspace, shell=True)`` (trusted: the host shell)
``sandbox``     ``SandboxFilesystem(workspace)`` (bubblewrap)
``remote``      ``RemoteFilesystem`` over ``open_store(store)``; without a store an
                embedded SQLite file ``<workspace>/.harness/store.db``
==============  =====================================================================

Code builds these classes directly; the strings are sugar. Third parties add store schemes
with :func:`register_store` or the entry-point group ``harness.stores`` (name = scheme, value
= a callable taking the URL and returning a ``KeyValueStore``), and modes with
:func:`register_filesystem` or the group ``harness.filesystems`` (name = mode, value = a
:class:`FilesystemFactory`). Unknown names and malformed URLs raise ``ValueError``; messages
never show a URL's password.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ._redact import redact_url
from .base import AbstractFilesystem
from .local import DEFAULT_TIMEOUT, LocalFilesystem
from .paths import MACHINE_DIR
from .remote import RemoteFilesystem
from .sandbox import SandboxFilesystem, SandboxLimits
from .stores import KeyValueStore, MemoryKeyValueStore, MySQLKeyValueStore, SQLiteKeyValueStore

__all__ = [
    "FILESYSTEM_ENTRY_POINT_GROUP",
    "STORE_ENTRY_POINT_GROUP",
    "FilesystemFactory",
    "StoreFactory",
    "known_filesystem_modes",
    "known_store_schemes",
    "open_filesystem",
    "open_store",
    "register_filesystem",
    "register_store",
]

STORE_ENTRY_POINT_GROUP = "harness.stores"
FILESYSTEM_ENTRY_POINT_GROUP = "harness.filesystems"

StoreFactory = Callable[[str], KeyValueStore]
"""Builds a store from its full URL."""


class FilesystemFactory(Protocol):
    """Builds the filesystem of one mode; takes every option and ignores those it has no use for."""

    def __call__(
        self,
        workspace: Path,
        *,
        store: str,
        agent_id: str,
        network: bool,
        timeout: float | None,
        limits: SandboxLimits,
        env: Mapping[str, str],
        path: Sequence[str],
    ) -> AbstractFilesystem: ...


_F = TypeVar("_F")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


class _Registry(Generic[_F]):
    """Names → factories: built in, registered in code, or advertised through an entry-point group."""

    def __init__(self, what: str, group: str, builtin: dict[str, _F]) -> None:
        self._what = what
        self._group = group
        self._builtin = builtin
        self._registered: dict[str, _F] = {}

    def register(self, name: str, factory: _F, *, replace: bool) -> None:
        name = name.lower()
        if not _NAME.fullmatch(name):
            raise ValueError(f"invalid {self._what} name {name!r}")
        if not replace and name in self.known():
            raise ValueError(f"{self._what} {name!r} is already registered; pass replace=True to override it")
        self._registered[name] = factory

    def _advertised(self) -> dict[str, importlib.metadata.EntryPoint]:
        return {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=self._group)}

    def known(self) -> list[str]:
        return sorted({*self._builtin, *self._registered, *self._advertised()})

    def factory(self, name: str) -> _F:
        """The factory of ``name`` (messages show only the name: the rest may hold a password)."""
        name = name.lower()
        found = self._registered.get(name) or self._builtin.get(name)
        if found is not None:
            return found
        entry = self._advertised().get(name)
        if entry is None:
            raise ValueError(f"unknown {self._what} {name!r}; known: {', '.join(self.known())}")
        try:
            loaded = entry.load()
        except Exception as exc:  # a broken plug-in must not look like a missing one
            raise ValueError(f"cannot load the {self._what} plug-in {entry.value!r} for {name!r}: {exc}") from exc
        if not callable(loaded):
            raise ValueError(f"the {self._what} plug-in {entry.value!r} for {name!r} is not callable")
        factory: _F = loaded
        self._registered[name] = factory
        return factory


def _sqlite(url: str) -> KeyValueStore:
    # SQLAlchemy's convention: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db`` absolute.
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url.removeprefix("sqlite://")
    if not path or path == url:
        raise ValueError(f"store {url!r}: no database file; expected sqlite:///path/to/store.db")
    return SQLiteKeyValueStore(Path(path))


def _memory(url: str) -> KeyValueStore:
    return MemoryKeyValueStore()


_STORES: _Registry[StoreFactory] = _Registry(
    "store scheme",
    STORE_ENTRY_POINT_GROUP,
    {"memory": _memory, "sqlite": _sqlite, "mysql": MySQLKeyValueStore},
)


def register_store(scheme: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Make :func:`open_store` build ``scheme:`` URLs with ``factory(url)``.

    Raises ``ValueError`` for a malformed scheme, or one already taken unless ``replace``.
    """
    _STORES.register(scheme, factory, replace=replace)


def known_store_schemes() -> list[str]:
    """Every scheme :func:`open_store` understands: built in, registered and advertised."""
    return _STORES.known()


def open_store(url: str) -> KeyValueStore:
    """The key-value store a URL names (see the module docstring); ``memory`` alone is ``memory:``.

    Raises ``ValueError`` naming the (redacted) URL and the known schemes.
    """
    url = url.strip()
    scheme, colon, _ = url.partition(":")
    if not colon and url != "memory":
        raise ValueError(
            f"store {redact_url(url)!r}: expected a URL such as memory:, sqlite:///path "
            "or mysql://user:pass@host:port/db"
        )
    store = _STORES.factory(scheme)(url)
    if not isinstance(store, KeyValueStore):
        raise ValueError(f"the factory for {redact_url(url)!r} did not return a KeyValueStore")
    return store


def _local(workspace: Path, **_: object) -> AbstractFilesystem:
    return LocalFilesystem(workspace)


def _local_shell(
    workspace: Path, *, timeout: float | None, env: Mapping[str, str], path: Sequence[str], **_: object
) -> AbstractFilesystem:
    return LocalFilesystem(workspace, shell=True, timeout=timeout, env=env, path=path)


def _sandbox(
    workspace: Path,
    *,
    network: bool,
    timeout: float | None,
    limits: SandboxLimits,
    env: Mapping[str, str],
    path: Sequence[str],
    **_: object,
) -> AbstractFilesystem:
    return SandboxFilesystem(workspace, network=network, timeout=timeout, limits=limits, env=env, path=path)


def _remote(workspace: Path, *, store: str, agent_id: str, **_: object) -> AbstractFilesystem:
    return RemoteFilesystem(open_store(store or f"sqlite:///{workspace / MACHINE_DIR / 'store.db'}"), agent_id=agent_id)


_MODES: _Registry[FilesystemFactory] = _Registry(
    "filesystem mode",
    FILESYSTEM_ENTRY_POINT_GROUP,
    {"local": _local, "local-shell": _local_shell, "sandbox": _sandbox, "remote": _remote},
)


def register_filesystem(mode: str, factory: FilesystemFactory, *, replace: bool = False) -> None:
    """Make :func:`open_filesystem` build ``mode`` with ``factory``.

    Raises ``ValueError`` for a malformed name, or one already taken unless ``replace``.
    """
    _MODES.register(mode, factory, replace=replace)


def known_filesystem_modes() -> list[str]:
    """Every mode :func:`open_filesystem` understands: built in, registered and advertised."""
    return _MODES.known()


def open_filesystem(
    mode: str,
    workspace: str | Path,
    *,
    store: str = "",
    agent_id: str = "assistant",
    network: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    limits: SandboxLimits = SandboxLimits(),
    env: Mapping[str, str] | None = None,
    path: Sequence[str] = (),
) -> AbstractFilesystem:
    """The filesystem of ``mode`` rooted at ``workspace`` (see the module docstring).

    ``store`` is the ``remote`` mode's store URL, ``agent_id`` its agent; ``timeout`` is the
    ceiling of every shell command; ``env`` (extra variables) and ``path`` (extra ``PATH``
    folders, searched first) shape every shell's environment; ``network`` and ``limits`` apply
    to sandboxed commands.
    Raises ``ValueError`` for an unknown mode or store URL.
    """
    factory = _MODES.factory(mode)
    filesystem = factory(
        Path(workspace),
        store=store,
        agent_id=agent_id,
        network=network,
        timeout=timeout,
        limits=limits,
        env=dict(env or {}),
        path=tuple(path),
    )
    if not isinstance(filesystem, AbstractFilesystem):
        raise ValueError(f"the factory for filesystem mode {mode!r} did not return an AbstractFilesystem")
    return filesystem

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

Code builds these classes directly; the strings are sugar. Both tables are
:class:`~filesystems.Registry` objects: the ``mysql`` store's module is imported the first time a
``mysql:`` URL is opened. Third parties add store schemes with :func:`register_store` or the
entry-point group ``harness.stores`` (name = scheme, value = a callable taking the URL and
returning a ``KeyValueStore``), and modes with :func:`register_filesystem` or the group
``harness.filesystems`` (name = mode, value = a :class:`FilesystemFactory`). Unknown names and
malformed URLs raise ``ValueError``; messages never show a URL's password.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ._redact import redact_url
from .base import AbstractFilesystem
from .local import DEFAULT_TIMEOUT, LocalFilesystem
from .paths import MACHINE_DIR
from .plugins import Registry
from .remote import RemoteFilesystem
from .sandbox import SandboxFilesystem, SandboxLimits
from .stores import KeyValueStore, MemoryKeyValueStore, SQLiteKeyValueStore

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


def _sqlite(url: str) -> KeyValueStore:
    # SQLAlchemy's convention: ``sqlite:///rel.db`` is relative, ``sqlite:////abs.db`` absolute.
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url.removeprefix("sqlite://")
    if not path or path == url:
        raise ValueError(f"store {url!r}: no database file; expected sqlite:///path/to/store.db")
    return SQLiteKeyValueStore(Path(path))


def _memory(url: str) -> KeyValueStore:
    return MemoryKeyValueStore()


_STORES: Registry[StoreFactory] = Registry(
    "store scheme",
    STORE_ENTRY_POINT_GROUP,
    {"memory": _memory, "sqlite": _sqlite, "mysql": "filesystems.stores.mysql:MySQLKeyValueStore"},
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


_MODES: Registry[FilesystemFactory] = Registry(
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

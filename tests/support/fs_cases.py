"""How a peer process opens the filesystems of the conformance cases (``PeerSpec.opener``)."""

from __future__ import annotations

from filesystems import AbstractFilesystem, LocalFilesystem, MySQLKeyValueStore, RemoteFilesystem, SQLiteKeyValueStore

__all__ = ["open_peer"]


def open_peer(*, kind: str, **spec: str) -> AbstractFilesystem:
    """The filesystem of a shared case, opened anew: a ``local`` folder (``root``), or a remote
    filesystem over a ``sqlite`` file (``path``) or a ``mysql`` table (``dsn``, ``table``) as
    ``agent``."""
    if kind == "local":
        return LocalFilesystem(spec["root"])
    if kind == "sqlite":
        return RemoteFilesystem(SQLiteKeyValueStore(spec["path"]), agent_id=spec["agent"])
    if kind == "mysql":
        store = MySQLKeyValueStore(spec["dsn"], table=spec["table"], pool_size=2)
        return RemoteFilesystem(store, agent_id=spec["agent"])
    raise ValueError(f"unknown filesystem kind {kind!r}")

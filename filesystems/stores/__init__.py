"""Versioned key-value stores behind :class:`~filesystems.RemoteFilesystem`."""

from .base import KeyValueStore, StoreEntry, StoreRecord
from .memory import MemoryKeyValueStore
from .mysql import MySQLKeyValueStore
from .sqlite import SQLiteKeyValueStore

__all__ = [
    "KeyValueStore",
    "MemoryKeyValueStore",
    "MySQLKeyValueStore",
    "SQLiteKeyValueStore",
    "StoreEntry",
    "StoreRecord",
]

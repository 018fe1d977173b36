"""Versioned key-value stores behind :class:`~filesystems.RemoteFilesystem`."""

from typing import TYPE_CHECKING

from ..plugins import lazy_exports
from .base import KeyValueStore, StoreEntry, StoreRecord
from .memory import MemoryKeyValueStore
from .sqlite import SQLiteKeyValueStore

if TYPE_CHECKING:
    from .mysql import MySQLKeyValueStore

__all__ = [
    "KeyValueStore",
    "MemoryKeyValueStore",
    "MySQLKeyValueStore",
    "SQLiteKeyValueStore",
    "StoreEntry",
    "StoreRecord",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use

"""Abstract async filesystems: local, local with shell, remote key-value store, sandbox, composite.

Start from :class:`AbstractFilesystem` (the contract); pick a mode — :class:`LocalFilesystem`,
:class:`RemoteFilesystem` over a :class:`KeyValueStore`, :class:`SandboxFilesystem`,
:class:`CompositeFilesystem` — and call ``scoped(user_id)`` for a user's own area.
:func:`open_filesystem` and :func:`open_store` build them from a mode name and a store URL.
"""

from typing import TYPE_CHECKING

from ._redact import redact_secrets, redact_url, url_credentials
from .base import (
    RESERVED_USER_IDS,
    AbstractFilesystem,
    CommandResult,
    FileStat,
    validate_user_id,
)
from .errors import (
    FilesystemError,
    InvalidUserId,
    LockTimeout,
    PathEscapeError,
    SandboxUnavailable,
    ShellUnavailable,
    StoreUnavailable,
    VersionConflict,
)
from .paths import (
    CACHE_DIR,
    MACHINE_DIR,
    VCS_FOLDERS,
    has_control,
    has_dot_segment,
    has_parent_segment,
    identifier_problem,
    loose_path_parts,
    loose_path_problem,
    normalize_path,
    relative_path_problem,
    segment_problem,
)
from .plugins import Registry, lazy_exports
from .resource import AsyncResource, Fixed

if TYPE_CHECKING:  # imported on first use: a program pays only for the modes and stores it opens
    # (``import harness`` names only the paths and the errors: the local filesystem, the first
    # use of asyncio, comes with the first filesystem)
    from .composite import CompositeFilesystem
    from .keys import machine_key
    from .local import LocalFilesystem
    from .progress import DEFAULT_PROGRESS_INTERVAL, Progress, ProgressCallback, ProgressReporter
    from .registry import (
        known_filesystem_modes,
        known_store_schemes,
        open_filesystem,
        open_store,
        register_filesystem,
        register_store,
    )
    from .remote import RemoteFilesystem
    from .sandbox import SandboxFilesystem, SandboxLimits
    from .stores import KeyValueStore, MemoryKeyValueStore, SQLiteKeyValueStore, StoreEntry, StoreRecord
    from .stores.mysql import MySQLKeyValueStore
    from .tasks import BackgroundTasks

__all__ = [
    "CACHE_DIR",
    "DEFAULT_PROGRESS_INTERVAL",
    "MACHINE_DIR",
    "RESERVED_USER_IDS",
    "VCS_FOLDERS",
    "AbstractFilesystem",
    "AsyncResource",
    "BackgroundTasks",
    "CommandResult",
    "CompositeFilesystem",
    "FileStat",
    "FilesystemError",
    "Fixed",
    "InvalidUserId",
    "KeyValueStore",
    "LocalFilesystem",
    "LockTimeout",
    "MemoryKeyValueStore",
    "MySQLKeyValueStore",
    "PathEscapeError",
    "Progress",
    "ProgressCallback",
    "ProgressReporter",
    "Registry",
    "RemoteFilesystem",
    "SQLiteKeyValueStore",
    "SandboxFilesystem",
    "SandboxLimits",
    "SandboxUnavailable",
    "ShellUnavailable",
    "StoreEntry",
    "StoreRecord",
    "StoreUnavailable",
    "VersionConflict",
    "has_control",
    "has_dot_segment",
    "has_parent_segment",
    "identifier_problem",
    "known_filesystem_modes",
    "known_store_schemes",
    "lazy_exports",
    "loose_path_parts",
    "loose_path_problem",
    "machine_key",
    "normalize_path",
    "open_filesystem",
    "open_store",
    "redact_secrets",
    "redact_url",
    "register_filesystem",
    "register_store",
    "relative_path_problem",
    "segment_problem",
    "url_credentials",
    "validate_user_id",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use

"""Abstract async filesystems: local, local with shell, remote key-value store, sandbox, composite."""

from .base import (
    RESERVED_USER_IDS,
    AbstractFilesystem,
    CommandResult,
    FileStat,
    normalize_path,
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

__all__ = [
    "RESERVED_USER_IDS",
    "AbstractFilesystem",
    "CommandResult",
    "FileStat",
    "FilesystemError",
    "InvalidUserId",
    "LockTimeout",
    "PathEscapeError",
    "SandboxUnavailable",
    "ShellUnavailable",
    "StoreUnavailable",
    "VersionConflict",
    "normalize_path",
    "validate_user_id",
]

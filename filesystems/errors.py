"""The error tree of :mod:`filesystems`.

Every error raised on purpose by this package derives from :class:`FilesystemError`. Builtins
are reused where the meaning matches: a missing path raises :class:`FileNotFoundError`, an
existing path on exclusive create raises :class:`FileExistsError`, and a path escape is a
:class:`PermissionError` (through :class:`PathEscapeError`).
"""

from __future__ import annotations

__all__ = [
    "FilesystemError",
    "InvalidUserId",
    "LockTimeout",
    "PathEscapeError",
    "SandboxUnavailable",
    "ShellUnavailable",
    "StoreUnavailable",
    "VersionConflict",
]


class FilesystemError(Exception):
    """Root of the errors raised by :mod:`filesystems`."""


class PathEscapeError(FilesystemError, PermissionError):
    """A path is absolute, climbs out with ``..``, contains NUL or resolves (through a symlink)
    outside the filesystem root. The message names the offending path."""


class VersionConflict(FilesystemError):
    """A compare-and-set lost: the current version is not the expected one."""


class ShellUnavailable(FilesystemError):
    """``run()`` or ``shell_path()`` was called on a filesystem that has no shell."""


class LockTimeout(FilesystemError, TimeoutError):
    """An advisory lock could not be taken within the timeout."""


class InvalidUserId(FilesystemError, ValueError):
    """A user id is unsafe as a path segment or collides with a reserved workspace entry."""


class SandboxUnavailable(FilesystemError):
    """bubblewrap cannot run here; the message carries the reason."""


class StoreUnavailable(FilesystemError):
    """A key-value store cannot be reached or answered with an error (database down, bad DSN)."""

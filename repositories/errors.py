"""The error tree of ``repositories``.

``RepositoryError`` is the root. Backend errors (git, MySQL, ``importlib``) are translated into
these where they enter, with the original chained as ``__cause__``. Builtins are mixed in where
the meaning matches, so ``except FileNotFoundError`` / ``except PermissionError`` /
``except ValueError`` keep working for callers that do not know this package.
"""

from __future__ import annotations

__all__ = [
    "BundleNotFound",
    "ContentBlocked",
    "ContentMismatch",
    "InvalidBundle",
    "InvalidRepositoryConfig",
    "RepositoryClosed",
    "RepositoryError",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
    "UnknownScheme",
    "UnsafePath",
]


class RepositoryError(Exception):
    """Base class of every error a skill repository raises on purpose."""


class RepositoryUnavailable(RepositoryError):
    """The backend could not be reached or read (remote down, database down, bad data).

    ``snapshot()`` raises it only when no good snapshot was ever taken; otherwise it is reported
    through ``Snapshot.error`` while the last good snapshot keeps being served.
    """


class RepositoryReadOnly(RepositoryError, PermissionError):
    """``save()`` or ``delete()`` was called on a repository that is not writable."""


class RepositoryClosed(RepositoryError):
    """The repository was used after ``aclose()``."""


class BundleNotFound(RepositoryError, FileNotFoundError):
    """The repository offers no skill folder of that name, or the folder has no such file."""


class UnsafePath(RepositoryError, PermissionError):
    """A file path is absolute, escapes its skill folder, names a dot-file or contains NUL."""


class ContentMismatch(RepositoryError):
    """A file a market read is not what its listing promised (size, digest or, for a SKILL.md,
    its frontmatter): the bytes are refused, never delivered."""


class ContentBlocked(RepositoryError, PermissionError):
    """Bytes a market served that its reader refused to deliver: the harness's content scan
    blocks them (``market_scan: block`` for that market). The message names the market, the
    skill, the file and the rule."""


class InvalidBundle(RepositoryError, ValueError):
    """A bundle given to ``save()`` is malformed (bad folder name, duplicate or unsafe paths)."""


class InvalidRepositoryConfig(RepositoryError, ValueError):
    """A repository was configured with an invalid value (URL, slug, table name, option)."""


class UnknownScheme(InvalidRepositoryConfig):
    """``open_repository()`` got a URL whose scheme no backend is registered for."""

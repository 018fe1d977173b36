"""The abstract async filesystem: its values, path rules and contract.

Every backend (local, local with shell, remote key-value store, sandbox, composite) subclasses
:class:`AbstractFilesystem`. The public methods hold the policy — path normalisation, argument
checks, the shell capability check — and call one small private primitive per operation that
the backend implements, so every backend gets the same rules.
"""

from __future__ import annotations

import builtins
import pathlib
import stat as stat_module
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from .errors import InvalidUserId, PathEscapeError, ShellUnavailable
from .paths import identifier_problem, normalize_path
from .resource import AsyncResource

__all__ = [
    "RESERVED_USER_IDS",
    "AbstractFilesystem",
    "CommandResult",
    "FileStat",
    "normalize_path",
    "validate_user_id",
]

#: Names of the shared workspace's own entries; a user id may not take one of them.
RESERVED_USER_IDS: frozenset[str] = frozenset({"skills", "subagents", "knowledge", "AGENTS.md"})

_MAX_SEGMENT_BYTES = 255


@dataclass(frozen=True, kw_only=True)
class FileStat:
    """What a filesystem knows about one entry.

    ``path`` is relative to the filesystem root (POSIX, normalised, ``""`` for the root itself);
    ``mode`` holds the permission bits only (``0o644``, ``0o755``); ``version`` is an opaque
    token that changes on every write of the file (an etag); directories carry ``""``.
    """

    path: str
    size: int
    mtime: float
    mode: int
    is_dir: bool
    version: str

    @property
    def name(self) -> str:
        """The last segment of ``path``."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def executable(self) -> bool:
        """Whether the owner may execute the file."""
        return bool(self.mode & stat_module.S_IXUSR)


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """The outcome of :meth:`AbstractFilesystem.run`.

    A non-zero ``exit_code`` is data, not an error. ``truncated`` says stdout or stderr went
    over the output cap (the rest was discarded); ``timed_out`` says the process group was
    killed at the timeout (``exit_code`` is then the negative signal number). ``duration`` is
    wall-clock seconds.
    """

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    duration: float

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0 in time."""
        return self.exit_code == 0 and not self.timed_out


def validate_user_id(user_id: str) -> str:
    """Return ``user_id`` if it is a safe, unreserved path segment.

    Refused with :class:`InvalidUserId`: non-strings, the empty string, ``/``, ``\\``, anything
    :func:`identifier_problem` refuses (C0/C1 controls, invisible format characters, leading or
    trailing whitespace, text a store would fold together), more than 255 UTF-8 bytes, a leading ``.`` or ``_`` (which covers
    ``.`` and ``..``), and the workspace's own entries ``skills``, ``subagents``, ``knowledge``,
    ``AGENTS.md`` (compared case-insensitively, for case-insensitive host filesystems).
    """
    if not isinstance(user_id, str) or not user_id:
        raise InvalidUserId(f"user id {user_id!r} must be a non-empty string")
    if "/" in user_id or "\\" in user_id:
        raise InvalidUserId(f"user id {user_id!r} must not contain '/' or '\\'")
    problem = identifier_problem(user_id)
    if problem:
        raise InvalidUserId(f"user id {user_id!r} {problem}")
    if user_id[0] in "._":
        raise InvalidUserId(f"user id {user_id!r} must not start with '.' or '_'")
    if user_id.casefold() in {name.casefold() for name in RESERVED_USER_IDS}:
        raise InvalidUserId(
            f"user id {user_id!r} is reserved for the shared workspace ({', '.join(sorted(RESERVED_USER_IDS))})"
        )
    if len(user_id.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT_BYTES:
        raise InvalidUserId(f"user id {user_id[:32]!r}... is longer than 255 bytes")
    return user_id


def _check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for key, value in (env or {}).items():
        if not key or "=" in key or "\x00" in key or "\x00" in value:
            raise ValueError(f"invalid environment variable {key!r}")
        checked[key] = value
    return checked


def _start_folder(cwd: str, roots: Sequence[str]) -> str:
    """``cwd`` normalised: relative to the root, or (only with ``roots``) an absolute shell path
    equal to or below one of ``roots``."""
    if not cwd.startswith("/") or not roots:
        return normalize_path(cwd)
    folder = "/" + normalize_path(cwd.lstrip("/"))
    for root in roots:
        if not isinstance(root, str) or not root.startswith("/"):
            raise ValueError(f"start root {root!r} must be an absolute shell path")
        allowed = "/" + normalize_path(root.lstrip("/"))
        if folder == allowed or folder.startswith(allowed.rstrip("/") + "/"):
            return folder
    raise PathEscapeError(f"cwd {cwd!r} is outside the root and outside the folders this command may start in")


def _check_hidden(paths: Sequence[str]) -> tuple[str, ...]:
    if isinstance(paths, str):
        raise ValueError("hidden must be a sequence of paths, not one string")
    checked = tuple(dict.fromkeys(normalize_path(path) for path in paths))
    if "" in checked:
        raise PathEscapeError("hidden paths must lie below the root, not be the root itself")
    return checked


def _check_prepend(prepend: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    checked: dict[str, tuple[str, ...]] = {}
    for key, folders in (prepend or {}).items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
            raise ValueError(f"invalid environment variable {key!r}")
        if isinstance(folders, str):
            raise ValueError(f"prepend[{key!r}] must be a sequence of folders, not one string")
        for folder in folders:
            if not isinstance(folder, str) or not folder.startswith("/") or ":" in folder or "\x00" in folder:
                raise ValueError(f"prepend[{key!r}] entry {folder!r} must be an absolute folder without ':'")
        if folders:
            checked[key] = tuple(folders)
    return checked


class AbstractFilesystem(AsyncResource, ABC):
    """An async filesystem rooted somewhere: a host folder, a key-value store, a sandbox.

    Paths are POSIX strings relative to the root (see :func:`normalize_path`); absolute paths,
    ``..`` escapes and symlinks resolving outside the root raise :class:`PathEscapeError`, a
    :class:`PermissionError` naming the path. A missing path raises :class:`FileNotFoundError`,
    reading a folder :class:`IsADirectoryError`, listing a file :class:`NotADirectoryError`.

    The instance is an async context manager; :meth:`aclose` is idempotent and releases what the
    filesystem owns (pools, connections, child filesystems). Scoped views share their parent's
    resources and close nothing.

    Crash-safe state is built on four primitives: :meth:`create_exclusive` (appears whole or not
    at all, fails if present), :meth:`compare_and_set` (a write that only lands on the expected
    version), :meth:`append` (one record per call, never torn or lost under concurrency) and
    :meth:`lock` (advisory, across processes for backends that can be shared).
    """

    # -- reading ----------------------------------------------------------------------------

    async def read_bytes(self, path: str) -> bytes:
        """Return the whole content of the file at ``path``."""
        return await self._read_bytes(self._file_path(path))

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """Return the file at ``path`` decoded with ``encoding`` (strict errors)."""
        return (await self.read_bytes(path)).decode(encoding)

    async def read_many(self, paths: Sequence[str]) -> dict[str, bytes]:
        """Read several files in one batched call.

        Returns ``{normalised path: bytes}``; paths that do not exist (or are folders) are left
        out rather than failing the batch. Every path is checked before anything is read.
        """
        normalised = list(dict.fromkeys(self._file_path(p) for p in paths))
        if not normalised:
            return {}
        return await self._read_many(normalised)

    async def stat(self, path: str) -> FileStat:
        """Return the :class:`FileStat` of the file or folder at ``path``."""
        return await self._stat(normalize_path(path))

    async def exists(self, path: str) -> bool:
        """Whether a file or folder exists at ``path`` (escapes still raise)."""
        try:
            await self.stat(path)
        except FileNotFoundError:
            return False
        return True

    async def list(self, path: str = "") -> builtins.list[FileStat]:
        """Return the direct children of the folder at ``path``, complete and sorted by name.

        Entry paths are relative to the filesystem root, not to ``path``.
        """
        return sorted(await self._list(normalize_path(path)), key=lambda s: s.name)

    async def walk(self, path: str = "") -> builtins.list[FileStat]:
        """Return every file (not folder) below ``path``, recursively, in one batched call.

        Paths are relative to the filesystem root, sorted. A missing folder yields ``[]``; a file
        at ``path`` raises :class:`NotADirectoryError`. Symlinks resolving outside the root are
        left out.
        """
        return sorted(await self._walk(normalize_path(path)), key=lambda s: s.path)

    async def generation(self) -> int | None:
        """A cheap counter that changes whenever content may have changed, or ``None``.

        Callers compare it with the value they saw last to skip re-reading. Backends without a
        cheap counter return ``None`` (local folders: watch :meth:`host_path` instead).
        """
        return None

    # -- writing ----------------------------------------------------------------------------

    async def write_bytes(self, path: str, data: bytes, *, mode: int | None = None) -> FileStat:
        """Write ``data`` to ``path`` atomically (a reader sees the old or the new content,
        never a mix), creating parent folders.

        ``mode`` sets the permission bits; ``None`` keeps the existing file's mode, ``0o644``
        for a new file. Returns the new :class:`FileStat`.
        """
        return await self._write_bytes(self._file_path(path), bytes(data), _check_mode(mode))

    async def write_text(self, path: str, text: str, *, mode: int | None = None) -> FileStat:
        """Write ``text`` encoded as UTF-8; see :meth:`write_bytes`."""
        return await self.write_bytes(path, text.encode("utf-8"), mode=mode)

    async def create_exclusive(self, path: str, data: bytes) -> FileStat:
        """Create the file at ``path`` with ``data``; :class:`FileExistsError` if it exists.

        The file appears complete or not at all, and of several concurrent creators exactly one
        wins — across processes for shared backends.
        """
        return await self._create_exclusive(self._file_path(path), bytes(data))

    async def compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat:
        """Write ``data`` only if the file's current version is ``expected_version``.

        ``expected_version=None`` means the file must not exist yet. Raises
        :class:`VersionConflict` when the version differs (someone else wrote first); the
        caller re-reads and retries. Returns the new :class:`FileStat` (its ``version`` is the
        one to expect next time).
        """
        return await self._compare_and_set(self._file_path(path), bytes(data), expected_version)

    async def append(self, path: str, data: bytes) -> None:
        """Append ``data`` to the file at ``path`` (created if missing, parents too).

        Each call lands whole: concurrent appenders (tasks or processes sharing the backend)
        never lose or interleave each other's records.
        """
        await self._append(self._file_path(path), bytes(data))

    async def mkdir(self, path: str) -> None:
        """Create the folder at ``path`` with its parents; an existing folder is fine.

        :class:`FileExistsError` if a file is in the way.
        """
        await self._mkdir(normalize_path(path))

    async def delete(self, path: str) -> None:
        """Delete the file or the whole folder tree at ``path``; missing is fine.

        Deleting the root is refused with :class:`PermissionError`.
        """
        normalised = normalize_path(path)
        if not normalised:
            raise PermissionError("refusing to delete the filesystem root")
        await self._delete(normalised)

    async def move(self, src: str, dst: str) -> None:
        """Move the file or folder ``src`` to ``dst``, replacing a file at ``dst``.

        Parents of ``dst`` are created. :class:`FileNotFoundError` if ``src`` is missing;
        moving the root or a folder into itself is refused with :class:`PermissionError`.
        """
        source, target = normalize_path(src), normalize_path(dst)
        if not source or not target:
            raise PermissionError("refusing to move the filesystem root")
        if target == source:
            return
        if target.startswith(source + "/"):
            raise PermissionError(f"cannot move {src!r} into itself ({dst!r})")
        await self._move(source, target)

    def lock(self, key: str, *, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        """An advisory, exclusive lock on ``key`` (any non-empty string; not a path).

        ``async with fs.lock("staging"): ...``. Held until the block exits; ``timeout=None``
        waits forever, otherwise :class:`LockTimeout` after ``timeout`` seconds. Two holders
        exclude each other within a process and — for local folders (``flock``), SQLite and
        MySQL stores — across processes. Keys are namespaced by the filesystem's scope.
        """
        if not isinstance(key, str) or not key or "\x00" in key:
            raise ValueError(f"lock key {key!r} must be a non-empty string without NUL")
        if timeout is not None and timeout < 0:
            raise ValueError("lock timeout must be >= 0")
        return self._lock(key, timeout)

    # -- scoping ----------------------------------------------------------------------------

    def scoped(self, user_id: str) -> AbstractFilesystem:
        """Return the view of ``user_id``'s own area; its root is that area.

        The view shares this filesystem's resources (closing it closes nothing). Raises
        :class:`InvalidUserId` for unsafe or reserved ids (see :func:`validate_user_id`).
        """
        return self._scoped(validate_user_id(user_id))

    # -- shell ------------------------------------------------------------------------------

    @property
    def has_shell(self) -> bool:
        """Whether :meth:`run` and :meth:`shell_path` are available."""
        return False

    @property
    def shell_isolated(self) -> bool:
        """Whether a command run through one user's :meth:`scoped` view reaches nothing of
        another user's area (a sandbox). ``False`` for a host shell, which can read whatever
        this process can, and for filesystems without a shell. Whoever offers one shell to
        several principals checks it."""
        return False

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        start_roots: Sequence[str] = (),
        prepend: Mapping[str, Sequence[str]] | None = None,
        hidden: Sequence[str] = (),
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` where this filesystem's shell runs.

        ``cwd`` is a path relative to the root (default: the root); ``env`` adds variables to
        the backend's minimal environment; ``timeout`` (seconds) kills the whole process group
        when reached. The backend's configured timeout (:attr:`timeout_ceiling`) is both the
        default and a ceiling: a caller may ask for less, never for more. Output beyond the
        backend's cap is dropped and flagged ``truncated``. A non-zero exit is returned, never
        raised. Raises :class:`ShellUnavailable` on filesystems without a shell and
        :class:`ValueError` for a timeout that is not a positive number.

        ``start_roots`` are folders outside the root, as the shell sees them (absolute), that
        the caller lets this command start in without making them writable — a skill's folder
        in the read-only staged cache, say. With them, ``cwd`` may also be an absolute shell
        path equal to or below one of them; any other absolute ``cwd`` (or one that climbs out
        with ``..``) raises :class:`PathEscapeError`. Whether the folder is writable is the
        backend's business, never changed here: a sandbox keeps its read-only binds.

        ``prepend`` puts folders first on path-like variables for this command only
        (``{"PATH": [...], "PYTHONPATH": [...]}``), before the value the backend and ``env``
        give them; ``PATH`` can be extended only this way. Folders are absolute shell paths
        without ``:``; anything else raises :class:`ValueError`.

        ``hidden`` are paths relative to the root (``.skills-cache/<source>/<folder>``) that this
        command must not see. A backend whose shell is isolated (:attr:`shell_isolated`) leaves
        them out of the command's view, including what appears there while it runs; a host shell
        reaches whatever this process can and hides nothing. A path that is not a clean relative
        path raises :class:`PathEscapeError`.
        """
        if not self.has_shell:
            raise ShellUnavailable(f"{type(self).__name__} has no shell; run() is unavailable")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        return await self._run(
            command,
            cwd=_start_folder(cwd or "", start_roots),
            env=_check_env(env),
            timeout=_capped_timeout(timeout, self.timeout_ceiling),
            prepend=_check_prepend(prepend),
            hidden=_check_hidden(hidden),
        )

    def protect(self, folders: Sequence[str]) -> None:
        """Keep ``folders`` (relative folders of every user's area, e.g. ``.agents/skills``) out
        of reach of this filesystem's shell from now on, for the views :meth:`scoped` makes
        afterwards. A backend whose shell runs untrusted commands in a user's area (the sandbox)
        shows them read-only there; the others have no shell or a trusted one, and ignore it.
        The skill pipeline calls this with the folders it reads skills from. Raises
        :class:`PathEscapeError` for a folder that is not a clean relative path."""
        for folder in folders:
            if not normalize_path(folder):
                raise PathEscapeError(f"protected folder {folder!r} must be a folder below the root")

    @property
    def timeout_ceiling(self) -> float | None:
        """The longest a command may run, set by whoever built the filesystem (``None``: none)."""
        return None

    def shell_path(self, path: str) -> str:
        """The absolute path under which the shell sees ``path`` (for ``<files-root>``).

        Host paths for a local shell, ``/workspace/...`` inside a sandbox. Raises
        :class:`ShellUnavailable` on filesystems without a shell.
        """
        if not self.has_shell:
            raise ShellUnavailable(f"{type(self).__name__} has no shell; no shell paths")
        return self._shell_path(normalize_path(path))

    def host_path(self, path: str) -> pathlib.Path | None:
        """The real host folder or file behind ``path`` (for file watchers), if there is one.

        ``None`` for stores without host files (remote key-value stores).
        """
        return self._host_path(normalize_path(path))

    # -- helpers and backend primitives -----------------------------------------------------

    @staticmethod
    def _file_path(path: str) -> str:
        normalised = normalize_path(path)
        if not normalised:
            raise IsADirectoryError(f"path {path!r} is the root folder, not a file")
        return normalised

    @abstractmethod
    async def _read_bytes(self, path: str) -> bytes: ...

    @abstractmethod
    async def _read_many(self, paths: builtins.list[str]) -> dict[str, bytes]: ...

    @abstractmethod
    async def _stat(self, path: str) -> FileStat: ...

    @abstractmethod
    async def _list(self, path: str) -> builtins.list[FileStat]: ...

    @abstractmethod
    async def _walk(self, path: str) -> builtins.list[FileStat]: ...

    @abstractmethod
    async def _write_bytes(self, path: str, data: bytes, mode: int | None) -> FileStat: ...

    @abstractmethod
    async def _create_exclusive(self, path: str, data: bytes) -> FileStat: ...

    @abstractmethod
    async def _compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat: ...

    @abstractmethod
    async def _append(self, path: str, data: bytes) -> None: ...

    @abstractmethod
    async def _mkdir(self, path: str) -> None: ...

    @abstractmethod
    async def _delete(self, path: str) -> None: ...

    @abstractmethod
    async def _move(self, src: str, dst: str) -> None: ...

    @abstractmethod
    def _lock(self, key: str, timeout: float | None) -> AbstractAsyncContextManager[None]: ...

    @abstractmethod
    def _scoped(self, user_id: str) -> AbstractFilesystem: ...

    async def _run(
        self,
        command: str,
        *,
        cwd: str,
        env: dict[str, str],
        timeout: float | None,
        prepend: dict[str, tuple[str, ...]],
        hidden: tuple[str, ...],
    ) -> CommandResult:
        """Run ``command``; ``cwd`` is checked: relative to the root, or an absolute shell path
        inside a folder the caller allowed (see :meth:`run`); ``hidden`` holds normalised,
        non-empty relative paths."""
        raise ShellUnavailable(f"{type(self).__name__} has no shell; run() is unavailable")

    def _shell_path(self, path: str) -> str:
        raise ShellUnavailable(f"{type(self).__name__} has no shell; no shell paths")

    def _host_path(self, path: str) -> pathlib.Path | None:
        return None


def _capped_timeout(requested: float | None, ceiling: float | None) -> float | None:
    """``requested`` lowered to ``ceiling``; the ceiling itself when nothing was requested."""
    if requested is None or ceiling is None:
        return ceiling if requested is None else requested
    return min(requested, ceiling)


def _check_mode(mode: int | None) -> int | None:
    if mode is not None and not 0 <= mode <= 0o7777:
        raise ValueError(f"mode {mode:#o} is not a permission mode (0..0o7777)")
    return mode

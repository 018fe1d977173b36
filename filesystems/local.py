"""A host folder as a filesystem, optionally with a host shell (trusted: it isolates nothing)."""

from __future__ import annotations

import errno
import fcntl
import os
import pathlib
import shutil
import stat as stat_module
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager

import anyio

from ._filelock import file_lock, lock_file_name
from ._process import BASE_ENV, check_shell_env, command_path, prepended, run_process, shim_dir
from .base import AbstractFilesystem, CommandResult, FileStat
from .errors import PathEscapeError, VersionConflict
from .paths import MACHINE_DIR

__all__ = ["DEFAULT_OUTPUT_LIMIT", "DEFAULT_TIMEOUT", "LocalFilesystem"]

#: Bytes of stdout and of stderr a command may return before the rest is dropped.
DEFAULT_OUTPUT_LIMIT = 64 * 1024
#: Seconds a command may run when ``run()`` gets no timeout.
DEFAULT_TIMEOUT = 300.0
#: Folder (below the unscoped root) holding the lock files of :meth:`LocalFilesystem.lock`.
LOCK_DIR = f"{MACHINE_DIR}/locks"

_NEW_FILE_MODE = 0o644
_DIR_MODE = 0o755
_TMP_PREFIX = ".tmp-"


def _version(st: os.stat_result) -> str:
    return f"{st.st_mtime_ns:x}-{st.st_size:x}-{st.st_ino:x}"


def _read_all(fd: int, size_hint: int) -> bytes:
    """Everything left in ``fd`` (the file may grow or shrink while it is read)."""
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, max(size_hint, 0) + 1 if not chunks else 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _allowed_start(folder: str) -> str:
    """A host folder outside the root that ``run()`` already allowed as a start (a skill's
    folder): it must be a folder; the host shell is trusted, so it is not confined further."""
    if not os.path.isdir(folder):
        raise NotADirectoryError(f"cannot start in {folder!r}: it is not a folder")
    return folder


def _file_stat(path: str, st: os.stat_result) -> FileStat:
    is_dir = stat_module.S_ISDIR(st.st_mode)
    return FileStat(
        path=path,
        size=0 if is_dir else st.st_size,
        mtime=st.st_mtime,
        mode=stat_module.S_IMODE(st.st_mode),
        is_dir=is_dir,
        version="" if is_dir else _version(st),
    )


class LocalFilesystem(AbstractFilesystem):
    """The folder ``root`` on this host (created on the first write).

    ``scoped(user_id)`` is ``root/<user_id>``. Versions are built from mtime (nanoseconds,
    forced to grow on every write), size and inode. Writes go to a temporary file next to the
    target and are renamed into place; this survives a crashed process, but data is not
    ``fsync``-ed. :meth:`compare_and_set` serialises on a ``flock`` of the parent folder, locks
    are ``flock``-ed files below ``<root>/.harness/locks`` (shared by every process on the host).
    Symlinks are followed only while they stay inside the root; every open is re-checked
    through ``/proc/self/fd`` so a link swapped in mid-operation cannot lead out.

    With ``shell=True``, :meth:`run` starts ``/bin/sh -c`` on the host with the (scoped) root as
    working folder and a minimal environment (``PATH``, ``HOME`` = the root, ``LANG``) plus
    ``env``; nothing of this process's environment is inherited. ``PATH`` is the folders in
    ``path``, then a harness-owned folder with a ``python`` link to ``python3`` when the system
    has only ``python3``, then ``/usr/local/bin:/usr/bin:/bin``; ``env`` may not set ``PATH``. The host shell is **trusted**:
    it can read whatever this process can. ``output_limit`` caps stdout and stderr each;
    ``timeout`` is the default and the ceiling of ``run()``. ``owner=(uid, gid)`` hands every file and folder
    this filesystem creates to that owner (used when a sandbox user must write them).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        shell: bool = False,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        timeout: float | None = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        path: Sequence[str] = (),
        owner: tuple[int, int] | None = None,
        _lock_dir: pathlib.Path | None = None,
    ) -> None:
        super().__init__()
        if output_limit < 0:
            raise ValueError("output_limit must be >= 0")
        self._root = os.path.abspath(os.fspath(root))
        self._real_root = os.path.realpath(self._root)
        # A scoped view locks below its parent's lock folder (``_lock_dir``), not in its own area.
        self._lock_dir = _lock_dir or pathlib.Path(self._real_root, LOCK_DIR)
        self._shell = shell
        self._output_limit = output_limit
        self._timeout = timeout
        self._env, self._path = check_shell_env(env or {}, path)
        self._owner = owner

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._root!r}, shell={self.has_shell})"

    @property
    def root(self) -> pathlib.Path:
        """The host folder this filesystem is rooted at."""
        return pathlib.Path(self._root)

    # -- path checks (run in worker threads) ------------------------------------------------

    def _inside(self, real: str) -> bool:
        return real == self._real_root or real.startswith(self._real_root + os.sep)

    def _resolve(self, path: str) -> str:
        """The host path of ``path`` with symlinks resolved; refuses anything outside the root."""
        real = os.path.realpath(os.path.join(self._real_root, path))
        if not self._inside(real):
            raise PathEscapeError(f"path {path!r} resolves outside the filesystem root")
        return real

    def _check_fd(self, fd: int, path: str) -> None:
        real = os.readlink(f"/proc/self/fd/{fd}")
        if not self._inside(real):
            raise PathEscapeError(f"path {path!r} resolves outside the filesystem root")

    def _parent(self, path: str) -> tuple[str, str]:
        """(resolved host folder holding ``path``, last segment) — the segment not followed."""
        head, _, name = path.rpartition("/")
        return self._resolve(head), name

    @contextmanager
    def _dir_fd(self, path: str, *, create: bool) -> Iterator[tuple[int, str]]:
        """An open, verified fd of the folder holding ``path`` and the last segment."""
        folder, name = self._parent(path)
        if create:
            self._makedirs(folder)
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except NotADirectoryError:
            raise NotADirectoryError(f"a parent of {path!r} is not a folder") from None
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file or folder: {path!r}") from None
        try:
            self._check_fd(fd, path)
            yield fd, name
        finally:
            os.close(fd)

    def _makedirs(self, folder: str) -> None:
        missing: list[str] = []
        current = folder
        while not os.path.isdir(current):
            missing.append(current)
            current = os.path.dirname(current)
        for created in reversed(missing):
            try:
                os.mkdir(created, _DIR_MODE)
            except FileExistsError:
                if not os.path.isdir(created):
                    raise
                continue
            self._chown(created)

    def _chown(self, host_path: str, fd: int | None = None) -> None:
        if self._owner is not None:
            if fd is not None:
                os.fchown(fd, *self._owner)
            else:
                os.chown(host_path, *self._owner, follow_symlinks=False)

    def _stat_entry(self, path: str, host: str) -> FileStat:
        return _file_stat(path, os.stat(host))

    # -- reading ----------------------------------------------------------------------------

    def _read_sync(self, path: str) -> bytes:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            # Open directly and let the /proc/self/fd check below prove where the file is: a
            # realpath() of every path costs a syscall per segment. Only a symlink as the
            # last segment (ELOOP) needs resolving first.
            try:
                fd = os.open(os.path.join(self._real_root, path), flags)
            except OSError as error:
                if error.errno != errno.ELOOP:
                    raise
                fd = os.open(self._resolve(path), flags)
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file: {path!r}") from None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PathEscapeError(f"path {path!r} changed into a symlink") from None
            raise
        try:
            self._check_fd(fd, path)
            st = os.fstat(fd)
            if stat_module.S_ISDIR(st.st_mode):
                raise IsADirectoryError(f"{path!r} is a folder, not a file")
            return _read_all(fd, st.st_size)
        finally:
            os.close(fd)

    async def _read_bytes(self, path: str) -> bytes:
        return await anyio.to_thread.run_sync(self._read_sync, path)

    def _read_many_sync(self, paths: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for path in paths:
            try:
                found[path] = self._read_sync(path)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                continue
        return found

    async def _read_many(self, paths: list[str]) -> dict[str, bytes]:
        return await anyio.to_thread.run_sync(self._read_many_sync, paths)

    def _stat_sync(self, path: str) -> FileStat:
        try:
            return self._stat_entry(path, self._resolve(path))
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file or folder: {path!r}") from None

    async def _stat(self, path: str) -> FileStat:
        return await anyio.to_thread.run_sync(self._stat_sync, path)

    def _children(self, path: str, host: str) -> list[tuple[str, str, os.DirEntry[str]]]:
        """(path, host path, entry) of the children of a resolved folder, escaping links dropped."""
        children = []
        with os.scandir(host) as entries:
            for entry in entries:
                if entry.name.startswith(_TMP_PREFIX):
                    continue
                child = f"{path}/{entry.name}" if path else entry.name
                target = entry.path
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not self._inside(target) or not os.path.exists(target):
                        continue
                children.append((child, target, entry))
        return children

    def _list_sync(self, path: str) -> list[FileStat]:
        host = self._resolve(path)
        if not path and not os.path.exists(host):
            return []
        try:
            return [self._stat_entry(child, target) for child, target, _ in self._children(path, host)]
        except FileNotFoundError:
            raise FileNotFoundError(f"no such folder: {path!r}") from None
        except NotADirectoryError:
            raise NotADirectoryError(f"{path!r} is a file, not a folder") from None

    async def _list(self, path: str) -> list[FileStat]:
        return await anyio.to_thread.run_sync(self._list_sync, path)

    def _walk_sync(self, path: str) -> list[FileStat]:
        host = self._resolve(path)
        if not os.path.exists(host):
            return []
        if not os.path.isdir(host):
            raise NotADirectoryError(f"{path!r} is a file, not a folder")
        files: list[FileStat] = []
        pending = [(path, host)]
        while pending:
            folder, folder_host = pending.pop()
            prefix = f"{folder}/" if folder else ""
            try:
                scan = os.scandir(folder_host)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with scan:
                for entry in scan:
                    name = entry.name
                    if name.startswith(_TMP_PREFIX):
                        continue
                    try:
                        if entry.is_symlink():
                            # A link to a file is followed while it stays inside the root;
                            # linked folders are not walked (no loops).
                            target = os.path.realpath(entry.path)
                            if self._inside(target) and os.path.isfile(target):
                                files.append(_file_stat(prefix + name, os.stat(target)))
                        elif entry.is_dir(follow_symlinks=False):
                            pending.append((prefix + name, entry.path))
                        elif entry.is_file(follow_symlinks=False):
                            files.append(_file_stat(prefix + name, entry.stat(follow_symlinks=False)))
                    except FileNotFoundError:
                        continue
        return files

    async def _walk(self, path: str) -> list[FileStat]:
        return await anyio.to_thread.run_sync(self._walk_sync, path)

    # -- writing ----------------------------------------------------------------------------

    def _write_temp(self, dir_fd: int, data: bytes, mode: int, previous: os.stat_result | None) -> str:
        """Write ``data`` to a fresh temporary file in the folder; return its name."""
        import secrets  # with hmac, which it imports: loaded by the first write, not by a read-only turn

        name = f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            self._chown(name, fd)
            if previous is not None:
                # Timestamps are coarse: make sure the version changes even when size and a
                # recycled inode match the previous file's.
                st = os.fstat(fd)
                if st.st_mtime_ns <= previous.st_mtime_ns:
                    bumped = previous.st_mtime_ns + 1
                    os.utime(fd, ns=(bumped, bumped))
        except BaseException:
            os.close(fd)
            os.unlink(name, dir_fd=dir_fd)
            raise
        os.close(fd)
        return name

    def _replace(self, dir_fd: int, name: str, data: bytes, mode: int | None, path: str) -> FileStat:
        try:
            previous: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            previous = None
        if previous is not None and stat_module.S_ISDIR(previous.st_mode):
            raise IsADirectoryError(f"{path!r} is a folder, not a file")
        if mode is None:
            mode = (
                _NEW_FILE_MODE
                if previous is None or stat_module.S_ISLNK(previous.st_mode)
                else stat_module.S_IMODE(previous.st_mode)
            )
        temp = self._write_temp(dir_fd, data, mode, previous)
        try:
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(temp, dir_fd=dir_fd)
            raise
        return self._stat_at(dir_fd, name, path)

    def _stat_at(self, dir_fd: int, name: str, path: str) -> FileStat:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return FileStat(
            path=path,
            size=st.st_size,
            mtime=st.st_mtime,
            mode=stat_module.S_IMODE(st.st_mode),
            is_dir=False,
            version=_version(st),
        )

    def _write_sync(self, path: str, data: bytes, mode: int | None) -> FileStat:
        with self._dir_fd(path, create=True) as (dir_fd, name):
            return self._replace(dir_fd, name, data, mode, path)

    async def _write_bytes(self, path: str, data: bytes, mode: int | None) -> FileStat:
        return await anyio.to_thread.run_sync(self._write_sync, path, data, mode)

    def _create_sync(self, path: str, data: bytes) -> FileStat:
        with self._dir_fd(path, create=True) as (dir_fd, name):
            temp = self._write_temp(dir_fd, data, _NEW_FILE_MODE, None)
            try:
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise FileExistsError(f"{path!r} already exists") from None
            finally:
                os.unlink(temp, dir_fd=dir_fd)
            return self._stat_at(dir_fd, name, path)

    async def _create_exclusive(self, path: str, data: bytes) -> FileStat:
        return await anyio.to_thread.run_sync(self._create_sync, path, data)

    def _cas_sync(self, path: str, data: bytes, expected: str | None) -> FileStat:
        with self._dir_fd(path, create=True) as (dir_fd, name):
            # Every compare-and-set in this folder, in any process, serialises on the folder.
            fcntl.flock(dir_fd, fcntl.LOCK_EX)
            try:
                current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and stat_module.S_ISDIR(current.st_mode):
                raise IsADirectoryError(f"{path!r} is a folder, not a file")
            found = None if current is None else _version(current)
            if found != expected:
                raise VersionConflict(
                    f"{path!r} is at version {found!r}, not the expected {expected!r}; re-read it and retry"
                )
            return self._replace(dir_fd, name, data, None, path)

    async def _compare_and_set(self, path: str, data: bytes, expected_version: str | None) -> FileStat:
        return await anyio.to_thread.run_sync(self._cas_sync, path, data, expected_version)

    def _append_sync(self, path: str, data: bytes) -> None:
        with self._dir_fd(path, create=True) as (dir_fd, name):
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, _NEW_FILE_MODE, dir_fd=dir_fd)
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise PathEscapeError(f"refusing to append through the symlink {path!r}") from None
                raise
            try:
                self._chown(name, fd)
                # O_APPEND alone does not keep a record whole when write() returns short.
                fcntl.flock(fd, fcntl.LOCK_EX)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

    async def _append(self, path: str, data: bytes) -> None:
        await anyio.to_thread.run_sync(self._append_sync, path, data)

    def _mkdir_sync(self, path: str) -> None:
        host = self._resolve(path)
        if os.path.exists(host) and not os.path.isdir(host):
            raise FileExistsError(f"{path!r} exists and is a file")
        self._makedirs(host)

    async def _mkdir(self, path: str) -> None:
        await anyio.to_thread.run_sync(self._mkdir_sync, path)

    def _delete_sync(self, path: str) -> None:
        try:
            with self._dir_fd(path, create=False) as (dir_fd, name):
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    return
                if stat_module.S_ISDIR(st.st_mode):
                    shutil.rmtree(name, dir_fd=dir_fd)
                else:
                    os.unlink(name, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return

    async def _delete(self, path: str) -> None:
        await anyio.to_thread.run_sync(self._delete_sync, path)

    def _move_sync(self, src: str, dst: str) -> None:
        with self._dir_fd(src, create=False) as (src_fd, src_name):
            if not os.path.lexists(os.path.join(f"/proc/self/fd/{src_fd}", src_name)):
                raise FileNotFoundError(f"no such file or folder: {src!r}")
            with self._dir_fd(dst, create=True) as (dst_fd, dst_name):
                os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    async def _move(self, src: str, dst: str) -> None:
        await anyio.to_thread.run_sync(self._move_sync, src, dst)

    def _lock(self, key: str, timeout: float | None) -> AbstractAsyncContextManager[None]:
        return file_lock(self._lock_dir / lock_file_name(key), key, timeout)

    # -- scoping and shell ------------------------------------------------------------------

    def _area(self, user_id: str) -> tuple[str, pathlib.Path]:
        """(root, lock folder) of ``user_id``'s area below this filesystem."""
        return os.path.join(self._root, user_id), self._lock_dir / "users" / user_id

    def _scoped(self, user_id: str) -> LocalFilesystem:
        root, lock_dir = self._area(user_id)
        return LocalFilesystem(
            root,
            shell=self._shell,
            output_limit=self._output_limit,
            timeout=self._timeout,
            env=self._env,
            path=self._path,
            owner=self._owner,
            _lock_dir=lock_dir,
        )

    @property
    def has_shell(self) -> bool:
        return self._shell

    @property
    def timeout_ceiling(self) -> float | None:
        return self._timeout

    def _command_env(self, env: dict[str, str]) -> dict[str, str]:
        path = command_path(self._path, shim_dir())
        return {"PATH": path, "HOME": self._root, **BASE_ENV, **self._env, **env}

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
        # A host shell reaches whatever this process can: ``hidden`` cannot be honoured here.
        def prepare() -> str:
            if not cwd or cwd.startswith("/"):  # the root is also where a skill's command writes
                self._makedirs(self._real_root)
            return _allowed_start(cwd) if cwd.startswith("/") else self._resolve(cwd)

        folder = await anyio.to_thread.run_sync(prepare)
        return await run_process(
            ["/bin/sh", "-c", command],
            cwd=folder,
            env=prepended(self._command_env(env), prepend),
            timeout=self._timeout if timeout is None else timeout,
            output_limit=self._output_limit,
        )

    def _shell_path(self, path: str) -> str:
        return os.path.join(self._root, path) if path else self._root

    def _host_path(self, path: str) -> pathlib.Path:
        return pathlib.Path(self._root, path)

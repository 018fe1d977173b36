"""A workspace whose shell runs in a bubblewrap sandbox, one sandbox per user scope."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from ._process import BASE_ENV, SEARCH_PATH, command_path, own_folder, prepended, run_process, shim_dir
from .base import CommandResult
from .errors import PathEscapeError, SandboxUnavailable
from .local import DEFAULT_OUTPUT_LIMIT, DEFAULT_TIMEOUT, LocalFilesystem
from .paths import CACHE_DIR, MACHINE_DIR, normalize_path, segment_problem

__all__ = ["DEFAULT_PROJECTED", "NOBODY", "SHIM_DIR", "SandboxFilesystem", "SandboxLimits"]

#: Shared workspace entries projected read-only into every sandbox.
DEFAULT_PROJECTED: tuple[str, ...] = (
    "AGENTS.md",
    "skills",
    "subagents",
    "knowledge",
    CACHE_DIR,
)
#: The unprivileged host uid (and gid) sandboxes run as when this process is root.
NOBODY = 65534
#: Where the user's area appears inside the sandbox.
WORKSPACE = "/workspace"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need to start and to speak TLS; never the whole /etc (shadow, keys, ...).
_SYSTEM_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
)
_NETWORK_FILES = ("/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf")
#: The names every sandbox resolves, network or not: a skill's local server is reachable as localhost.
LOOPBACK_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
#: Where the harness's shim folder (``python`` → ``python3``) appears, read-only, in a sandbox.
SHIM_DIR = "/opt/harness/bin"
_MIB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """Resource limits every sandboxed command runs under (``None`` lifts one).

    ``processes`` (``RLIMIT_NPROC``) counts every process of the sandbox uid on the host: all
    tenants' sandboxes share that uid, so it bounds all concurrent commands *together*, and
    one tenant's fork bomb can make the others' forks fail until its timeout. Without root
    the uid is this process's own, and the count includes every process of that user.
    ``memory`` (``RLIMIT_AS``, bytes of address space per process), ``file_size``
    (``RLIMIT_FSIZE``, bytes per written file), ``open_files`` (``RLIMIT_NOFILE``, per process)
    and ``cpu_seconds`` (``RLIMIT_CPU``, per process) are set with ``prlimit`` before bubblewrap
    starts and hold for everything inside. ``tmp_size`` caps the private ``/tmp`` (a tmpfs held
    in memory, not counted in ``memory``).
    """

    processes: int | None = 512
    memory: int | None = 4096 * _MIB
    file_size: int | None = 1024 * _MIB
    open_files: int | None = 1024
    cpu_seconds: int | None = None
    tmp_size: int | None = 256 * _MIB

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value is not None and (type(value) is not int or value <= 0):
                raise ValueError(f"SandboxLimits.{name} must be a positive whole number or None, got {value!r}")

    def prlimit_args(self) -> tuple[str, ...]:
        """``prlimit`` options setting soft and hard limits (empty when nothing is limited)."""
        options = {
            "nproc": self.processes,
            "as": self.memory,
            "fsize": self.file_size,
            "nofile": self.open_files,
            "cpu": self.cpu_seconds,
        }
        return tuple(f"--{key}={value}" for key, value in options.items() if value is not None)


def _real_entry(folder: str, name: str) -> os.stat_result | None:
    """``lstat`` of ``folder/name`` when it is a real file or folder directly in ``folder``.

    ``folder`` must be a resolved path. Links, other file types and anything whose resolved
    path is not exactly ``folder/name`` (a parent swapped for a link) give ``None``.
    """
    path = os.path.join(folder, name)
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if not (stat.S_ISDIR(found.st_mode) or stat.S_ISREG(found.st_mode)):
        return None
    return found if os.path.realpath(path) == path else None


def _real_entries(folder: str) -> list[tuple[str, bool]]:
    """The real (not linked) files and folders directly in ``folder`` (a resolved path), sorted,
    each with whether it is a folder."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = [(entry.name, _real_entry(folder, entry.name)) for entry in entries]
    return sorted((name, stat.S_ISDIR(real.st_mode)) for name, real in found if real is not None)


def _skill_folders(folder: str) -> list[str]:
    """Names of the real (not linked) skill folders in ``folder``; dot-entries are state."""
    if _real_entry(os.path.dirname(folder), os.path.basename(folder)) is None:
        return []
    return [name for name, is_dir in _real_entries(folder) if is_dir and not name.startswith(".")]


def _shown_without(source: str, target: str, hidden: Sequence[str]) -> list[str]:
    """Binds that show the host folder ``source`` read-only at ``target`` without the ``hidden``
    paths below it (relative, not empty): ``target`` becomes a read-only tmpfs holding a
    read-only bind of each real entry of ``source`` but the hidden ones, and an entry that holds
    a hidden path is shown the same way. The tmpfs holds what ``source`` held when the command
    started: what appears there later (a hidden folder staged meanwhile) stays out of view."""
    below: dict[str, list[str]] = {}
    for path in hidden:
        name, _, rest = path.partition("/")
        below.setdefault(name, []).append(rest)
    args = ["--tmpfs", target]
    for name, is_dir in _real_entries(source):
        inner = below.get(name)
        if inner is not None and "" in inner:
            continue
        if inner is not None and is_dir:
            args += _shown_without(os.path.join(source, name), f"{target}/{name}", inner)
        else:  # -try: an entry removed since it was listed is simply not shown
            args += ["--ro-bind-try", os.path.join(source, name), f"{target}/{name}"]
    return [*args, "--remount-ro", target]


@functools.cache
def _hosts_file(network: bool) -> str:
    """A file this process writes once: :data:`LOOPBACK_HOSTS`, followed with the network on by
    the host's ``/etc/hosts`` (its names are reachable then). Bound read-only at ``/etc/hosts``."""
    text = LOOPBACK_HOSTS
    if network:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text += Path("/etc/hosts").read_text(encoding="utf-8")
    path = os.path.join(own_folder("harness-etc-"), "hosts")
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o644)
    return path


def _network_binds(network: bool) -> list[str]:
    """``/etc/hosts`` of every sandbox; with the network on, the host's network and resolver files."""
    args = ["--ro-bind", _hosts_file(network), "/etc/hosts"]
    if network:
        args.append("--share-net")
        for file in _NETWORK_FILES:
            args += ["--ro-bind-try", file, file]
    return args


def _path_binds(folders: Sequence[str], *, workspace: str, uid: int | None) -> list[str]:
    """Read-only binds that show the ``path`` folders inside the sandbox where the host has them.

    Folders the sandbox shows anyway (the system folders, ``/workspace``, the shim folder) need
    none. A virtualenv's ``bin/`` binds the whole virtualenv: its ``python`` finds its packages
    through ``pyvenv.cfg`` next to ``bin/``. Raises ``ValueError`` naming a folder that cannot be
    bound safely (see :func:`_bind_problem`).
    """
    args: list[str] = []
    for folder in folders:
        if any(folder == shown or folder.startswith(shown + "/") for shown in (*_SYSTEM_DIRS, WORKSPACE, SHIM_DIR)):
            continue
        parent = os.path.dirname(folder)
        venv = os.path.basename(folder) == "bin" and _real_entry(parent, "pyvenv.cfg") is not None
        source = parent if venv else folder
        problem = _bind_problem(folder, workspace, uid) or _bind_problem(source, workspace, uid)
        if problem:
            raise ValueError(
                f"filesystem path folder {folder!r} cannot be shown in the sandbox: {problem}; use a folder "
                "outside the workspace that only the operator can change, or leave it out of path"
            )
        args += ["--ro-bind", source, source]
    return args


def _bind_problem(folder: str, workspace: str, uid: int | None) -> str | None:
    """Why ``folder`` must not be bound into sandboxes, or ``None``. It must be a normalised path
    whose every component is a real folder (``lstat``: no links), none writable by everyone
    without the sticky bit; the folder itself neither writable by group or others nor owned by
    the sandbox ``uid``; neither inside the workspace (tenants write there) nor containing it."""
    if os.path.normpath(folder) != folder:
        return "it is not a normalised path"
    if any(
        inner == outer or inner.startswith(outer.rstrip("/") + "/")
        for inner, outer in ((folder, workspace), (workspace, folder))
    ):
        return f"it is inside or contains the workspace {workspace}"
    current = "/"
    found = os.lstat(current)
    for part in folder.strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            found = os.lstat(current)
        except OSError:
            return f"{current} does not exist"
        if stat.S_ISLNK(found.st_mode):
            return f"{current} is a symlink"
        if not stat.S_ISDIR(found.st_mode):
            return f"{current} is not a directory"
        if found.st_mode & stat.S_IWOTH and not found.st_mode & stat.S_ISVTX:
            return f"{current} is writable by everyone"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by group or others"
    if uid is not None and found.st_uid == uid:
        return f"it is owned by the sandbox user (uid {uid})"
    return None


def _system_binds() -> list[str]:
    args: list[str] = []
    for folder in _SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for file in _SYSTEM_FILES:
        args += ["--ro-bind-try", file, file]
    return args


@functools.cache
def _probe(launcher: tuple[str, ...], bwrap: str, uid: int | None, gid: int | None, workspace: str) -> None:
    """Start one sandbox that only runs ``true``; raise :class:`SandboxUnavailable` if it fails."""
    argv = [
        *launcher, bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        *_system_binds(), "--proc", "/proc", "--dev", "/dev",
        "--ro-bind", workspace, WORKSPACE, "--", "true",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": SEARCH_PATH},
            user=uid,
            group=gid,
            extra_groups=[] if uid is not None else None,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise SandboxUnavailable(f"bubblewrap could not start: {error}") from error
    if done.returncode != 0:
        who = f" as uid {uid}" if uid is not None else ""
        raise SandboxUnavailable(
            f"bubblewrap cannot run{who} (exit {done.returncode}): {done.stderr.strip()}; "
            "it needs unprivileged user namespaces, the workspace must be reachable by the "
            "sandbox user, and the limits must leave it room to start"
        )


class SandboxFilesystem(LocalFilesystem):
    """The host workspace ``workspace_root``; commands run inside bubblewrap.

    Files are read and written on the host exactly as :class:`LocalFilesystem` does (a scoped
    view is ``<workspace_root>/<user_id>``). :meth:`run` starts a fresh sandbox per command:

    * all namespaces unshared (network too, unless ``network=True``), ``--cap-drop ALL``,
      ``--die-with-parent --new-session``, a minimal environment;
    * when this process is root, bubblewrap itself runs as the unprivileged host ``uid``/``gid``
      (default 65534, "nobody") — inside a user namespace bubblewrap started by root would still
      be host uid 0 for file access. Everything the filesystem creates in a user's area is
      handed to that uid so the sandbox can change it;
    * only read-only system folders (``/usr`` and the ``/lib``, ``/bin`` links) and a handful of
      ``/etc`` files are bound — not ``/etc`` as a whole; ``/proc``, ``/dev`` and ``/tmp`` are
      private; when the system has only ``python3``, the harness's shim folder (a ``python``
      link) is bound read-only at :data:`SHIM_DIR` and searched after the ``path`` folders
      (paths as the sandbox sees them) and before ``/usr/local/bin:/usr/bin:/bin``;
    * ``/workspace`` is the user's area (writable, persisted on the host) except its
      machine-owned parts: ``/workspace/skills``, ``/workspace/.harness`` and the folders
      :meth:`protect` names (the skill pipeline's other skill folders, ``.agents/skills``, ...)
      are read-only, the parents of the latter bound onto themselves so they cannot be moved.
      The shared roots in ``projected`` (default :data:`DEFAULT_PROJECTED`; ``()`` turns
      projection off) appear read-only under ``/workspace``. ``/workspace/skills`` merges the
      workspace's skill folders with the user's own, all read-only, a user folder replacing the
      same-name workspace folder whole; dot-entries (usage, audit, reviews, archive) of either
      are not projected. Skills enter a user's area through the filesystem (the harness's
      authoring tools), never through the shell. The unscoped filesystem's sandbox holds only
      the projected roots. Bind mounts copy nothing: exec bits survive and host deletions show
      in the next command. bubblewrap leaves empty mount points for the projected names in the
      user's area on the host (an empty ``AGENTS.md``, ``knowledge/``, ...);
    * nothing is bound from a path that is a link: every projected entry and skill folder is
      checked with ``lstat`` (and its resolved path) when each command starts; a link is left
      out. A link at ``skills`` or ``.harness`` of the user's area refuses the command with
      :class:`PathEscapeError` (remove it with :meth:`delete`);
    * a command's ``hidden`` paths below a projected entry (the staged folders of skills its
      user may not act on yet) are left out: each folder on the way to one is shown as a
      read-only tmpfs holding binds of its other entries, so a hidden path is absent however
      it is spelled, and one that appears while the command runs stays absent. Without hidden
      paths the projection is one bind per entry, as above;
    * every command runs under ``limits`` (:class:`SandboxLimits`, applied with ``prlimit``):
      processes, address space, file size, open files, optionally CPU seconds, and a capped
      ``/tmp``. ``timeout`` is the default and the ceiling of a command's wall-clock time.

    Construction starts a probe sandbox and raises :class:`SandboxUnavailable` with the reason
    when bubblewrap cannot run (never a silent fallback to the host). ``shell_path`` returns
    ``/workspace/...`` paths.
    """

    def __init__(
        self,
        workspace_root: str | os.PathLike[str],
        *,
        network: bool = False,
        projected: Sequence[str] = DEFAULT_PROJECTED,
        uid: int = NOBODY,
        gid: int | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        timeout: float | None = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        path: Sequence[str] = (),
        bwrap: str = "bwrap",
        limits: SandboxLimits = SandboxLimits(),
        _parent: SandboxFilesystem | None = None,
        _user_id: str = "",
    ) -> None:
        as_root = os.geteuid() == 0
        self._uid = uid if as_root else None
        self._gid = (uid if gid is None else gid) if as_root else None
        # Only user areas are handed to the sandbox uid; the shared workspace stays ours.
        self._area_owner = (self._uid, self._gid) if self._uid is not None and self._gid is not None else None
        for name in projected:
            if not isinstance(name, str) or segment_problem(name) is not None:
                raise ValueError(f"projected entry {name!r} must be one top-level name")
        self._projected = tuple(projected)
        self._protected: tuple[str, ...] = _parent._protected if _parent is not None else ()
        self._network = network
        self._limits = limits
        self._workspace: str
        self._bwrap: str
        self._launcher: tuple[str, ...]
        if _parent is not None:
            # A scoped view (see _scoped): the user's area, in the parent's checked sandbox.
            area, lock_dir = _parent._area(_user_id)
            super().__init__(
                area,
                shell=True,
                output_limit=output_limit,
                timeout=timeout,
                env=env,
                path=path,
                owner=self._area_owner,
                _lock_dir=lock_dir,
            )
            self._workspace = _parent._workspace
            self._path_binds: list[str] = _parent._path_binds
            self._scoped_area = True
            self._bwrap = _parent._bwrap
            self._launcher = _parent._launcher
            return
        super().__init__(workspace_root, shell=True, output_limit=output_limit, timeout=timeout, env=env, path=path)
        self._workspace = self._real_root
        self._scoped_area = False
        found = shutil.which(bwrap)
        if found is None:
            raise SandboxUnavailable(f"bubblewrap ({bwrap!r}) is not installed or not on PATH")
        self._bwrap = found
        self._launcher = self._prlimit_launcher(limits)
        os.makedirs(self._workspace, exist_ok=True)
        self._path_binds = _path_binds(self._path, workspace=self._workspace, uid=self._uid)
        _probe(self._launcher, self._bwrap, self._uid, self._gid, self._workspace)

    @staticmethod
    def _prlimit_launcher(limits: SandboxLimits) -> tuple[str, ...]:
        options = limits.prlimit_args()
        if not options:
            return ()
        prlimit = shutil.which("prlimit")
        if prlimit is None:
            raise SandboxUnavailable(
                "prlimit (util-linux) is not installed; it sets the sandbox's resource limits. "
                "Install it, or pass SandboxLimits with every limit None to run without limits"
            )
        return (prlimit, *options, "--")

    @property
    def limits(self) -> SandboxLimits:
        """The resource limits every command runs under."""
        return self._limits

    def _scoped(self, user_id: str) -> SandboxFilesystem:
        return SandboxFilesystem(
            self._workspace,
            network=self._network,
            projected=self._projected,
            uid=self._uid if self._uid is not None else NOBODY,
            gid=self._gid,
            output_limit=self._output_limit,
            timeout=self._timeout,
            env=self._env,
            path=self._path,
            bwrap=self._bwrap,
            limits=self._limits,
            _parent=self,
            _user_id=user_id,
        )

    @property
    def shell_isolated(self) -> bool:
        return True

    def _shell_path(self, path: str) -> str:
        return f"{WORKSPACE}/{path}" if path else WORKSPACE

    def _start_in(self, cwd: str) -> str:
        """Where a command starts inside the sandbox: ``cwd`` below the user's area, or an
        absolute sandbox path ``run()`` allowed (a skill folder, bound read-only)."""
        return cwd if cwd.startswith("/") else self._shell_path(cwd)

    def _skill_binds(self) -> list[str]:
        """``/workspace/skills``: the workspace's and the user's real skill folders, read-only."""
        target = f"{WORKSPACE}/skills"
        shared = os.path.join(self._workspace, "skills")
        shared_names = _skill_folders(shared) if "skills" in self._projected else []
        own = os.path.join(self._real_root, "skills")
        own_names = _skill_folders(own) if self._scoped_area else []
        args = ["--tmpfs", target]
        for name in shared_names:
            if name not in own_names:
                args += ["--ro-bind", os.path.join(shared, name), f"{target}/{name}"]
        for name in own_names:
            args += ["--ro-bind", os.path.join(own, name), f"{target}/{name}"]
        return [*args, "--remount-ro", target]

    def _projection_binds(self, hidden: Sequence[str]) -> list[str]:
        """The shared entries of :attr:`projected` (but ``skills``) read-only, without the
        ``hidden`` paths below them."""
        args: list[str] = []
        for name in self._projected:
            if name == "skills" or _real_entry(self._workspace, name) is None:
                continue
            source, target = os.path.join(self._workspace, name), f"{WORKSPACE}/{name}"
            inner = [path[len(name) + 1 :] for path in hidden if path == name or path.startswith(name + "/")]
            if "" in inner:
                continue
            if inner and os.path.isdir(source):
                args += _shown_without(source, target, inner)
            else:
                args += ["--ro-bind", source, target]
        return args

    def _machine_binds(self) -> list[str]:
        """``/workspace/.harness`` of the user's area: read-only, or an empty read-only folder."""
        target = f"{WORKSPACE}/{MACHINE_DIR}"
        if _real_entry(self._real_root, MACHINE_DIR) is None:
            return ["--tmpfs", target, "--remount-ro", target]
        return ["--ro-bind", os.path.join(self._real_root, MACHINE_DIR), target]

    def protect(self, folders: Sequence[str]) -> None:
        """Bind ``folders`` of each user's area read-only in its sandbox (see
        :meth:`_protected_binds`); folders below ``skills/``, ``.harness/`` and the projected
        entries already are (a projected name shows the shared workspace's entry, not the user's)."""
        super().protect(folders)
        added = [normalize_path(f) for f in folders]
        covered = {"skills", MACHINE_DIR, *self._projected}
        kept = {f for f in (*self._protected, *added) if f.split("/", 1)[0] not in covered}
        # A folder inside another protected one is covered by it.
        self._protected = tuple(sorted(f for f in kept if not any(f.startswith(o + "/") for o in kept)))

    def _protected_binds(self) -> list[str]:
        """The protected folders of the user's area read-only, each of their parents bound onto
        itself: a mount point cannot be renamed or removed, so the shell can neither write a
        protected folder nor move it (or a parent) aside and make a new one in its place.

        Missing folders are created by the harness, one segment at a time; a segment that is a
        link or not a folder refuses the command (:class:`PathEscapeError`), so nothing is
        created or bound through a link the tenant made."""
        args: list[str] = []
        bound: set[str] = set()
        for folder in self._protected:
            parts = folder.split("/")
            for depth in range(1, len(parts) + 1):
                relative = "/".join(parts[:depth])
                if relative in bound:
                    continue
                host = self._protected_dir(relative)
                leaf = depth == len(parts)
                args += ["--ro-bind" if leaf else "--bind", host, f"{WORKSPACE}/{relative}"]
                bound.add(relative)
        return args

    def _protected_dir(self, relative: str) -> str:
        """The host folder ``relative`` of the user's area, created if missing; its parent was
        checked by the previous call."""
        host = os.path.join(self._real_root, relative)
        parent, name = os.path.split(host)
        if not os.path.lexists(host):
            try:
                os.mkdir(host, 0o755)
            except FileExistsError:
                pass
            else:
                self._chown(host)
        found = _real_entry(parent, name)
        if found is None or not stat.S_ISDIR(found.st_mode):
            raise PathEscapeError(
                f"{relative!r} in the user's area is a link or not a folder; it holds skills the sandbox "
                f"shows read-only and binds no links. Remove {relative!r} with the filesystem's delete() "
                "and run again"
            )
        return host

    def _check_machine_entries(self) -> None:
        """Refuse to run when the user's ``skills`` or ``.harness`` is anything but a folder."""
        for name in ("skills", MACHINE_DIR):
            path = os.path.join(self._real_root, name)
            if os.path.lexists(path) and not (
                (found := _real_entry(self._real_root, name)) and stat.S_ISDIR(found.st_mode)
            ):
                raise PathEscapeError(
                    f"{name!r} in the user's area is a link or not a folder; the sandbox binds "
                    f"no links. Remove {name!r} with the filesystem's delete() and run again"
                )

    def _sandbox_argv(self, command: str, cwd: str, hidden: Sequence[str]) -> list[str]:
        args = [*self._launcher, self._bwrap, "--unshare-all"]
        args += _network_binds(self._network)
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += _system_binds()
        shims = shim_dir()
        if shims is not None:
            args += ["--ro-bind", shims, SHIM_DIR]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if self._limits.tmp_size is not None:
            args += ["--size", str(self._limits.tmp_size)]
        args += ["--tmpfs", "/tmp"]
        args += self._path_binds  # after /tmp: the private /tmp would hide a folder bound below it
        if self._scoped_area:
            args += ["--bind", self._real_root, WORKSPACE]
        else:
            args += ["--tmpfs", WORKSPACE]
        args += self._projection_binds(hidden)
        if self._scoped_area or "skills" in self._projected:
            args += self._skill_binds()
        if self._scoped_area:
            args += self._machine_binds()
            args += self._protected_binds()
        else:
            args += ["--remount-ro", WORKSPACE]
        args += ["--chdir", self._start_in(cwd), "--", "/bin/sh", "-c", command]
        return args

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
        def prepare() -> list[str]:
            if self._scoped_area:
                self._makedirs(self._real_root)
                self._chown(self._real_root)
                self._check_machine_entries()
            if not cwd.startswith("/"):  # an absolute start is a path inside the sandbox
                self._resolve(cwd)
            return self._sandbox_argv(command, cwd, hidden)

        argv = await anyio.to_thread.run_sync(prepare)
        sandbox_env = {
            "PATH": command_path(self._path, SHIM_DIR if shim_dir() else None),
            "HOME": WORKSPACE,
            "TMPDIR": "/tmp",
            **BASE_ENV,
            **self._env,
            **env,
        }
        return await run_process(
            argv,
            cwd="/",
            env=prepended(sandbox_env, prepend),
            timeout=self._timeout if timeout is None else timeout,
            output_limit=self._output_limit,
            user=self._uid,
            group=self._gid,
        )

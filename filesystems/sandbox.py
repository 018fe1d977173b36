"""A workspace whose shell runs in a bubblewrap sandbox, one sandbox per user scope."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

import anyio

from ._process import run_process
from .base import CommandResult
from .errors import SandboxUnavailable
from .local import DEFAULT_OUTPUT_LIMIT, DEFAULT_TIMEOUT, LocalFilesystem

__all__ = ["DEFAULT_PROJECTED", "NOBODY", "SandboxFilesystem"]

#: Shared workspace entries projected read-only into every sandbox.
DEFAULT_PROJECTED: tuple[str, ...] = (
    "AGENTS.md",
    "skills",
    "subagents",
    "knowledge",
    ".skills-cache",
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
_NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf")
_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"


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
def _probe(bwrap: str, uid: int | None, gid: int | None, workspace: str) -> None:
    """Start one sandbox that only runs ``true``; raise :class:`SandboxUnavailable` if it fails."""
    argv = [
        bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        *_system_binds(), "--proc", "/proc", "--dev", "/dev",
        "--ro-bind", workspace, WORKSPACE, "--", "true",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": _SEARCH_PATH},
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
            "it needs unprivileged user namespaces, and the workspace must be reachable by the "
            "sandbox user"
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
      private;
    * ``/workspace`` is the user's area (writable, persisted on the host). The shared roots in
      ``projected`` (default :data:`DEFAULT_PROJECTED`; ``()`` turns projection off) appear
      read-only under ``/workspace``. ``/workspace/skills`` merges the workspace's skill folders
      (read-only) with the user's own (writable), a user folder replacing the same-name
      workspace folder whole; new top-level folders made there by a command are not kept —
      create skill folders through the filesystem. The unscoped filesystem's sandbox holds only
      the projected roots. Bind mounts copy nothing: exec bits survive and host deletions show
      in the next command. bubblewrap leaves empty mount points for the projected names in the
      user's area on the host (an empty ``AGENTS.md``, ``knowledge/``, ...).

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
        bwrap: str = "bwrap",
    ) -> None:
        as_root = os.geteuid() == 0
        self._uid = uid if as_root else None
        self._gid = (uid if gid is None else gid) if as_root else None
        super().__init__(
            workspace_root, shell=True, output_limit=output_limit, timeout=timeout, env=env
        )
        # Only user areas are handed to the sandbox uid; the shared workspace stays ours.
        self._area_owner = (
            (self._uid, self._gid) if self._uid is not None and self._gid is not None else None
        )
        for name in projected:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"projected entry {name!r} must be one top-level name")
        self._projected = tuple(projected)
        self._network = network
        self._workspace = self._real_root
        self._scoped_area = False
        found = shutil.which(bwrap)
        if found is None:
            raise SandboxUnavailable(f"bubblewrap ({bwrap!r}) is not installed or not on PATH")
        self._bwrap = found
        os.makedirs(self._workspace, exist_ok=True)
        _probe(self._bwrap, self._uid, self._gid, self._workspace)

    def _scoped(self, user_id: str) -> SandboxFilesystem:
        view = super()._scoped(user_id)
        assert isinstance(view, SandboxFilesystem)
        view._scoped_area = True
        view._owner = self._area_owner
        return view

    def _shell_path(self, path: str) -> str:
        return f"{WORKSPACE}/{path}" if path else WORKSPACE

    def _skill_binds(self) -> list[str]:
        """``/workspace/skills``: workspace folders read-only, the user's own folders on top."""
        shared = os.path.join(self._workspace, "skills")
        own = os.path.join(self._real_root, "skills")
        target = f"{WORKSPACE}/skills"
        own_names = sorted(os.listdir(own)) if os.path.isdir(own) else []
        shared_names = sorted(os.listdir(shared)) if os.path.isdir(shared) else []
        if not own_names and not shared_names:
            return []
        args = ["--tmpfs", target]
        for name in shared_names:
            if name not in own_names:
                args += ["--ro-bind", os.path.join(shared, name), f"{target}/{name}"]
        for name in own_names:
            args += ["--bind", os.path.join(own, name), f"{target}/{name}"]
        return args

    def _sandbox_argv(self, command: str, cwd: str) -> list[str]:
        args = [self._bwrap, "--unshare-all"]
        if self._network:
            args.append("--share-net")
            for file in _NETWORK_FILES:
                args += ["--ro-bind-try", file, file]
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += _system_binds()
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if self._scoped_area:
            args += ["--bind", self._real_root, WORKSPACE]
        else:
            args += ["--tmpfs", WORKSPACE]
        for name in self._projected:
            if name == "skills" and self._scoped_area:
                args += self._skill_binds()
                continue
            host = os.path.join(self._workspace, name)
            if os.path.lexists(host):
                args += ["--ro-bind", host, f"{WORKSPACE}/{name}"]
        if not self._scoped_area:
            args += ["--remount-ro", WORKSPACE]
        args += ["--chdir", self._shell_path(cwd), "--", "/bin/sh", "-c", command]
        return args

    async def _run(
        self, command: str, *, cwd: str, env: dict[str, str], timeout: float | None
    ) -> CommandResult:
        def prepare() -> list[str]:
            if self._scoped_area:
                self._makedirs(self._real_root)
                self._chown(self._real_root)
            self._resolve(cwd)
            return self._sandbox_argv(command, cwd)

        argv = await anyio.to_thread.run_sync(prepare)
        sandbox_env = {
            "PATH": _SEARCH_PATH,
            "HOME": WORKSPACE,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            **self._env,
            **env,
        }
        return await run_process(
            argv,
            cwd="/",
            env=sandbox_env,
            timeout=self._timeout if timeout is None else timeout,
            output_limit=self._output_limit,
            user=self._uid,
            group=self._gid,
        )

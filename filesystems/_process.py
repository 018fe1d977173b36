"""Run one command in its own process group with an output cap and a timeout."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

import anyio

from .base import CommandResult

if TYPE_CHECKING:  # an annotation: anyio loads its stream classes when a process first runs
    from anyio.abc import ByteReceiveStream

__all__ = [
    "BASE_ENV",
    "SEARCH_PATH",
    "check_shell_env",
    "command_path",
    "own_folder",
    "prepended",
    "run_process",
    "shim_dir",
]

#: The system folders every shell searches (after the configured ones and the shim folder).
SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Variables every shell command starts with, before the configured ones: UTF-8 text, and no
#: ``__pycache__`` written next to the Python scripts a command runs (a skill's staged folder
#: holds the market's files and nothing else).
BASE_ENV: Mapping[str, str] = MappingProxyType({"LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"})


class _Capture:
    """Keeps the first ``limit`` bytes of a stream, draining the rest so the writer never blocks."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.truncated = False

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        async for chunk in stream:
            room = self._limit - self._kept
            if len(chunk) > room:
                self.truncated = True
                chunk = chunk[: max(room, 0)]
            if chunk:
                self._chunks.append(chunk)
                self._kept += len(chunk)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float | None,
    output_limit: int,
    user: int | None = None,
    group: int | None = None,
) -> CommandResult:
    """Run ``argv`` as the leader of a new session and collect a :class:`CommandResult`.

    At the timeout the whole process group is killed. When the leader exits, whatever it left
    running in its group is killed too, so no stray process keeps the output pipes open.
    """
    started = time.monotonic()
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        user=user,
        group=group,
        extra_groups=[] if user is not None else None,
    )
    stdout, stderr = _Capture(output_limit), _Capture(output_limit)
    timed_out = False
    try:
        with anyio.move_on_after(timeout) as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stdout.drain, process.stdout)
                tasks.start_soon(stderr.drain, process.stderr)
                await process.wait()
                _kill_group(process.pid)
        timed_out = scope.cancelled_caught
    finally:
        _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return CommandResult(
        exit_code=process.returncode if process.returncode is not None else -signal.SIGKILL,
        stdout=stdout.text(),
        stderr=stderr.text(),
        truncated=stdout.truncated or stderr.truncated,
        timed_out=timed_out,
        duration=time.monotonic() - started,
    )


@functools.cache
def shim_dir() -> str | None:
    """A folder holding ``python`` (a link to ``python3``) when only ``python3`` is on the search
    path, else ``None``. Public skills run ``python scripts/x.py``; Debian and Ubuntu ship only
    ``python3``. The folder is created once per process (:func:`own_folder`).
    """
    if shutil.which("python", path=SEARCH_PATH) is not None:
        return None
    python3 = shutil.which("python3", path=SEARCH_PATH)
    if python3 is None:
        return None
    folder = own_folder("harness-shims-")
    os.symlink(python3, os.path.join(folder, "python"))
    return folder


def own_folder(prefix: str) -> str:
    """A new folder only this process writes (:func:`tempfile.mkdtemp`), readable by sandboxes
    (which run as another uid), removed at exit."""
    import tempfile  # a shell's first command; an agent that runs none never loads it

    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, True)
    os.chmod(folder, 0o755)
    return folder


def command_path(extra: Sequence[str], shims: str | None) -> str:
    """``PATH`` of a shell: the configured ``extra`` folders, the shim folder, the system ones."""
    return ":".join([*extra, *([shims] if shims else []), SEARCH_PATH])


def check_shell_env(env: Mapping[str, str], path: Sequence[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """Validated copies of a filesystem's ``env`` and ``path`` options.

    ``PATH`` is built from ``path`` (absolute folders, no ``:``), so ``env`` may not set it.
    Raises ``ValueError`` naming the bad entry.
    """
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key or "=" in key or "\0" in key + value:
            raise ValueError(f"shell environment entry {key!r}: names and values must be strings without '=' or NUL")
    if "PATH" in env:
        raise ValueError("shell environment: set PATH through the path option (extra folders), not env")
    for folder in path:
        if not isinstance(folder, str) or not folder.startswith("/") or ":" in folder or "\0" in folder:
            raise ValueError(f"shell path entry {folder!r} must be an absolute folder without ':'")
    return dict(env), tuple(path)


def prepended(env: dict[str, str], prepend: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """``env`` with each variable of ``prepend`` starting with its folders (``:``-joined), before
    the value ``env`` gives it, if any."""
    merged = dict(env)
    for key, folders in prepend.items():
        merged[key] = ":".join([*folders, *([env[key]] if env.get(key) else [])])
    return merged

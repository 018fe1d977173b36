"""Install a set of checked requirements into a plain package folder with uv.

``uv pip install --target <folder>`` writes packages (and their ``bin/`` scripts) into a folder
that holds no interpreter, so it works wherever the shell sees it: at its host path in a local
shell, under ``/workspace/.skills-cache`` in a sandbox. uv runs on the host with a clean
environment and ``--no-config`` (no ``uv.toml``, ``pip.conf`` or ``UV_INDEX_URL`` of the
operator's shell picks the index behind the harness's back), for the interpreter the skill's
shell runs, wheels only unless the operator allows source builds, under a time limit; the
result is checked against a size limit before it is renamed into place (see
:mod:`harness.pipeline.environments`). ``--no-config`` also keeps uv from reading a ``uv.toml``
or ``pyproject.toml`` in its cwd (the environments folder), its parents or the user's config
folder, and uv is given checked requirement names only, never a skill's file: nothing of a
skill's ``[tool.uv]`` settings reaches it.

Credentials in the index settings (``https://user:token@mirror/simple``) never leave this module
in a message: uv echoes an option value it cannot parse, so its error output is passed through
:func:`filesystems.redact_secrets`, with the settings' own secrets, before it becomes an error
(SECURITY rule 7).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from filesystems import redact_secrets, url_credentials
from harness.errors import HarnessError

__all__ = ["EnvironmentBuildError", "IndexSettings", "error_line", "find_uv", "install"]

#: Variables of this process that uv still sees: where its cache is, proxies and certificates.
PASSED_ENV = (
    "HOME",
    "TMPDIR",
    "UV_CACHE_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
_OUTPUT_LIMIT = 64 * 1024


class EnvironmentBuildError(HarnessError):
    """uv could not be found or did not install the requirements; the message says why. The
    environment manager turns it into a failed state and a diagnostic: it never ends a turn."""


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexSettings:
    """Where packages come from and which kinds are allowed (part of an environment's hash)."""

    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    only_binary: bool = True

    def __repr__(self) -> str:
        return self.redact(
            f"IndexSettings(index_url={self.index_url!r}, find_links={self.find_links!r}, "
            f"no_index={self.no_index!r}, only_binary={self.only_binary!r})"
        )

    def arguments(self) -> list[str]:
        """uv's options for these settings."""
        args = ["--only-binary", ":all:"] if self.only_binary else []
        args += ["--no-index"] if self.no_index else []
        args += ["--index-url", self.index_url] if self.index_url else []
        for link in self.find_links:
            args += ["--find-links", link]
        return args

    def redact(self, text: str) -> str:
        """``text`` with the credentials of these settings' URLs (and of any URL) masked."""
        secrets = [secret for url in (self.index_url or "", *self.find_links) for secret in url_credentials(url)]
        return redact_secrets(text, *secrets)


def find_uv() -> str:
    """The uv binary: the one the ``uv`` Python package ships, else ``uv`` on ``PATH``.
    Raises :class:`EnvironmentBuildError` naming the extra to install."""
    with contextlib.suppress(ImportError, FileNotFoundError):
        import uv

        return str(uv.find_uv_bin())
    found = shutil.which("uv")
    if found is None:
        raise EnvironmentBuildError("uv is not installed: pip install 'agent-skill-harness[envs]' (or put uv on PATH)")
    return found


async def install(
    requirements: Sequence[str],
    *,
    target: Path,
    python: str,
    index: IndexSettings,
    timeout: float,
) -> None:
    """Install ``requirements`` (already checked: none starts with ``-``) into ``target`` for the
    interpreter ``python`` (a host path). Raises :class:`EnvironmentBuildError` with uv's error line when uv
    fails, or when it runs longer than ``timeout`` seconds (its process group is killed)."""
    argv = [
        find_uv(),
        "pip",
        "install",
        "--no-config",
        "--link-mode",
        "copy",  # never hard links into uv's cache: the folder is fixed up and served on its own
        "--target",
        str(target),
        "--python",
        python,
        *index.arguments(),
        *requirements,
    ]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
    env.update((name, os.environ[name]) for name in PASSED_ENV if name in os.environ)
    process = await anyio.open_process(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=str(target.parent),
        env=env,
        start_new_session=True,
    )
    output = bytearray()
    try:
        with anyio.move_on_after(timeout) as scope:
            if process.stderr is not None:
                async for chunk in process.stderr:
                    output += chunk[: max(0, _OUTPUT_LIMIT - len(output))]
            await process.wait()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if scope.cancelled_caught:
        raise EnvironmentBuildError(f"uv did not finish within {timeout:g} s (environments.timeout)")
    if process.returncode != 0:
        message = error_line(output.decode("utf-8", "replace"), process.returncode)
        if index.only_binary and "no usable wheels" in message:
            message += "; source distributions are not built (environments.only_binary)"
        raise EnvironmentBuildError(index.redact(message))


def error_line(stderr: str, code: int | None) -> str:
    """uv's error in one line: its ``error:`` line and the ``cause:`` lines after it, else its
    last line, else the exit code."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    if start is None:
        return lines[-1] if lines else f"uv exited with code {code}"
    picked = [lines[start].removeprefix("error:").strip()]
    picked += [
        line.partition(":")[2].strip() for line in lines[start + 1 :] if line.startswith(("cause:", "Caused by:"))
    ]
    return ": ".join(picked)

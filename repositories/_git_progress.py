"""A git fetch run with ``--progress``: its object counts reported as they come, its progress
lines kept out of the stderr that error messages quote."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from filesystems import ProgressReporter

__all__ = ["run_reporting", "without_progress"]

# "Receiving objects:  45% (450/1000), 1.20 MiB | 2.00 MiB/s": the objects this side has got.
_RECEIVING = re.compile(rb"Receiving objects: +\d+% \((\d+)/(\d+)\)")
# Any line of git's progress display, the remote's included ("remote: Counting objects: 3%
# (1/30)", "remote: Enumerating objects: 30, done.", "remote: Total 30 (delta 0), ..."); git's
# messages start with a lowercase word ("fatal:", "error:", "hint:") or are prose without a count.
_PROGRESS = re.compile(rb"(?:remote: )?(?:[A-Z][a-z]+(?: [a-z]+)*: +\d|Total \d)")
_SEPARATORS = re.compile(rb"[\r\n]")
_CHUNK = 4096


def run_reporting(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float, reporter: ProgressReporter
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` (a ``git fetch --progress``) as ``subprocess.run(..., capture_output=True,
    timeout=timeout)`` would, its stdout discarded, feeding each received-objects line of its
    stderr to ``reporter`` while it runs. Raises ``subprocess.TimeoutExpired`` (the process is
    killed) and ``OSError`` when it cannot start. The result's stderr is what git printed besides
    its progress display."""
    process = subprocess.Popen(
        list(argv),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: each read returns what git has written so far
    )
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        process.kill()

    # A watchdog only here: a fetch is rare (the remote moved), unlike the check on every turn.
    watchdog = threading.Timer(timeout, expire)
    watchdog.start()
    stream = process.stderr
    assert stream is not None
    stderr = bytearray()
    try:
        pending = b""
        while chunk := stream.read(_CHUNK):
            stderr += chunk
            *lines, pending = _SEPARATORS.split(pending + chunk)
            for line in lines:
                _report(line, reporter)
        _report(pending, reporter)
        process.wait()
    finally:
        watchdog.cancel()
        if process.returncode is None:
            process.kill()
            process.wait()
        stream.close()
    if expired.is_set():
        raise subprocess.TimeoutExpired(list(argv), timeout)
    return subprocess.CompletedProcess(list(argv), process.returncode, b"", without_progress(bytes(stderr)))


def _report(line: bytes, reporter: ProgressReporter) -> None:
    found = _RECEIVING.match(line)
    if found is not None:
        reporter.update(int(found[1]), total=int(found[2]))


def without_progress(stderr: bytes) -> bytes:
    """``stderr`` without the lines of git's progress display (each rewritten in place with
    ``\\r``): what git prints with ``--quiet``, for messages."""
    kept = []
    for line in stderr.split(b"\n"):
        parts = [part for part in line.split(b"\r") if part.strip() and not _PROGRESS.match(part)]
        if parts or not line.strip():
            kept.append(b"".join(parts) or line)
    return b"\n".join(kept)

"""Many git objects read in one ``git cat-file --batch`` stream, and the sizes of a whole tree's
blobs from one ``git ls-tree``: a subprocess per call instead of a round trip (and a tree walk)
per file."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["BlobReadError", "blob_sizes", "read_blobs"]


class BlobReadError(Exception):
    """``git cat-file`` failed, timed out, or answered out of step (the message says which)."""


def read_blobs(clone: Path, shas: Sequence[str], *, env: Mapping[str, str], timeout: float) -> dict[str, bytes]:
    """The bytes of each blob in ``shas`` (object ids in hex) of the repository at ``clone``.

    A missing object, or one that is not a blob, is left out of the result. Raises
    :class:`BlobReadError` when git cannot be run, fails or takes longer than ``timeout``."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    try:
        process = subprocess.Popen(
            ["git", "-C", str(clone), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
        )
    except OSError as exc:
        raise BlobReadError(f"cannot run git cat-file: {exc}") from None
    assert process.stdin is not None and process.stdout is not None
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        process.kill()

    def write() -> None:
        # From a thread: git answers while it reads, and both pipes would fill otherwise.
        try:
            assert process.stdin is not None
            process.stdin.write("".join(f"{sha}\n" for sha in wanted).encode("ascii"))
            process.stdin.close()
        except OSError:
            pass  # git went away; the reader reports it

    watchdog = threading.Timer(timeout, expire)
    writer = threading.Thread(target=write, name="git-cat-file-writer", daemon=True)
    watchdog.start()
    writer.start()
    found: dict[str, bytes] = {}
    try:
        for sha in wanted:
            header = process.stdout.readline().split()
            if not header or header[0].decode("ascii", "replace") != sha:
                raise BlobReadError(f"git cat-file answered out of step for {sha}")
            if header[1:] == [b"missing"] or len(header) != 3:
                continue
            size = int(header[2])
            data = process.stdout.read(size)
            process.stdout.read(1)  # the newline after the contents
            if len(data) != size:
                raise BlobReadError(f"git cat-file ended inside {sha}")
            if header[1] == b"blob":
                found[sha] = data
    except (OSError, ValueError) as exc:
        raise BlobReadError(f"git cat-file failed: {exc}") from None
    finally:
        watchdog.cancel()
        process.kill()
        process.stdout.close()
        process.wait()
        writer.join()
    if expired.is_set():
        raise BlobReadError(f"git cat-file timed out after {timeout:g}s")
    return found


def blob_sizes(clone: Path, tree: str, *, env: Mapping[str, str], timeout: float) -> dict[str, int]:
    """The size of every blob below the tree ``tree`` (by object id), from one ``git ls-tree``.

    Raises :class:`BlobReadError` when git fails or times out."""
    try:
        done = subprocess.run(
            ["git", "-C", str(clone), "ls-tree", "-r", "-l", "-z", tree],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BlobReadError(f"git ls-tree failed: {exc}") from None
    if done.returncode != 0:
        raise BlobReadError(f"git ls-tree failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    sizes: dict[str, int] = {}
    for record in done.stdout.split(b"\0"):
        info = record.partition(b"\t")[0].split()
        if len(info) == 4 and info[1] == b"blob":
            sizes[info[2].decode("ascii")] = int(info[3])
    return sizes

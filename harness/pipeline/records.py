"""Whether an installed environment still holds what its installer wrote.

Every distribution uv installs gets a ``<name>.dist-info/RECORD``: each file it wrote, with its
SHA-256 digest. :func:`changes` compares an environment folder with the records of the
distributions in it and names what differs: files no record lists (a ``sitecustomize.py``, a
``.pth`` file, a console script dropped in ``bin/``), files whose bytes changed (a replaced
module) and files that are gone. It reads the host folder without following links and
opens no file a record names outside it. It proves the folder was not changed by something
that left the records alone; whoever can write the folder can rewrite a record too, so it
detects tampering and mistakes, it does not stop them (a sandbox sees the folder read-only).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import stat
from io import BufferedReader
from pathlib import Path

__all__ = ["changes"]

_LISTED = 10  # names shown per kind of change


def changes(folder: Path) -> str | None:
    """What differs in ``folder`` from the RECORD files of the distributions in it
    (``"not installed by it: a, b; changed: c; missing: d"``), or ``None`` when nothing does.
    Reads every file (blocking: run it in a worker thread)."""
    present = _files(folder)
    recorded: dict[str, str] = {}
    for path in present:
        parent, _, name = path.rpartition("/")
        if name == "RECORD" and parent.endswith(".dist-info") and "/" not in parent:
            recorded.update(_record(folder / path))
    added = sorted(set(present) - set(recorded))
    missing = sorted(set(recorded) - set(present))
    changed = sorted(path for path in set(present) & set(recorded) if not _matches(folder / path, recorded[path]))
    found = [
        f"{what}: {_listed(paths)}"
        for what, paths in (("not installed by it", added), ("changed", changed), ("missing", missing))
        if paths
    ]
    return "; ".join(found) or None


def _files(folder: Path) -> list[str]:
    """Every entry below ``folder`` that is not a folder (links too), relative, with ``/``."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder):  # does not follow links to folders: they are listed
        base = os.path.relpath(root, folder)
        prefix = "" if base == "." else f"{base}/"
        found += [prefix + name for name in files]
        found += [prefix + name for name in dirs if os.path.islink(os.path.join(root, name))]
    return found


def _record(path: Path) -> dict[str, str]:
    """The files one RECORD lists, each with its ``algorithm=digest`` (empty: not hashed)."""
    file = _regular(path)
    if file is None:
        return {}
    with file:
        try:
            text = file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return {}
    return {row[0]: row[1] if len(row) > 1 else "" for row in csv.reader(text.splitlines()) if row}


def _matches(path: Path, digest: str) -> bool:
    """Whether ``path`` is a regular file with ``digest`` (``sha256=<urlsafe base64>``); a file
    its record does not hash (the RECORD itself) matches when it is a regular file."""
    algorithm, _, expected = digest.partition("=")
    if digest and algorithm not in hashlib.algorithms_guaranteed:
        return False
    file = _regular(path)
    if file is None:
        return False
    with file:
        if not digest:
            return True
        found = hashlib.file_digest(file, algorithm).digest()
    return base64.urlsafe_b64encode(found).rstrip(b"=").decode() == expected


def _regular(path: Path) -> BufferedReader | None:
    """``path`` opened for reading if it is a regular file (never through a link, never
    waiting on a pipe), else ``None``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        return None
    return open(descriptor, "rb")


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:_LISTED])
    return shown if len(paths) <= _LISTED else f"{shown}, ... ({len(paths)} in all)"

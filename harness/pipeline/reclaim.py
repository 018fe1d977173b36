"""Reclaiming environments no skill needs any more (``.skills-cache/.envs``).

An environment is *needed* while a live process's lease names it (every skill that process
serves, and every environment one of its commands runs with: see
:mod:`harness.pipeline.leases`) or the caller says so. :func:`sweep` removes the others once
they have been unneeded for ``retention`` seconds: its folder's time is set to now whenever a
holder claims it or a sweep finds it needed, so its age is the time since something last needed
it (or since it was built).

A sweep runs under the environments' lock, which holders take to write their leases, so an
environment is never removed between a holder's claim and its use. It renames each folder it
removes to ``.trash-<hash>-<random>`` before deleting it: a sweep killed halfway leaves whole
environments or trash, never half an environment under its hash, and the next sweep empties the
trash. Nothing outside the environments' folder is touched and no link is followed: a link
where an environment belongs is removed as a link, and a sweep over a folder that is itself a
link (or inside one) removes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_RETENTION", "Reclaimed", "build_leftovers", "empty_trash", "remove_builds", "sweep", "tree_size"]

log = logging.getLogger(__name__)

#: Seconds an environment no live process needs is kept before it is reclaimed (7 days).
DEFAULT_RETENTION = 7 * 86400.0
_HASH = re.compile(r"[0-9a-f]{64}")
_BUILD = re.compile(r"\.build-([0-9a-f]{64})-[0-9a-f]+")
_TRASH = ".trash-"


@dataclass(frozen=True, kw_only=True, slots=True)
class Reclaimed:
    """What a reclamation did: the environments it ``removed`` (hashes), the bytes it deleted
    (``freed``: theirs and those of leftovers), the ``needed`` ones it kept, and the unneeded
    ones ``kept`` because they are younger than the retention."""

    removed: tuple[str, ...] = ()
    freed: int = 0
    needed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of ``harness skills env --gc --json``."""
        return {
            "removed": list(self.removed),
            "freed": self.freed,
            "needed": list(self.needed),
            "kept": list(self.kept),
        }


def sweep(folder: Path, *, needed: Collection[str], retention: float, now: float | None = None) -> Reclaimed:
    """Move the environments of ``folder`` that are not ``needed`` and are older than
    ``retention`` seconds into the trash, refresh the time of the needed ones, and return what
    it did; the trash itself is emptied by :func:`empty_trash` (outside the lock). Blocking; the
    caller holds the environments' lock."""
    if not _real_folder(folder):
        return Reclaimed()
    now = time.time() if now is None else now
    removed: list[str] = []
    kept: list[str] = []
    found: list[str] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not _HASH.fullmatch(entry.name):
            continue
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)  # not ours: a link is never served nor followed
            continue
        if not stat.S_ISDIR(info.st_mode):
            continue
        if entry.name in needed:
            found.append(entry.name)
            with contextlib.suppress(FileNotFoundError):
                os.utime(entry.path, (now, now), follow_symlinks=False)
        elif now - info.st_mtime < retention:
            kept.append(entry.name)
        else:
            os.rename(entry.path, folder / f"{_TRASH}{entry.name}-{os.urandom(4).hex()}")
            removed.append(entry.name)
    if removed:
        log.info("reclaiming %d environment(s) in %s", len(removed), folder)
    return Reclaimed(removed=tuple(removed), needed=tuple(found), kept=tuple(kept))


def empty_trash(folder: Path) -> int:
    """Delete what sweeps renamed into the trash; returns the bytes deleted (blocking; needs no
    lock: nothing serves the trash)."""
    if not _real_folder(folder):
        return 0
    return sum(_remove(Path(entry.path)) for entry in os.scandir(folder) if entry.name.startswith(_TRASH))


def build_leftovers(folder: Path) -> set[str]:
    """The hashes whose build folders (``.build-<hash>-<random>``) are in ``folder``: a build in
    progress, or what a killed one left (blocking)."""
    if not _real_folder(folder):
        return set()
    return {match[1] for entry in os.scandir(folder) if (match := _BUILD.fullmatch(entry.name))}


def remove_builds(folder: Path, key: str) -> int:
    """Delete the build folders of ``key``; returns the bytes deleted (blocking; the caller
    holds its build lock, so none of them belongs to a build in progress)."""
    if not _real_folder(folder):
        return 0
    found = [entry for entry in os.scandir(folder) if (match := _BUILD.fullmatch(entry.name)) and match[1] == key]
    return sum(_remove(Path(entry.path)) for entry in found)


def _real_folder(folder: Path) -> bool:
    """Whether ``folder`` and its parent (the staging cache) are folders, not links."""
    try:
        return all(stat.S_ISDIR(os.lstat(path).st_mode) for path in (folder, folder.parent))
    except FileNotFoundError:
        return False


def _remove(path: Path) -> int:
    """Remove ``path``: a link or file as itself, a folder with everything below it (links
    inside are removed, never followed); returns the bytes of the regular files it held."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            size = tree_size(path)
            shutil.rmtree(path)
            return size
        path.unlink()
    except OSError as exc:
        log.warning("could not remove %s: %s", path, exc)
    return 0


def tree_size(folder: Path) -> int:
    """The bytes of the regular files below ``folder`` (links not followed; files that vanish
    meanwhile are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(root, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
    return total

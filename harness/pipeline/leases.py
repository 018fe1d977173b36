"""Leases: what each process sharing a workspace's cache still needs there.

Processes that share a workspace (with different configurations, or as replicas on several
hosts over one shared folder) each hold a *lease* in a folder of the cache: a file
``<host>-<pid>-<token>.json`` naming the entries (staged folders, environments) the process
serves or uses. Whoever removes entries first reads the other leases and keeps what any live one
names. A lease is live while its process lives: on this host the process id says so; a process
on another host cannot be asked, so its lease counts as live until it is ``grace`` seconds old,
and a holder that runs for longer renews it (:meth:`Lease.write` with the same keys). A dead
lease is removed by the reader that finds it.

A lease file is written atomically (temp + rename). Writing one's own lease and reading the
others' must happen under the lock that also guards the removals (the caller's): otherwise a
remover could read a lease just before it names an entry, and remove that entry after.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DEFAULT_LEASE_GRACE", "Lease"]

#: Seconds another host's lease counts as live after it was last written.
DEFAULT_LEASE_GRACE = 86400.0
_TEMP_PATTERN = ".*.tmp-*"
# Leases held by this process (several pipelines may share one workspace): a lease whose pid is
# ours is live while it is here.
_LIVE: set[Path] = set()


class Lease:
    """This process's lease in ``folder`` (see the module): ``keys`` is what it names now."""

    def __init__(self, folder: Path, *, grace: float = DEFAULT_LEASE_GRACE) -> None:
        self.folder = folder
        self.grace = grace
        self.path = folder / f"{_safe(socket.gethostname())}-{os.getpid()}-{os.urandom(4).hex()}.json"
        self.keys: frozenset[str] = frozenset()
        self.written = False

    def write(self, keys: Iterable[str]) -> None:
        """Name ``keys`` (blocking; the same keys again renew the lease's time)."""
        _LIVE.add(self.path)
        self.keys = frozenset(keys)
        lease = {"pid": os.getpid(), "host": socket.gethostname(), "time": time.time(), "keys": sorted(self.keys)}
        _atomic_write(self.path, json.dumps(lease).encode())
        self.written = True

    def others(self) -> set[str]:
        """The keys the other live leases in the folder name; dead leases (and temporary files of
        writers killed mid-write) are removed on the way (blocking)."""
        keys: set[str] = set()
        host = socket.gethostname()
        for path in self.folder.glob(_TEMP_PATTERN):
            with contextlib.suppress(OSError):
                path.unlink()
        for path in self.folder.glob("*.json"):
            if path == self.path:
                continue
            try:
                lease = json.loads(path.read_bytes())
                live = (
                    _pid_alive(lease.get("pid"), path)
                    if lease.get("host") == host
                    else time.time() - float(lease.get("time", 0)) < self.grace
                )
            except (OSError, ValueError, TypeError, AttributeError):
                continue  # unreadable: neither trusted nor removed
            if live:
                keys.update(str(k) for k in lease.get("keys", []))
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
        return keys

    def release(self) -> None:
        """Give the lease up: what only it named may be removed by others (blocking)."""
        _LIVE.discard(self.path)
        if self.written:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.written = False


def _pid_alive(pid: object, path: Path) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return path in _LIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        temp.write_bytes(data)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:64] or "host"

"""Where runs and snapshots live, through the filesystem abstraction (in the caller's scope).

Layout below the filesystem root::

    .harness/runs/<run_id>/run.json          the run record (one file, compare-and-set)
    .harness/runs/<run_id>/trajectory.jsonl  append-only events, one JSON line each
    .harness/runs/<run_id>/artifacts/...     files the run's actions store
    .harness/skill-snapshots/<hash>/manifest.json and files/...

Crash safety: a run record appears whole (exclusive create) and changes only by a
compare-and-set on its version; the events of a write ride in the record's ``outbox`` and are
appended to the trajectory afterwards, under a lock, skipping those already there — so a crash
between the two writes is repaired by the next writer and no event is lost or doubled.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from filesystems import AbstractFilesystem, PathEscapeError, VersionConflict
from harness.engine.errors import RunConflict, RunExists, RunNotFound
from harness.engine.run import Event, Run, event_from_json, run_from_json, run_to_json
from harness.engine.snapshot import Snapshot

__all__ = ["RunStore", "WritePoint", "check_run_id", "run_relative"]

#: Called with the name of every durable write just before it happens: ``snapshot-file``,
#: ``snapshot-manifest``, ``run-create``, ``run-update``, ``trajectory-append``, ``artifact``.
WritePoint = Callable[[str], None]

_ROOT = ".harness"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_DRIVE = re.compile(r"^[A-Za-z]:")


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is a safe folder name (letters, digits, ``._-``, ≤ 128 chars)."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ValueError(
            f"run id {run_id!r} must be 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return run_id


def run_relative(path: str) -> str:
    """Check a run-relative path; refuses absolute, ``~``, drive letters, ``..`` and NUL.

    Raises :class:`filesystems.PathEscapeError` (a ``PermissionError``).
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise PathEscapeError(f"run path {path!r} must be a non-empty string without NUL")
    if path.startswith(("/", "\\", "~")) or _DRIVE.match(path):
        raise PathEscapeError(f"run path {path!r} must be relative to the run (no /, ~ or drive)")
    parts = re.split(r"[\\/]", path)
    if ".." in parts:
        raise PathEscapeError(f"run path {path!r} must not contain '..'")
    return "/".join(part for part in parts if part not in ("", "."))


class RunStore:
    """Run records, trajectories, artifacts and snapshots on one (scoped) filesystem."""

    def __init__(self, filesystem: AbstractFilesystem, *, before_write: WritePoint | None = None) -> None:
        self.filesystem = filesystem
        self._before_write = before_write

    def _point(self, name: str) -> None:
        if self._before_write is not None:
            self._before_write(name)

    @staticmethod
    def _run_dir(run_id: str) -> str:
        return f"{_ROOT}/runs/{check_run_id(run_id)}"

    # -- snapshots -------------------------------------------------------------------------------

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        """Store ``snapshot`` unless already stored; the manifest is written last."""
        base = f"{_ROOT}/skill-snapshots/{snapshot.hash}"
        fs = self.filesystem
        if await fs.exists(f"{base}/manifest.json"):
            return
        for path, data in sorted(snapshot.files.items()):
            self._point("snapshot-file")
            await fs.write_bytes(f"{base}/files/{path}", data)
        self._point("snapshot-manifest")
        await fs.write_bytes(f"{base}/manifest.json", _dumps(dict(snapshot.manifest)))

    async def load_snapshot(self, snapshot_hash: str) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The stored manifest and files of ``snapshot_hash`` (unverified)."""
        base = f"{_ROOT}/skill-snapshots/{snapshot_hash}"
        manifest = json.loads(await self.filesystem.read_bytes(f"{base}/manifest.json"))
        paths = [f"{base}/files/{entry['path']}" for entry in manifest["files"]]
        contents = await self.filesystem.read_many(paths)
        prefix = f"{base}/files/"
        return manifest, {p[len(prefix):]: data for p, data in contents.items()}

    # -- run records -------------------------------------------------------------------------------

    async def create(self, run: Run) -> str:
        """Create the record of a new run; returns its version. :class:`RunExists` if taken."""
        self._point("run-create")
        try:
            stat = await self.filesystem.create_exclusive(
                f"{self._run_dir(run.run_id)}/run.json", _dumps(run_to_json(run))
            )
        except FileExistsError as exc:
            raise RunExists(f"run {run.run_id!r} already exists; resume it or choose another id") from exc
        return stat.version

    async def load(self, run_id: str) -> tuple[Run, str]:
        """The run record and the version to compare-and-set against. :class:`RunNotFound`."""
        path = f"{self._run_dir(run_id)}/run.json"
        try:
            # Version first, then content: if a write slips in between, the version is stale
            # and the next compare-and-set fails instead of overwriting newer state.
            version = (await self.filesystem.stat(path)).version
            data = await self.filesystem.read_bytes(path)
        except FileNotFoundError as exc:
            raise RunNotFound(f"no run {run_id!r} in this workspace scope") from exc
        return run_from_json(json.loads(data)), version

    async def replace(self, run: Run, version: str) -> str:
        """Write ``run`` if the record is still at ``version``; :class:`RunConflict` otherwise."""
        self._point("run-update")
        try:
            stat = await self.filesystem.compare_and_set(
                f"{self._run_dir(run.run_id)}/run.json", _dumps(run_to_json(run)), version
            )
        except VersionConflict as exc:
            raise RunConflict(
                f"run {run.run_id!r} was advanced by another process; nothing was written "
                "(inspect it again before retrying)"
            ) from exc
        return stat.version

    # -- trajectory --------------------------------------------------------------------------------

    async def flush(self, run: Run) -> None:
        """Append the outbox events the trajectory does not have yet (idempotent)."""
        if not run.outbox:
            return
        path = f"{self._run_dir(run.run_id)}/trajectory.jsonl"
        async with self.filesystem.lock(f"engine-trajectory-{run.run_id}"):
            written = {event.seq for event in await self._read_events(path)}
            missing = [event for event in run.outbox if event.seq not in written]
            if missing:
                lines = "".join(json.dumps(e.to_json(), ensure_ascii=False) + "\n" for e in missing)
                self._point("trajectory-append")
                await self.filesystem.append(path, lines.encode("utf-8"))

    async def events(self, run: Run, since: int = 0) -> list[Event]:
        """The run's events after ``since``, including any not yet flushed, by ``seq``."""
        path = f"{self._run_dir(run.run_id)}/trajectory.jsonl"
        by_seq: dict[int, Event] = {}
        for event in [*await self._read_events(path), *run.outbox]:
            by_seq.setdefault(event.seq, event)
        return [by_seq[seq] for seq in sorted(by_seq) if seq > since]

    async def _read_events(self, path: str) -> list[Event]:
        try:
            data = await self.filesystem.read_bytes(path)
        except FileNotFoundError:
            return []
        return [event_from_json(json.loads(line)) for line in data.decode("utf-8").splitlines() if line]

    # -- artifacts ---------------------------------------------------------------------------------

    async def artifact_files(self, run_id: str) -> frozenset[str]:
        """Paths (relative to ``artifacts/``) of the files stored for the run."""
        base = f"{self._run_dir(run_id)}/artifacts"
        return frozenset(stat.path[len(base) + 1:] for stat in await self.filesystem.walk(base))

    async def write_artifact(self, run_id: str, path: str, data: bytes) -> str:
        """Store an artifact file atomically; returns its run-relative path (``artifacts/...``)."""
        relative = f"artifacts/{run_relative(path)}"
        full = f"{self._run_dir(run_id)}/{relative}"
        await self._refuse_link_escape(run_id, full)
        self._point("artifact")
        await self.filesystem.write_bytes(full, data)
        return relative

    async def read_artifact(self, run_id: str, path: str) -> bytes:
        """The bytes of an artifact file (``FileNotFoundError`` if absent)."""
        full = f"{self._run_dir(run_id)}/artifacts/{run_relative(path)}"
        await self._refuse_link_escape(run_id, full)
        return await self.filesystem.read_bytes(full)

    async def _refuse_link_escape(self, run_id: str, full: str) -> None:
        host = self.filesystem.host_path(full)
        run_dir = self.filesystem.host_path(self._run_dir(run_id))
        if host is None or run_dir is None:
            return
        inside = await anyio.to_thread.run_sync(_resolves_inside, str(host), str(run_dir))
        if not inside:
            raise PathEscapeError(f"run path {full!r} resolves outside the run's folder (symlink)")


def _resolves_inside(path: str, folder: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base + os.sep)


def _dumps(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")


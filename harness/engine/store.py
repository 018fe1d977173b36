"""Where runs and snapshots live, through the filesystem abstraction (in the caller's scope).

Layout below the filesystem root::

    .harness/runs/<run_id>/run.json          the run record (one file, compare-and-set)
    .harness/runs/<run_id>/trajectory.jsonl  append-only events, one JSON line each
    .harness/runs/<run_id>/artifacts/...     files the run's actions store
    .harness/runs/<run_id>/context.md, checkpoint.json   Comet side files (views, never read)
    .harness/skill-snapshots/<hash>/manifest.json and files/...

Authenticity: the user's area is writable by parties the engine does not trust (a tenant's
shell, a model's tools if misconfigured), so every run record carries an HMAC-SHA256 ``mac``
over its content made with a per-workspace :class:`RunKey`, kept at ``.harness/engine.key`` of
the *unscoped* filesystem (outside every user's area, never projected into a sandbox). A record
that fails the check raises :class:`RunTampered` instead of being acted on.

Freshness and ownership: the signed content includes the record's ``revision`` and its
``owner`` (:class:`RunOwner`: agent and user), so a record copied from another user's area (or
another agent's) is refused; and :class:`RevisionMarks` keeps, beside the key, the newest
revision the engine has written or read of every run (``.harness/revisions/``), so restoring an
older, validly signed ``run.json`` is refused too — across process restarts — and a run id is
never used twice in one scope. Records written before owners were signed are refused with a
message saying so (finish them with the engine version that started them).

Crash safety: a run record appears whole (exclusive create) and changes only by a
compare-and-set on its version; the events of a write ride in the record's ``outbox`` and are
appended to the trajectory afterwards, under a lock, skipping those already there — so a crash
between the two writes is repaired by the next writer and no event is lost or doubled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import anyio.to_thread

from filesystems import (
    MACHINE_DIR,
    AbstractFilesystem,
    PathEscapeError,
    VersionConflict,
    loose_path_parts,
    loose_path_problem,
    machine_key,
)
from harness.engine.errors import RunConflict, RunExists, RunNotFound, RunRecordCorrupt, RunTampered
from harness.engine.run import Event, Run, event_from_json, run_from_json, run_to_json
from harness.engine.snapshot import Snapshot

__all__ = ["RevisionMarks", "RunKey", "RunOwner", "RunStore", "WritePoint", "check_run_id", "run_relative"]

#: Called with the name of every durable write just before it happens: ``snapshot-file``,
#: ``snapshot-manifest``, ``run-create``, ``run-update``, ``trajectory-append``, ``artifact``,
#: ``side-file``.
WritePoint = Callable[[str], None]

_KEY_FILE = f"{MACHINE_DIR}/engine.key"
_MAC = "mac"
_OWNER = "owner"
_MARKS = f"{MACHINE_DIR}/revisions"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is a safe folder name (letters, digits, ``._-``, ≤ 128 chars)."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ValueError(
            f"run id {run_id!r} must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return run_id


def run_relative(path: str) -> str:
    """Check a run-relative path; refuses absolute, ``~``, drive letters, ``..`` and NUL.

    Raises :class:`filesystems.PathEscapeError` (a ``PermissionError``).
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise PathEscapeError(f"run path {path!r} must be a non-empty string without NUL")
    problem = loose_path_problem(path)
    if problem == "absolute":
        raise PathEscapeError(f"run path {path!r} must be relative to the run (no /, ~ or drive)")
    if problem == "parent":
        raise PathEscapeError(f"run path {path!r} must not contain '..'")
    return "/".join(loose_path_parts(path))


class RunKey:
    """The secret run records are authenticated with, shared by every scope of a workspace.

    ``RunKey(filesystem)`` reads ``.harness/engine.key`` of ``filesystem`` (the workspace root,
    not a user's area) on first use, creating it with 32 random bytes and mode 0600 if missing
    (:func:`filesystems.machine_key`); pass
    ``secret=`` to supply one instead (e.g. from the application's secret store).
    """

    def __init__(self, filesystem: AbstractFilesystem | None = None, *, secret: bytes | None = None) -> None:
        if filesystem is None and secret is None:
            raise ValueError("a RunKey needs the workspace filesystem or a secret")
        if secret is not None and len(secret) < 16:
            raise ValueError("a run key secret must be at least 16 bytes")
        self._filesystem = filesystem
        self._secret = secret

    async def secret(self) -> bytes:
        """The key's bytes (loaded or created once, then kept)."""
        if self._secret is None:
            assert self._filesystem is not None
            self._secret = await machine_key(self._filesystem, _KEY_FILE)
        return self._secret

    async def sign(self, document: Mapping[str, Any]) -> str:
        """The ``mac`` of a run record (all of its fields but ``mac``)."""
        body = {k: v for k, v in document.items() if k != _MAC}
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return hmac.new(await self.secret(), payload, hashlib.sha256).hexdigest()


@dataclass(frozen=True, kw_only=True)
class RunOwner:
    """Whose runs a store holds: the ``agent`` (its name) and the ``user`` (``None``: the
    workspace's own runs). Signed into every record; a record of another owner is refused."""

    agent: str = ""
    user: str | None = None

    def describe(self) -> str:
        """``user 'alice' of agent 'assistant'`` (for messages)."""
        return f"{f'user {self.user!r}' if self.user is not None else 'the workspace'} of agent {self.agent!r}"


class RevisionMarks:
    """The newest revision the engine has seen of each run: its high-water marks.

    Kept on ``filesystem`` (the workspace root, beside the run key: outside every user's area,
    the model's file tools and any sandbox) at ``.harness/revisions/<owner digest>/<run_id>``,
    so they outlive the process. A mark only grows, under a lock.
    """

    def __init__(self, filesystem: AbstractFilesystem) -> None:
        self._filesystem = filesystem

    @staticmethod
    def _digest(owner: RunOwner) -> str:
        return hashlib.sha256(json.dumps(asdict(owner), sort_keys=True).encode()).hexdigest()[:32]

    def _path(self, owner: RunOwner, run_id: str) -> str:
        return f"{_MARKS}/{self._digest(owner)}/{check_run_id(run_id)}"

    async def newest(self, owner: RunOwner, run_id: str) -> int | None:
        """The newest revision seen of ``owner``'s run ``run_id``, ``None`` if never seen."""
        try:
            return int((await self._filesystem.read_bytes(self._path(owner, run_id))).decode("ascii"))
        except FileNotFoundError:
            return None

    async def raise_to(self, owner: RunOwner, run_id: str, revision: int) -> None:
        """Record that ``revision`` of the run was seen (a lower one leaves the mark alone)."""
        path = self._path(owner, run_id)
        async with self._filesystem.lock(f"engine-revision-{self._digest(owner)}-{run_id}"):
            newest = await self.newest(owner, run_id)
            if newest is None or revision > newest:
                await self._filesystem.write_bytes(path, str(revision).encode("ascii"))


class RunStore:
    """Run records, trajectories, artifacts and snapshots on one (scoped) filesystem.

    ``key`` authenticates run records (default: a :class:`RunKey` of ``filesystem`` itself —
    pass the workspace's key when ``filesystem`` is a user's scope); ``owner`` is signed into
    every record and checked on every read; ``marks`` keeps the newest revision of each run
    (default: :class:`RevisionMarks` of ``filesystem`` — pass the workspace's, like the key).
    """

    def __init__(
        self,
        filesystem: AbstractFilesystem,
        *,
        before_write: WritePoint | None = None,
        key: RunKey | None = None,
        owner: RunOwner | None = None,
        marks: RevisionMarks | None = None,
    ) -> None:
        self.filesystem = filesystem
        self._before_write = before_write
        self._key = key or RunKey(filesystem)
        self.owner = owner or RunOwner()
        self._marks = marks or RevisionMarks(filesystem)

    def _point(self, name: str) -> None:
        if self._before_write is not None:
            self._before_write(name)

    @staticmethod
    def _run_dir(run_id: str) -> str:
        return f"{MACHINE_DIR}/runs/{check_run_id(run_id)}"

    # -- snapshots -------------------------------------------------------------------------------

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        """Store ``snapshot`` unless already stored; the manifest is written last."""
        base = f"{MACHINE_DIR}/skill-snapshots/{snapshot.hash}"
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
        base = f"{MACHINE_DIR}/skill-snapshots/{snapshot_hash}"
        manifest = json.loads(await self.filesystem.read_bytes(f"{base}/manifest.json"))
        paths = [f"{base}/files/{entry['path']}" for entry in manifest["files"]]
        contents = await self.filesystem.read_many(paths)
        prefix = f"{base}/files/"
        return manifest, {p[len(prefix) :]: data for p, data in contents.items()}

    # -- run records -------------------------------------------------------------------------------

    async def create(self, run: Run) -> str:
        """Create the record of a new run; returns its version. :class:`RunExists` if taken,
        or if the id was used before in this scope (its high-water mark stays)."""
        if await self._marks.newest(self.owner, run.run_id) is not None:
            raise RunExists(
                f"run id {run.run_id!r} was used before by {self.owner.describe()}; run ids are never reused "
                "(an older record of that run could be restored over the new one): choose another id"
            )
        self._point("run-create")
        try:
            stat = await self.filesystem.create_exclusive(
                f"{self._run_dir(run.run_id)}/run.json", await self._signed(run)
            )
        except FileExistsError as exc:
            raise RunExists(f"run {run.run_id!r} already exists; resume it or choose another id") from exc
        await self._marks.raise_to(self.owner, run.run_id, run.revision)
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
        return await self._verified(run_id, data), version

    async def _signed(self, run: Run) -> bytes:
        document = run_to_json(run)
        document[_OWNER] = asdict(self.owner)
        document[_MAC] = await self._key.sign(document)
        return _dumps(document)

    async def _verified(self, run_id: str, data: bytes) -> Run:
        folder = self._run_dir(run_id)
        problem = f"the record of run {run_id!r} was changed outside the workflow engine"
        remedy = f"nothing was performed — as the operator, delete {folder}/ and start a new run"
        try:
            document = json.loads(data)
            mac = document.get(_MAC) if isinstance(document, dict) else None
        except ValueError:
            raise RunTampered(f"{problem} ({folder}/run.json is not valid JSON); {remedy}") from None
        if not isinstance(mac, str) or not hmac.compare_digest(mac, await self._key.sign(document)):
            raise RunTampered(
                f"{problem} or comes from another workspace ({folder}/run.json: its signature does not "
                f"match this workspace's {_KEY_FILE}); {remedy}"
            )
        try:
            run = run_from_json(document)
        except (KeyError, TypeError, ValueError) as exc:
            raise RunRecordCorrupt(
                f"the record of run {run_id!r} ({folder}/run.json) cannot be read by this engine "
                f"({type(exc).__name__}: {exc}); nothing was performed — resume it with the engine "
                f"version that wrote it, or as the operator delete {folder}/ and start a new run"
            ) from None
        if run.run_id != run_id:
            raise RunTampered(f"{problem} (it names run {run.run_id!r}); nothing was performed")
        self._check_owner(run_id, document.get(_OWNER), remedy)
        await self._check_fresh(run, remedy)
        return run

    def _check_owner(self, run_id: str, owner: object, remedy: str) -> None:
        """Refuse a record signed for another owner, or written before owners were signed."""
        if owner is None:
            raise RunRecordCorrupt(
                f"the record of run {run_id!r} was written by an engine version that did not bind records to "
                "their owner and revision, so a copy or an older version of it cannot be told from it; nothing "
                "was performed — finish the run with the engine version that started it, or as the operator "
                f"delete {self._run_dir(run_id)}/ and start a new run"
            )
        if owner != asdict(self.owner):
            raise RunTampered(
                f"the record of run {run_id!r} belongs to {_describe(owner)}, not to {self.owner.describe()}: it was "
                f"copied from another area; {remedy}"
            )

    async def _check_fresh(self, run: Run, remedy: str) -> None:
        """Refuse a revision older than the newest seen; remember a newer one."""
        newest = await self._marks.newest(self.owner, run.run_id)
        if newest is not None and run.revision < newest:
            raise RunTampered(
                f"the record of run {run.run_id!r} is revision {run.revision}, but the engine has seen revision "
                f"{newest}: an older copy was restored over it; {remedy}"
            )
        if newest is None or run.revision > newest:
            await self._marks.raise_to(self.owner, run.run_id, run.revision)

    async def replace(self, run: Run, version: str) -> str:
        """Write ``run`` if the record is still at ``version``; :class:`RunConflict` otherwise."""
        self._point("run-update")
        try:
            stat = await self.filesystem.compare_and_set(
                f"{self._run_dir(run.run_id)}/run.json", await self._signed(run), version
            )
        except VersionConflict as exc:
            raise RunConflict(
                f"run {run.run_id!r} was advanced by another process; nothing was written "
                "(inspect it again before retrying)"
            ) from exc
        await self._marks.raise_to(self.owner, run.run_id, run.revision)
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
        events = []
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if not line:
                continue
            try:
                events.append(event_from_json(json.loads(line)))
            except (KeyError, TypeError, ValueError) as exc:
                raise RunRecordCorrupt(
                    f"the trajectory {path} has an unreadable line {number} ({type(exc).__name__}: {exc}); "
                    "it is append-only and written by the engine alone — restore it from a backup, or "
                    "as the operator delete the run's folder and start a new run"
                ) from None
        return events

    # -- artifacts ---------------------------------------------------------------------------------

    async def artifact_files(self, run_id: str) -> frozenset[str]:
        """Paths (relative to ``artifacts/``) of the files stored for the run."""
        base = f"{self._run_dir(run_id)}/artifacts"
        return frozenset(stat.path[len(base) + 1 :] for stat in await self.filesystem.walk(base))

    async def write_artifact(self, run_id: str, path: str, data: bytes) -> str:
        """Store an artifact file atomically; returns its run-relative path (``artifacts/...``)."""
        relative = f"artifacts/{run_relative(path)}"
        full = f"{self._run_dir(run_id)}/{relative}"
        await self._refuse_link_escape(run_id, full)
        self._point("artifact")
        await self.filesystem.write_bytes(full, data)
        return relative

    async def write_side_file(self, run_id: str, name: str, data: bytes) -> None:
        """Replace the run's side file ``name`` (``context.md``, ``checkpoint.json``)."""
        self._point("side-file")
        await self.filesystem.write_bytes(f"{self._run_dir(run_id)}/{name}", data)

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


def _describe(owner: object) -> str:
    """A signed record's owner for messages (it passed the signature check, but stay careful)."""
    if isinstance(owner, dict):
        user = owner.get("user")
        return RunOwner(agent=str(owner.get("agent")), user=None if user is None else str(user)).describe()
    return f"another owner ({owner!r})"


def _resolves_inside(path: str, folder: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base + os.sep)


def _dumps(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")

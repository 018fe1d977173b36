"""Immutable, content-hashed snapshots of a skill package.

The hash is the SHA-256 of a canonical JSON document (keys sorted by code point, no spaces)
holding the skill's name, its parsed definition and ``{path, sha256}`` of every package file.
A run is pinned to that hash; resuming recomputes both the document hash and every file's
digest, so a changed byte anywhere is detected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.engine.definition import Workflow
from harness.engine.errors import SnapshotIntegrityError
from harness.engine.package import SkillPackage
from harness.engine.run import SCHEMA_VERSION, canonical_json

__all__ = ["Snapshot", "make_snapshot", "verify_snapshot"]


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A frozen package: its content ``hash``, the hashed ``manifest`` and the file bytes."""

    hash: str
    manifest: Mapping[str, Any]
    files: Mapping[str, bytes] = field(repr=False)


def make_snapshot(package: SkillPackage, workflow: Workflow) -> Snapshot:
    """Freeze ``package`` (whose parsed definition is ``workflow``)."""
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "skill": package.name,
        "definition": asdict(workflow),
        "files": [
            {"path": path, "sha256": hashlib.sha256(data).hexdigest()} for path, data in sorted(package.files.items())
        ],
    }
    return Snapshot(hash=_digest(manifest), manifest=manifest, files=dict(package.files))


def verify_snapshot(expected_hash: str, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> SkillPackage:
    """Check a stored snapshot against ``expected_hash``; return its package.

    Raises :class:`SnapshotIntegrityError` naming what differs.
    """
    if _digest(manifest) != expected_hash:
        raise SnapshotIntegrityError(
            f"skill snapshot {expected_hash}: its manifest no longer matches the hash; it was "
            "changed after the run was pinned to it"
        )
    listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    for path, digest in listed.items():
        data = files.get(path)
        if data is None:
            raise SnapshotIntegrityError(f"skill snapshot {expected_hash}: file {path!r} is missing")
        if hashlib.sha256(data).hexdigest() != digest:
            raise SnapshotIntegrityError(f"skill snapshot {expected_hash}: file {path!r} was modified (sha256 differs)")
    return SkillPackage(name=manifest["skill"], files={p: files[p] for p in listed})


def _digest(manifest: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(manifest).encode("utf-8")).hexdigest()

"""The report shelf: every curator run and umbrella review, kept next to the audit log.

Reports are JSON files in ``skills/.audit/reports/<utc stamp>-<kind>.json`` on the shared
workspace (machine-owned state, like the audit log beside them). Nothing deletes them; the
audit log's own listing ignores the folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from filesystems import AbstractFilesystem
from harness.clock import utc_stamp
from harness.learning._layout import AUDIT

__all__ = ["REPORTS", "ReportEntry", "ReportShelf"]

REPORTS = f"{AUDIT}/reports"
_NAME = re.compile(r"(?P<stamp>\d{8}T\d{12}Z)-(?P<kind>[a-z]+)\.json")


@dataclass(frozen=True, kw_only=True)
class ReportEntry:
    """One stored report: its file name, kind (``curator``, ``umbrella``) and path."""

    name: str
    kind: str
    stamp: str
    path: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind, "stamp": self.stamp, "path": self.path}


class ReportShelf:
    """Writes and lists the reports of the shared workspace ``fs``."""

    def __init__(self, fs: AbstractFilesystem) -> None:
        self._fs = fs

    async def write(self, kind: str, data: Mapping[str, Any], moment: datetime) -> str:
        """Store ``data`` as a ``kind`` report stamped ``moment``; returns its path."""
        if not re.fullmatch(r"[a-z]+", kind):
            raise ValueError(f"report kind {kind!r} must be lowercase letters")
        path = f"{REPORTS}/{utc_stamp(moment)}-{kind}.json"
        await self._fs.write_bytes(path, json.dumps(dict(data), indent=1).encode("utf-8"))
        return path

    async def list(self, kind: str | None = None) -> list[ReportEntry]:
        """The stored reports (of ``kind`` only, when given), oldest first."""
        try:
            entries = await self._fs.list(REPORTS)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if entry.is_dir or match is None or (kind is not None and match["kind"] != kind):
                continue
            found.append(
                ReportEntry(name=entry.name, kind=match["kind"], stamp=match["stamp"], path=f"{REPORTS}/{entry.name}")
            )
        return sorted(found, key=lambda e: (e.stamp, e.name))

    async def read(self, entry: ReportEntry) -> dict[str, Any]:
        """The JSON of a listed report."""
        data: dict[str, Any] = json.loads(await self._fs.read_bytes(entry.path))
        return data

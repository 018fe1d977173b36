"""An append-only audit log of every skill mutation and promotion.

One JSON object per line, one file per UTC day: ``skills/.audit/YYYY-MM-DD.jsonl`` on whatever
filesystem the log is given (a local workspace, or a shared store so every replica writes to the
same log). Appends go through :meth:`~filesystems.AbstractFilesystem.append`, which lands each
record whole even with several writers in several processes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from filesystems import AbstractFilesystem
from harness.clock import Clock, from_iso, system_clock, to_iso, utc_day
from harness.context import RuntimeContext
from harness.skills.scanner import ScanVerdict

__all__ = ["AUDIT", "AuditLog", "AuditRecord", "context_fields"]

AUDIT = "skills/.audit"
"""The audit log's folder, relative to the filesystem it is given."""


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One audited event.

    - ``time``: when it happened (UTC); ``actor``: who did it (``agent``, ``operator:<name>``,
      ``gate:<kind>``, ``curator``).
    - ``op``: what was attempted (``propose_skill``, ``skill_manage.patch``, ``promotion.request``,
      ``curator.archive``, ...); ``target``: the skill (``<scope>/<name>``, scope ``workspace`` for
      the shared area).
    - ``decision``: ``applied``, ``refused``, ``approved``, ``rejected``, ``pending``, ...
    - ``scan``: the scanner's verdict as a dict, when content was scanned.
    - ``before_hash`` / ``after_hash``: content hashes of the skill folder (``None`` when absent).
    - ``context``: the caller's ``user_id``, ``session_id``, ``environment`` (empty for operators).
    - ``detail``: a human-readable note (the refusal reason, the archive path, ...).
    """

    time: datetime
    actor: str
    op: str
    target: str
    decision: str
    scan: Mapping[str, Any] | None = None
    before_hash: str | None = None
    after_hash: str | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON object written to the log."""
        return {
            "time": to_iso(self.time),
            "actor": self.actor,
            "op": self.op,
            "target": self.target,
            "decision": self.decision,
            "scan": dict(self.scan) if self.scan is not None else None,
            "before_hash": self.before_hash,
            "after_hash": self.after_hash,
            "context": dict(self.context),
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRecord:
        """Read back what :meth:`as_dict` wrote."""
        return cls(
            time=from_iso(data["time"]),
            actor=data["actor"],
            op=data["op"],
            target=data["target"],
            decision=data["decision"],
            scan=data.get("scan"),
            before_hash=data.get("before_hash"),
            after_hash=data.get("after_hash"),
            context=data.get("context") or {},
            detail=data.get("detail", ""),
        )


def context_fields(context: RuntimeContext | None) -> dict[str, str]:
    """The caller's ``user_id``, ``session_id`` and ``environment`` (empty for operators)."""
    if context is None:
        return {}
    return {
        "user_id": context.user_id,
        "session_id": context.session_id,
        "environment": context.environment,
    }


class AuditLog:
    """The audit log kept on ``fs`` under ``skills/.audit/``; ``clock`` stamps records."""

    def __init__(self, fs: AbstractFilesystem, *, clock: Clock = system_clock) -> None:
        self._fs = fs
        self._clock = clock

    async def record(
        self,
        *,
        actor: str,
        op: str,
        target: str,
        decision: str,
        context: RuntimeContext | None = None,
        scan: ScanVerdict | None = None,
        before_hash: str | None = None,
        after_hash: str | None = None,
        detail: str = "",
    ) -> AuditRecord:
        """Append one record stamped with the current time and return it."""
        entry = AuditRecord(
            time=self._clock(),
            actor=actor,
            op=op,
            target=target,
            decision=decision,
            scan=scan.as_dict() if scan is not None else None,
            before_hash=before_hash,
            after_hash=after_hash,
            context=context_fields(context),
            detail=detail,
        )
        await self.append(entry)
        return entry

    async def append(self, entry: AuditRecord) -> None:
        """Append ``entry`` to the file of its UTC day."""
        line = json.dumps(entry.as_dict(), ensure_ascii=False, sort_keys=True) + "\n"
        await self._fs.append(_day_path(utc_day(entry.time)), line.encode("utf-8"))

    async def query(
        self,
        day: date | str | None = None,
        predicate: Callable[[AuditRecord], bool] | None = None,
    ) -> list[AuditRecord]:
        """The records of one UTC ``day`` (a date or ``YYYY-MM-DD``), or of every day when
        ``day`` is ``None``, oldest first, keeping those for which ``predicate`` is true. A day
        without records is ``[]``; a malformed ``day`` is ``ValueError``."""
        wanted = [_parse_day(day)] if day is not None else [date.fromisoformat(d) for d in await self.days()]
        records: list[AuditRecord] = []
        for one in wanted:
            try:
                data = await self._fs.read_bytes(_day_path(one))
            except FileNotFoundError:
                continue
            records += [
                AuditRecord.from_dict(json.loads(line)) for line in data.decode("utf-8").splitlines() if line.strip()
            ]
        return [record for record in records if predicate is None or predicate(record)]

    async def days(self) -> list[str]:
        """The UTC days (``YYYY-MM-DD``) that have records, oldest first."""
        try:
            entries = await self._fs.list(AUDIT)
        except (FileNotFoundError, NotADirectoryError):
            return []
        names = (e.name.removesuffix(".jsonl") for e in entries if not e.is_dir and e.name.endswith(".jsonl"))
        return sorted(name for name in names if _is_day(name))


def _is_day(name: str) -> bool:
    """Whether a file name (without ``.jsonl``) is a day of the log; other files are not records."""
    try:
        date.fromisoformat(name)
    except ValueError:
        return False
    return True


def _day_path(day: date) -> str:
    return f"{AUDIT}/{day.isoformat()}.jsonl"


def _parse_day(day: date | str) -> date:
    if isinstance(day, datetime):
        return utc_day(day)
    if isinstance(day, date):
        return day
    try:
        return date.fromisoformat(day)
    except ValueError as exc:
        raise ValueError(f"audit day {day!r} must be YYYY-MM-DD") from exc

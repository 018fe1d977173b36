"""Diagnostics: problems found while loading, merging or staging skills, as values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Self

from filesystems import redact_secrets

__all__ = ["Diagnostic", "Severity"]

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Diagnostic:
    """One finding: how bad it is, a stable machine code, a message and where it was found.

    ``code`` is stable across releases (e.g. ``invalid-yaml``, ``shadowed``); ``message`` is for
    people; ``location`` is a host path, URL or skill id.
    """

    severity: Severity
    code: str
    message: str
    location: str = ""

    def __post_init__(self) -> None:
        # Messages and locations often quote a market URL or an error that does; mask
        # credentials here so no diagnostic (CLI, logs, events) can carry one.
        object.__setattr__(self, "message", redact_secrets(self.message))
        object.__setattr__(self, "location", redact_secrets(self.location))

    @classmethod
    def error(cls, code: str, message: str, location: str = "") -> Self:
        """An ``error``: the thing it names was skipped or cannot be used."""
        return cls(severity="error", code=code, message=message, location=location)

    @classmethod
    def warning(cls, code: str, message: str, location: str = "") -> Self:
        """A ``warning``: used anyway, but someone should look."""
        return cls(severity="warning", code=code, message=message, location=location)

    @classmethod
    def info(cls, code: str, message: str, location: str = "") -> Self:
        """An ``info``: worth knowing, nothing is wrong."""
        return cls(severity="info", code=code, message=message, location=location)

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{self.severity}: {where}{self.message} [{self.code}]"

    def as_dict(self) -> dict[str, str]:
        """The JSON shape used by the CLI."""
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "location": self.location,
        }

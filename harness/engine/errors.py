"""The workflow engine's error tree.

``EngineError`` is the root (a :class:`harness.errors.HarnessError`). Missing runs are also
``LookupError``; an invalid definition is also ``ConfigError``; unsafe run-relative paths are
reported with :class:`filesystems.PathEscapeError` (a ``PermissionError``).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.diagnostics import Diagnostic
from harness.errors import ConfigError, HarnessError

__all__ = [
    "ChecksFailed",
    "EngineError",
    "OutcomeConflict",
    "OutcomeRefused",
    "RequirementUnmet",
    "RunConflict",
    "RunExists",
    "RunNotFound",
    "RunRecordCorrupt",
    "RunStateError",
    "RunTampered",
    "SnapshotIntegrityError",
    "UpgradeRefused",
    "WorkflowDefinitionError",
]


class EngineError(HarnessError):
    """Base class of the workflow engine's errors."""


class WorkflowDefinitionError(EngineError, ConfigError):
    """A workflow definition has errors; ``problems`` lists every one (warnings included).

    Each problem reads ``<file>: <field path> <problem>``.
    """

    def __init__(self, name: str, problems: Sequence[Diagnostic]) -> None:
        self.problems = tuple(problems)
        errors = [p for p in self.problems if p.severity == "error"]
        lines = "\n".join(f"  {p.location}: {p.message}" for p in errors)
        super().__init__(f"workflow {name!r} is invalid ({len(errors)} error(s)):\n{lines}")


class RunNotFound(EngineError, LookupError):
    """No run with that id exists in this scope."""


class RunExists(EngineError, FileExistsError):
    """A run with that id already exists; resume it or pick another id."""


class RunStateError(EngineError):
    """The run's status does not allow the operation (e.g. an outcome for a blocked run)."""


class RunConflict(EngineError):
    """Another process advanced the run first (the compare-and-set on its revision was lost).

    Nothing was written; re-read the run with ``inspect`` and retry if still relevant.
    """


class OutcomeConflict(EngineError):
    """An outcome contradicts one already recorded (same id, different content, or an action
    that already has its outcome)."""


class ChecksFailed(EngineError):
    """Completion checks did not pass, so the run cannot complete; ``failed`` names them."""

    def __init__(self, message: str, failed: Sequence[str]) -> None:
        super().__init__(message)
        self.failed = tuple(failed)


class SnapshotIntegrityError(EngineError):
    """A stored skill snapshot no longer matches its content hash (tampered or damaged)."""


class UpgradeRefused(EngineError):
    """``upgrade`` was refused; the message says which guard failed."""


class RunTampered(EngineError):
    """A run record failed its authentication: it was edited, copied or written outside the
    engine. The engine refuses to act on it."""


class RunRecordCorrupt(EngineError):
    """A run's record or trajectory cannot be read: damaged, truncated, or written by an
    incompatible engine version. The message names the file; nothing was performed."""


class OutcomeRefused(EngineError, PermissionError):
    """An outcome breaks the step's contract and was not recorded: it writes a state key or
    artifact the step does not declare in ``writes``, changes a ``final`` artifact already
    written, or moves the domain state along a transition ``states`` does not list. The message
    names what and how to fix it; report a corrected outcome."""


class RequirementUnmet(EngineError):
    """A step's ``requires`` preconditions do not hold, so it cannot be entered (at the start of a
    run: pass the missing inputs)."""

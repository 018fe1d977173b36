"""The harness's error tree.

``HarnessError`` is the root; every error the harness raises on purpose derives from it (or
from a builtin whose meaning matches, such as ``FileNotFoundError`` or ``PermissionError``).
Each subpackage defines its own branch and exports it; the errors users catch are also
exported from :mod:`harness`::

    HarnessError
    ├── ConfigError (ValueError)            a configuration value or file is invalid
    │   ├── engine.WorkflowDefinitionError  (also EngineError)
    │   └── models.UnknownModel             (also ModelError)
    ├── SkillError                          a skill could not be parsed or used
    │   ├── SkillNotFound (LookupError)
    │   ├── skills.FrontmatterError (ValueError)
    │   └── skills.ArgumentsTooLarge (ValueError)  a command's arguments expand past the limit
    ├── pipeline.QueryTooLarge (ValueError) a skill search query over its limits
    ├── pipeline.EnvironmentNotReady        a command's skill environment is being built or failed
    ├── agent.StepLimitExceeded             a turn used up its model steps
    ├── agent.NoActiveRun                   steer/follow_up named a (user, session) with no run
    ├── agent.QueueFull                     steer/follow_up found the run's queue at its bound
    ├── agent.TooManyPausedRuns             a run would pause past its user's bound
    ├── agent.ApprovalError                 ApprovalNotFound (LookupError), ApprovalStillPending
    ├── tools.ToolError                     a tool failed; the model sees the message
    │   ├── tools.ToolArgumentError (ValueError)
    │   └── agent.ToolDenied, agent.AwaitingApproval   the approval policy stopped a call
    ├── models.ModelError                   ModelUnavailable, ScriptExhausted, UnknownModel
    ├── engine.EngineError                  RunNotFound, RunExists, RunStateError, RunConflict,
    │                                       OutcomeConflict, ChecksFailed, UpgradeRefused,
    │                                       SnapshotIntegrityError, RunTampered
    └── learning.LearningError              AuthoringRefused (DangerousContent, LinkRefused),
                                            SkillAreaNotFound, UsageConflict, PromotionError
                                            (ReviewNotFound, ReviewAlreadyDecided)

Paths outside what a tool may touch raise :class:`filesystems.PathEscapeError` (a
``PermissionError``); ``tools.MachineOwnedPath`` is one of those.
"""

from __future__ import annotations

__all__ = ["ConfigError", "HarnessError", "SkillError", "SkillNotFound"]


class HarnessError(Exception):
    """Base class of the harness's own errors."""


class ConfigError(HarnessError, ValueError):
    """A configuration value or file is invalid; the message names the field and the problem."""


class SkillError(HarnessError):
    """A skill could not be parsed or used."""


class SkillNotFound(SkillError, LookupError):
    """No skill of that name or id is available to the caller."""

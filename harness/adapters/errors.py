"""The adapters' errors::

HarnessError
└── AdapterError                  a framework adapter cannot serve this run
    └── UserContextError (ValueError)   the run's context names no valid user
"""

from __future__ import annotations

from harness.errors import HarnessError

__all__ = ["AdapterError", "UserContextError"]


class AdapterError(HarnessError):
    """A framework adapter cannot serve this run."""


class UserContextError(AdapterError, ValueError):
    """The framework's run context names no valid user, so no skill is served (the run fails
    closed rather than falling back to anyone's skills)."""

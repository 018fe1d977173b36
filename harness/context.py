"""The per-call runtime context: who is asking, in which conversation and environment."""

from __future__ import annotations

from dataclasses import dataclass

from filesystems import validate_user_id

__all__ = ["ACTION_ID_ENV", "RuntimeContext"]

#: The environment variable that carries a workflow action's id into the commands and scripts
#: run while that action is performed (tools get it as ``ToolContext.action_id``).
ACTION_ID_ENV = "HARNESS_ACTION_ID"


@dataclass(frozen=True, kw_only=True, slots=True)
class RuntimeContext:
    """Passed explicitly with every call; there is no global "current user".

    ``user_id`` must be a safe path segment that does not collide with the workspace's own
    entries (``skills``, ``subagents``, ``knowledge``, ``AGENTS.md``, anything starting with ``.``
    or ``_``); ``environment`` (e.g. ``"prod"``) feeds the visibility filters.
    """

    user_id: str
    session_id: str = "default"
    environment: str = "default"

    def __post_init__(self) -> None:
        validate_user_id(self.user_id)
        if not self.session_id:
            raise ValueError("session_id must not be empty")

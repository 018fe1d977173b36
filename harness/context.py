"""The per-call runtime context: who is asking, in which conversation and environment."""

from __future__ import annotations

from dataclasses import dataclass

from filesystems import identifier_problem, validate_user_id

__all__ = ["ACTION_ID_ENV", "MAX_SESSION_ID_BYTES", "RuntimeContext", "validate_exact_id", "validate_session_id"]

#: The longest session id, in UTF-8 bytes (what the session stores' keys hold).
MAX_SESSION_ID_BYTES = 255

#: The environment variable that carries a workflow action's id into the commands and scripts
#: run while that action is performed (tools get it as ``ToolContext.action_id``).
ACTION_ID_ENV = "HARNESS_ACTION_ID"


@dataclass(frozen=True, kw_only=True, slots=True)
class RuntimeContext:
    """Passed explicitly with every call; there is no global "current user".

    ``user_id`` must be a safe path segment that does not collide with the workspace's own
    entries (``skills``, ``subagents``, ``knowledge``, ``AGENTS.md``, anything starting with ``.``
    or ``_``); ``session_id`` an exact identifier (see :func:`validate_session_id`);
    ``environment`` (e.g. ``"prod"``) feeds the visibility filters.
    """

    user_id: str
    session_id: str = "default"
    environment: str = "default"

    def __post_init__(self) -> None:
        validate_user_id(self.user_id)
        validate_session_id(self.session_id)


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is an exact identifier (see :func:`validate_exact_id`), so it
    can neither forge a line where it is shown or logged nor name another conversation. Raises
    ``ValueError`` naming the problem."""
    return validate_exact_id(session_id, "session id")


def validate_exact_id(value: str, what: str) -> str:
    """Return ``value`` if it is an exact identifier: a non-empty string of at most
    :data:`MAX_SESSION_ID_BYTES` bytes, without control, format or line-separator characters,
    surrounding whitespace or a spelling a store would fold into another (see
    :func:`filesystems.identifier_problem`). Raises ``ValueError`` naming ``what`` and the
    problem. Session ids and idempotency keys are held to it."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    problem = identifier_problem(value)
    if problem:
        raise ValueError(f"{what} {value!r} {problem}")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_SESSION_ID_BYTES:
        raise ValueError(f"{what} {value[:32]!r}... is longer than {MAX_SESSION_ID_BYTES} bytes")
    return value

"""Typed events a turn emits, for UIs, logs and metrics (``agent.stream(...)``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.models import Usage

__all__ = [
    "ApprovalDecided",
    "ApprovalRequested",
    "Event",
    "MessageInjected",
    "ModelReplied",
    "ShellRan",
    "SkillLoaded",
    "SkillWarning",
    "ToolCalled",
    "ToolReturned",
    "TurnPrepared",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnPrepared:
    """The pipeline ran: how many skills the turn sees and what staging did."""

    skill_count: int
    visible_count: int
    staged_written: int | None
    staged_unchanged: int | None
    staged_removed: int | None
    diagnostics: int


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillLoaded:
    """``load_skill_through_path`` served a file of a skill."""

    skill_id: str
    path: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCalled:
    """The model asked for a tool."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolReturned:
    """A tool finished; ``error`` says its result is an error message returned to the model."""

    call_id: str
    name: str
    content: str
    error: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellRan:
    """``execute_shell_command`` ran a command."""

    command: str
    exit_code: int
    duration: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelReplied:
    """The model produced a message; ``final`` when it asked for no tool."""

    content: str
    usage: Usage
    final: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillWarning:
    """An explicitly invoked skill asked for something the turn cannot give (e.g. an unknown
    ``model:``); the turn goes on without it."""

    skill_id: str
    code: str
    message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequested:
    """The approval policy asks about a gated call (a shell command, a write, an app tool
    marked ``requires_approval``); an approver or the app decides."""

    approval_id: str
    tool: str
    kind: str
    subject: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecided:
    """A gated call was allowed or denied, and ``by`` whom (``policy:<name>``,
    ``approver:<name>``, ``operator:<name>``); a denied call did not run."""

    approval_id: str
    tool: str
    kind: str
    subject: str
    allowed: bool
    by: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageInjected:
    """A message joined the run: ``steer`` (at a step boundary), ``follow_up`` (after the run's
    last reply) or ``context`` (what ``before_run`` added)."""

    kind: str
    text: str


Event = (
    TurnPrepared
    | SkillLoaded
    | SkillWarning
    | ToolCalled
    | ToolReturned
    | ShellRan
    | ModelReplied
    | ApprovalRequested
    | ApprovalDecided
    | MessageInjected
)

"""Typed events a turn emits, for UIs, logs and metrics (``agent.stream(...)``).

``agent.run()`` keeps the turn's events in ``RunResult.events``. ``agent.stream()`` yields them
as they happen, framed by :class:`RunStarted` and :class:`RunFinished`, with the model's reply
arriving as :class:`~harness.models.TextDelta` and :class:`~harness.models.ToolCallDelta` pieces
before each :class:`ModelReplied`.

A forked skill (``context: fork``) runs as a subagent inside the turn: its events (deltas
included, when the run is streamed) arrive between :class:`SubagentStarted` and
:class:`SubagentFinished` with the same ``run_id``. Everything between the two is the
subagent's, not the parent agent's; a UI that shows them apart keeps the open ``run_id``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.models import TextDelta, ToolCallDelta, Usage

if TYPE_CHECKING:
    from harness.pipeline.plan import TurnPlan

__all__ = [
    "UNKNOWN_TOOL",
    "ApprovalDecided",
    "ApprovalRequested",
    "EnvironmentWaited",
    "Event",
    "MessageInjected",
    "ModelReplied",
    "RunFinished",
    "RunReplayed",
    "RunStarted",
    "RunTally",
    "ShellRan",
    "SkillLoaded",
    "SkillWarning",
    "SubagentFinished",
    "SubagentStarted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCalled",
    "ToolReturned",
    "TurnPrepared",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStarted:
    """A streamed run began: ``run_id`` is fresh per run, ``session_id`` is the conversation."""

    run_id: str
    agent: str
    user_id: str
    session_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFinished:
    """A streamed run ended with ``reply``; ``usage`` adds up every model call of the run."""

    run_id: str
    reply: str
    usage: Usage
    steps: int


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnPrepared:
    """The pipeline ran: how many skills the turn sees and what staging did.

    ``layers`` counts the turn's skills by the layer they come from (``{"market": 12, ...}``).
    """

    skill_count: int
    visible_count: int
    staged_written: int | None
    staged_unchanged: int | None
    staged_removed: int | None
    diagnostics: int
    layers: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: TurnPlan) -> TurnPrepared:
        """The event for a prepared ``plan``."""
        skills = plan.skills.values()
        staged = plan.staged
        return cls(
            skill_count=len(skills),
            visible_count=sum(1 for s in skills if not s.skill.hidden),
            staged_written=staged.written if staged else None,
            staged_unchanged=staged.unchanged if staged else None,
            staged_removed=staged.removed if staged else None,
            diagnostics=len(plan.diagnostics),
            layers=dict(Counter(s.skill.layer.value for s in skills)),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SkillLoaded:
    """``load_skill_through_path`` served a file of a skill: its ``name`` and ``location``
    (the folder or URL it was read from) when the turn knows the skill."""

    skill_id: str
    path: str
    name: str = ""
    location: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCalled:
    """The model asked for a tool."""

    call_id: str
    name: str
    arguments: dict[str, Any]


#: ``ToolReturned.error_type`` of a call of a tool the turn does not offer (a name the model made up).
UNKNOWN_TOOL = "unknown_tool"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolReturned:
    """A tool finished; ``error`` says its result is an error message returned to the model,
    ``error_type`` what failed (the exception's class name, or :data:`UNKNOWN_TOOL`).
    ``duration`` is how long the call ran (seconds; ``None`` for a call that did not run, such
    as one the app denied): calls of one step run side by side, so the events' own times do
    not tell."""

    call_id: str
    name: str
    content: str
    error: bool
    error_type: str | None = None
    duration: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellRan:
    """``execute_shell_command`` ran a command."""

    command: str
    exit_code: int
    duration: float


@dataclass(frozen=True, kw_only=True, slots=True)
class EnvironmentWaited:
    """A shell command of the skill ``skill_id`` waited ``seconds`` for the skill's Python
    environment to be built before it could run. ``state`` is the environment's state when the
    wait ended: ``ready`` (the command then ran with it), ``failed`` or ``building`` (the build
    outlasted the wait): the command was then not run, and its result says why. Reported with
    the call's other events, before its ``ShellRan``; the wait itself shows as it happens
    through the agent's ``progress`` callback (``task="waiting for environment"``)."""

    skill_id: str
    seconds: float
    state: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelReplied:
    """The model produced a message; ``final`` when it asked for no tool. ``model`` is the name
    of the model that replied (``provider:model``), empty when the reply came without a model
    call (an ``on_input`` hook's answer, an unknown ``/skill:`` command)."""

    content: str
    usage: Usage
    final: bool
    model: str = ""


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
    marked ``requires_approval``); an approver or the app decides. ``activations`` names the
    skills the call would act on whose activation the user has not approved (an MCP market's:
    id, origin and content digest, one line each); approving the call approves them."""

    approval_id: str
    tool: str
    kind: str
    subject: str
    activations: tuple[str, ...] = ()


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


@dataclass(frozen=True, kw_only=True, slots=True)
class RunReplayed:
    """The run's message was answered before under this idempotency ``key`` (a client's retry):
    the events that follow are that answer as it was stored — the reply as a final
    :class:`ModelReplied` that no model made, or the :class:`ApprovalRequested` calls the run
    stopped at — and nothing ran."""

    key: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SubagentStarted:
    """A forked skill handed the turn to the subagent ``agent``: the events that follow, up to
    the :class:`SubagentFinished` with this ``run_id``, are the subagent's (its own
    ``session_id``). ``skill`` is the forked skill's name."""

    run_id: str
    agent: str
    skill: str
    session_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class SubagentFinished:
    """The subagent of the :class:`SubagentStarted` with this ``run_id`` answered ``reply``
    (which is also the turn's answer). A subagent that fails ends the run with the error and
    sends no ``SubagentFinished``."""

    run_id: str
    agent: str
    reply: str


Event = (
    RunStarted
    | TurnPrepared
    | SkillLoaded
    | SkillWarning
    | TextDelta
    | ToolCallDelta
    | ToolCalled
    | ToolReturned
    | ShellRan
    | EnvironmentWaited
    | ModelReplied
    | RunFinished
    | ApprovalRequested
    | ApprovalDecided
    | MessageInjected
    | SubagentStarted
    | SubagentFinished
    | RunReplayed
)


@dataclass(kw_only=True)
class RunTally:
    """A run's totals from its events: the last final reply, the summed usage, the model steps."""

    reply: str = ""
    usage: Usage = field(default_factory=Usage)
    steps: int = 0

    @classmethod
    def of(cls, events: Iterable[Event]) -> RunTally:
        """The totals of ``events``."""
        tally = cls()
        for event in events:
            tally.add(event)
        return tally

    def add(self, event: Event) -> None:
        """Count ``event`` in (only :class:`ModelReplied` changes the totals)."""
        if isinstance(event, ModelReplied):
            self.usage += event.usage
            self.steps += 1
            if event.final:
                self.reply = event.content

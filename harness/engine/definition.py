"""The values a workflow definition is made of, in the native (snake_case) vocabulary.

Both the native files (``workflow.yaml``, ``guardrails.yaml``, ``checks.yaml``) and the Comet
layout (``comet/skill.yaml`` ...) load into these; see :mod:`harness.engine.loader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

__all__ = [
    "ACTION_TYPES",
    "Action",
    "ActionType",
    "AgentDecl",
    "ArtifactDecl",
    "Check",
    "CheckScope",
    "Goal",
    "Guardrails",
    "NamedValue",
    "Next",
    "SkillDecl",
    "StateMachine",
    "Step",
    "ToolDecl",
    "Workflow",
]

ActionType: TypeAlias = Literal["invoke_skill", "call_tool", "handoff", "ask_user", "checkpoint", "complete"]
#: Action types a step may use; ``complete`` exists only as an adaptive proposal.
ACTION_TYPES: tuple[str, ...] = ("invoke_skill", "call_tool", "handoff", "ask_user", "checkpoint")
CheckScope: TypeAlias = Literal["step", "completion", "progress"]
#: A step's ``next``: a step id, ``None`` (the workflow ends) or ``{outcome status: step id | None}``.
Next: TypeAlias = str | None | Mapping[str, str | None]


@dataclass(frozen=True, kw_only=True)
class NamedValue:
    """A named goal input or output."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, kw_only=True)
class Goal:
    """What the workflow is for: a statement, named inputs/outputs and success criteria."""

    statement: str
    inputs: tuple[NamedValue, ...] = ()
    outputs: tuple[NamedValue, ...] = ()
    success: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SkillDecl:
    """A skill the workflow may invoke (``invoke_skill`` refers to its ``id``)."""

    id: str
    source: str | None = None
    version: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolDecl:
    """A tool the workflow may call (``call_tool`` refers to its ``id``).

    ``kind`` is ``function`` (a harness tool named ``source``, default the id), ``script`` (a
    file inside the skill package, ``source`` relative to it) or ``mcp``; ``side_effect`` is
    ``none``, ``read``, ``write`` or ``external``.
    """

    id: str
    kind: Literal["function", "script", "mcp"]
    side_effect: Literal["none", "read", "write", "external"]
    source: str | None = None
    requires_confirmation: bool = False
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class AgentDecl:
    """An agent the workflow may hand off to (``handoff`` refers to its ``id``)."""

    id: str
    role: str
    instructions: str = ""


@dataclass(frozen=True, kw_only=True)
class Action:
    """What a step asks for.

    ``invoke_skill`` uses ``ref`` (a declared skill) and optional ``instructions``;
    ``call_tool`` uses ``ref`` (a declared tool) and ``args``; ``handoff`` uses ``to`` (a
    declared agent) and optional ``instructions``; ``ask_user`` needs ``question`` (and may list
    ``options``); ``checkpoint`` marks a point of progress; ``complete`` (adaptive proposals
    only) finishes the run.
    """

    type: ActionType
    ref: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    instructions: str = ""
    to: str | None = None
    question: str | None = None
    options: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.type in ("invoke_skill", "call_tool") and not self.ref:
            raise ValueError(f"a {self.type} action needs a ref")
        if self.type == "handoff" and not self.to:
            raise ValueError("a handoff action needs 'to'")
        if self.type == "ask_user" and not self.question:
            raise ValueError("an ask_user action needs a question")

    @property
    def target(self) -> str | None:
        """The declared entity the action uses: the skill, tool or agent id."""
        return self.to if self.type == "handoff" else self.ref


@dataclass(frozen=True, kw_only=True)
class Step:
    """One node of a deterministic workflow; see :data:`Next` for ``next``.

    ``completion_checks`` name checks that must pass for a succeeded outcome to count as
    succeeded; ``allowed_tools`` (``None`` = the guardrails') narrows the tools usable while
    the step runs.

    Hand-off contract (all optional): ``reads`` names the state keys and artifacts the step is
    given; ``writes`` the only ones its outcome may set (``None`` = anything); ``requires``
    lists preconditions to enter the step — check ids, or state keys / artifact names that must
    be set; ``accepts`` the schema versions of the hand-off it takes (``None`` = any);
    ``produces`` the schema version of the hand-off it gives; ``moves_to`` the domain state the
    run enters after the step, by outcome status (see :class:`StateMachine`).
    """

    id: str
    action: Action
    next: Next = None
    on_failure: str | None = None
    completion_checks: tuple[str, ...] = ()
    allowed_tools: tuple[str, ...] | None = None
    description: str = ""
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] | None = None
    requires: tuple[str, ...] = ()
    accepts: tuple[str, ...] | None = None
    produces: str | None = None
    moves_to: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Guardrails:
    """Limits a run never leaves; the ``allowed_*`` lists default to everything declared."""

    allowed_skills: tuple[str, ...]
    allowed_tools: tuple[str, ...]
    allowed_agents: tuple[str, ...]
    max_iterations: int = 50
    max_retries_per_action: int = 3
    confirmation_required_for: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if self.max_retries_per_action < 0:
            raise ValueError("max_retries_per_action must not be negative")


@dataclass(frozen=True, kw_only=True)
class Check:
    """A runtime check: ``artifact_exists`` (``artifact``) or ``state_equals`` (``field``, ``equals``).

    ``field`` is a dotted path into the run's view (``vars.reviewed``, ``status``).
    """

    id: str
    type: Literal["artifact_exists", "state_equals"]
    scope: CheckScope
    artifact: str | None = None
    field: str | None = None
    equals: Any = None
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class ArtifactDecl:
    """A named artifact of the workflow; a ``final`` one cannot change once written."""

    name: str
    final: bool = False
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class StateMachine:
    """The domain's states beside the step graph: ``initial`` and, per state, the states it may
    move to. Every step outcome that moves the run (``Step.moves_to`` or a reported
    ``Outcome.to_state``) must follow a listed transition."""

    initial: str
    transitions: Mapping[str, tuple[str, ...]]

    @property
    def states(self) -> tuple[str, ...]:
        """Every declared state."""
        return tuple(self.transitions)

    def allows(self, current: str | None, target: str) -> bool:
        """Whether the run may move from ``current`` to ``target`` (staying put is always allowed)."""
        return target == current or target in self.transitions.get(current or "", ())


@dataclass(frozen=True, kw_only=True)
class Workflow:
    """A loaded, valid workflow definition.

    ``format`` says which layout it came from (``native`` or ``comet``); ``mode`` is
    ``deterministic`` (``entry`` + ``steps``) or ``adaptive`` (no steps: actions are proposed
    from outside and a ``complete`` action finishes the run). ``artifacts`` and ``states``
    declare a skill group's artifacts and domain state machine; ``side_files`` the Comet side
    files (``context.md``, ``checkpoint.json``) the engine keeps next to the run's record.
    """

    name: str
    format: Literal["native", "comet"]
    goal: Goal
    mode: Literal["deterministic", "adaptive"]
    guardrails: Guardrails
    version: str = ""
    description: str = ""
    entry: str | None = None
    steps: tuple[Step, ...] = ()
    skills: tuple[SkillDecl, ...] = ()
    tools: tuple[ToolDecl, ...] = ()
    agents: tuple[AgentDecl, ...] = ()
    checks: tuple[Check, ...] = ()
    artifacts: tuple[ArtifactDecl, ...] = ()
    states: StateMachine | None = None
    side_files: tuple[str, ...] = ()

    @property
    def final_artifacts(self) -> frozenset[str]:
        """The names of the artifacts declared ``final``."""
        return frozenset(a.name for a in self.artifacts if a.final)

    def step(self, step_id: str) -> Step:
        """The step with ``step_id``; ``KeyError`` if there is none."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def has_step(self, step_id: str) -> bool:
        """Whether a step with ``step_id`` exists."""
        return any(step.id == step_id for step in self.steps)

    def tool(self, tool_id: str) -> ToolDecl:
        """The declared tool ``tool_id``; ``KeyError`` if undeclared."""
        return _by_id(self.tools, tool_id)

    def skill(self, skill_id: str) -> SkillDecl:
        """The declared skill ``skill_id``; ``KeyError`` if undeclared."""
        return _by_id(self.skills, skill_id)

    def agent(self, agent_id: str) -> AgentDecl:
        """The declared agent ``agent_id``; ``KeyError`` if undeclared."""
        return _by_id(self.agents, agent_id)

    def check(self, check_id: str) -> Check:
        """The check ``check_id``; ``KeyError`` if undefined."""
        return _by_id(self.checks, check_id)


_Item = TypeVar("_Item", SkillDecl, ToolDecl, AgentDecl, Check)


def _by_id(items: tuple[_Item, ...], item_id: str) -> _Item:
    for item in items:
        if item.id == item_id:
            return item
    raise KeyError(item_id)

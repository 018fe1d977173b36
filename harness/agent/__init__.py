"""The agent: the model ↔ tools loop, sessions, events, tool approval, input hooks, message
queues, the catalog's order from usage counts and the workflow executor.

The workflow executor's names (``AgentExecutor``, ``package_for``, ``step_tools``) load the
workflow engine, and the approval names the approval module (which an agent without an
approval gate never loads), so they are imported on first use. ``workflow_tools`` and ``run_summary`` load
it only when called; they are imported here, since ``workflow_tools`` is also the name of the
module that defines it (importing that module later would otherwise rebind the package's name
to the module).
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness.agent.harness import Harness, RunResult, StepLimitExceeded
from harness.agent.hooks import Answer, BeforeRun, OnInput, RunStart
from harness.agent.options import ControlOptions, LearningOptions, PipelineOptions, TrustOptions
from harness.agent.queues import NoActiveRun, QueueFull, QueueLimits, TooManyPausedRuns
from harness.agent.relevance import UsageRelevance
from harness.agent.sessions import (
    IdempotencyKeyReused,
    InMemorySessionStore,
    Session,
    SessionError,
    SessionStore,
    SessionStoreUnavailable,
)
from harness.agent.workflow_tools import run_summary, workflow_tools
from harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    EnvironmentWaited,
    Event,
    MessageInjected,
    ModelReplied,
    RunFinished,
    RunReplayed,
    RunStarted,
    ShellRan,
    SkillLoaded,
    SkillWarning,
    SubagentFinished,
    SubagentStarted,
    TextDelta,
    ToolCallDelta,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)

if TYPE_CHECKING:
    from harness.agent.paused import PausedRunTampered
    from harness.agent.workflows import AgentExecutor, package_for, step_tools
    from harness.approval import (
        AllowAll,
        AllowByPattern,
        ApprovalError,
        ApprovalGate,
        ApprovalNotFound,
        ApprovalPolicy,
        ApprovalRule,
        ApprovalStillPending,
        Approver,
        AwaitingApproval,
        Decision,
        DenyByPattern,
        PatternPolicy,
        StdinApprover,
        ToolDenied,
        ToolRequest,
    )

__all__ = [
    "AgentExecutor",
    "AllowAll",
    "AllowByPattern",
    "Answer",
    "ApprovalDecided",
    "ApprovalError",
    "ApprovalGate",
    "ApprovalNotFound",
    "ApprovalPolicy",
    "ApprovalRequested",
    "ApprovalRule",
    "ApprovalStillPending",
    "Approver",
    "AwaitingApproval",
    "BeforeRun",
    "ControlOptions",
    "Decision",
    "DenyByPattern",
    "EnvironmentWaited",
    "Event",
    "Harness",
    "IdempotencyKeyReused",
    "InMemorySessionStore",
    "LearningOptions",
    "MessageInjected",
    "ModelReplied",
    "NoActiveRun",
    "OnInput",
    "PatternPolicy",
    "PausedRunTampered",
    "PipelineOptions",
    "QueueFull",
    "QueueLimits",
    "RunFinished",
    "RunReplayed",
    "RunResult",
    "RunStart",
    "RunStarted",
    "Session",
    "SessionError",
    "SessionStore",
    "SessionStoreUnavailable",
    "ShellRan",
    "SkillLoaded",
    "SkillWarning",
    "StdinApprover",
    "StepLimitExceeded",
    "SubagentFinished",
    "SubagentStarted",
    "TextDelta",
    "TooManyPausedRuns",
    "ToolCallDelta",
    "ToolCalled",
    "ToolDenied",
    "ToolRequest",
    "ToolReturned",
    "TrustOptions",
    "TurnPrepared",
    "UsageRelevance",
    "package_for",
    "run_summary",
    "step_tools",
    "workflow_tools",
]

__getattr__, __dir__ = lazy_exports(__name__)

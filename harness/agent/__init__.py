"""The agent: the model ↔ tools loop, sessions, events and the workflow executor."""

from harness.agent.events import (
    Event,
    ModelReplied,
    RunFinished,
    RunStarted,
    ShellRan,
    SkillLoaded,
    SkillWarning,
    TextDelta,
    ToolCallDelta,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.agent.harness import Harness, RunResult, StepLimitExceeded
from harness.agent.sessions import InMemorySessionStore, Session, SessionStore
from harness.agent.workflow_tools import run_summary, workflow_tools
from harness.agent.workflows import AgentExecutor, package_for, step_tools

__all__ = [
    "AgentExecutor",
    "Event",
    "Harness",
    "InMemorySessionStore",
    "ModelReplied",
    "RunFinished",
    "RunResult",
    "RunStarted",
    "Session",
    "SessionStore",
    "ShellRan",
    "SkillLoaded",
    "SkillWarning",
    "StepLimitExceeded",
    "TextDelta",
    "ToolCallDelta",
    "ToolCalled",
    "ToolReturned",
    "TurnPrepared",
    "package_for",
    "run_summary",
    "step_tools",
    "workflow_tools",
]

"""agent-skill-harness: an asyncio agent harness with pluggable skill markets.

The names here are what applications use: the agent, its context and events, session stores,
models, tools, the skill loader and validator, and the errors worth catching. Building blocks
(catalog rendering, staging, merging) stay in their subpackages. ``import harness`` loads only
the errors, ``RuntimeContext`` and ``Diagnostic``; every other name loads its module when first
used (``from harness import Harness`` the agent, ``from harness import SkillPipeline`` only the
pipeline), and nothing loads the optional parts (the workflow engine, self-learning, MCP,
tracing, the adapters) until they are used.
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness._version import __version__
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic
from harness.errors import ConfigError, HarnessError, SkillError, SkillNotFound

if TYPE_CHECKING:  # every other name is imported on first use (see filesystems.lazy_exports), so a
    # program pays for what it names: a pipeline alone never loads the agent, and none of them the
    # optional parts, the offline models or strict validation
    from harness.agent import (
        ControlOptions,
        Harness,
        LearningOptions,
        PipelineOptions,
        RunResult,
        StepLimitExceeded,
        TrustOptions,
    )
    from harness.agent.hooks import Answer, RunStart
    from harness.agent.queues import NoActiveRun
    from harness.agent.sessions import InMemorySessionStore, Session, SessionStore
    from harness.approval import (
        AllowAll,
        AllowByPattern,
        ApprovalError,
        ApprovalPolicy,
        ApprovalRule,
        Decision,
        DenyByPattern,
        PatternPolicy,
        StdinApprover,
        ToolRequest,
    )
    from harness.engine.errors import EngineError
    from harness.events import (
        ApprovalDecided,
        ApprovalRequested,
        EnvironmentWaited,
        Event,
        MessageInjected,
        ModelReplied,
        RunFinished,
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
    from harness.learning.errors import LearningError
    from harness.models import (
        Message,
        Model,
        ModelError,
        ModelUnavailable,
        ToolCall,
        Usage,
        open_model,
    )
    from harness.models.demo import DemoModel
    from harness.models.scripted import ScriptedModel
    from harness.pipeline import EnvironmentOptions, SkillPipeline
    from harness.pipeline.plan import TurnPlan, VisibilityPolicy
    from harness.skills.frontmatter import FrontmatterError
    from harness.skills.skill import Layer, Skill, load_skill
    from harness.skills.validation import ValidationReport, validate_skill_dir
    from harness.tools.context import ToolContext
    from harness.tools.function import Tool, ToolArgumentError, ToolError, tool, tool_from_function
    from harness.tools.skills import UsageHooks


__all__ = [
    "AllowAll",
    "AllowByPattern",
    "Answer",
    "ApprovalDecided",
    "ApprovalError",
    "ApprovalPolicy",
    "ApprovalRequested",
    "ApprovalRule",
    "ConfigError",
    "ControlOptions",
    "Decision",
    "DemoModel",
    "DenyByPattern",
    "Diagnostic",
    "EngineError",
    "EnvironmentOptions",
    "EnvironmentWaited",
    "Event",
    "FrontmatterError",
    "Harness",
    "HarnessError",
    "InMemorySessionStore",
    "Layer",
    "LearningError",
    "LearningOptions",
    "Message",
    "MessageInjected",
    "Model",
    "ModelError",
    "ModelReplied",
    "ModelUnavailable",
    "NoActiveRun",
    "PatternPolicy",
    "PipelineOptions",
    "RunFinished",
    "RunResult",
    "RunStart",
    "RunStarted",
    "RuntimeContext",
    "ScriptedModel",
    "Session",
    "SessionStore",
    "ShellRan",
    "Skill",
    "SkillError",
    "SkillLoaded",
    "SkillNotFound",
    "SkillPipeline",
    "SkillWarning",
    "StdinApprover",
    "StepLimitExceeded",
    "SubagentFinished",
    "SubagentStarted",
    "TextDelta",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallDelta",
    "ToolCalled",
    "ToolContext",
    "ToolError",
    "ToolRequest",
    "ToolReturned",
    "TrustOptions",
    "TurnPlan",
    "TurnPrepared",
    "Usage",
    "UsageHooks",
    "ValidationReport",
    "VisibilityPolicy",
    "__version__",
    "load_skill",
    "open_model",
    "tool",
    "tool_from_function",
    "validate_skill_dir",
]

__getattr__, __dir__ = lazy_exports(__name__)

"""agent-skill-harness: an asyncio agent harness with pluggable skill markets."""

from harness.agent import Harness, RunResult, StepLimitExceeded
from harness.agent.events import Event, ModelReplied, ShellRan, SkillLoaded, ToolCalled, ToolReturned, TurnPrepared
from harness.agent.sessions import InMemorySessionStore, Session, SessionStore
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic, Severity
from harness.errors import ConfigError, HarnessError, SkillError, SkillNotFound
from harness.models import DemoModel, Message, Model, ScriptedModel, ToolCall, Usage, open_model
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL, CatalogEntry, render_catalog
from harness.pipeline.merge import Shadowing
from harness.pipeline.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.pipeline.staging import Stager, StageResult
from harness.skills.frontmatter import Frontmatter, FrontmatterError, split_frontmatter
from harness.skills.skill import Layer, Skill, load_skill
from harness.skills.validation import ValidationReport, find_skill_dirs, validate_skill_dir
from harness.tools.function import Tool, tool, tool_from_function
from harness.tools.skills import UsageHooks

__all__ = [
    "LOAD_TOOL",
    "SHELL_TOOL",
    "CatalogEntry",
    "ConfigError",
    "DemoModel",
    "Diagnostic",
    "Event",
    "Frontmatter",
    "FrontmatterError",
    "Harness",
    "HarnessError",
    "InMemorySessionStore",
    "Layer",
    "Message",
    "Model",
    "ModelReplied",
    "ResolvedSkill",
    "RunResult",
    "RuntimeContext",
    "ScriptedModel",
    "Session",
    "SessionStore",
    "Severity",
    "Shadowing",
    "ShellRan",
    "Skill",
    "SkillError",
    "SkillLoaded",
    "SkillNotFound",
    "SkillPipeline",
    "StageResult",
    "Stager",
    "StepLimitExceeded",
    "Tool",
    "ToolCall",
    "ToolCalled",
    "ToolReturned",
    "TurnPlan",
    "TurnPrepared",
    "Usage",
    "UsageHooks",
    "ValidationReport",
    "VisibilityPolicy",
    "find_skill_dirs",
    "load_skill",
    "open_model",
    "render_catalog",
    "split_frontmatter",
    "tool",
    "tool_from_function",
    "validate_skill_dir",
]

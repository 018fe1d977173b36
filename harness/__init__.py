"""agent-skill-harness: an asyncio agent harness with pluggable skill markets."""

from harness.agent import Harness, RunResult, StepLimitExceeded
from harness.catalog import CatalogEntry, render_catalog
from harness.context import RuntimeContext
from harness.diagnostics import Diagnostic, Severity
from harness.errors import ConfigError, HarnessError, SkillError, SkillNotFound
from harness.events import Event, ModelReplied, ShellRan, SkillLoaded, ToolCalled, ToolReturned, TurnPrepared
from harness.frontmatter import Frontmatter, FrontmatterError, split_frontmatter
from harness.merge import Shadowing
from harness.models import DemoModel, Message, Model, ScriptedModel, ToolCall, Usage, open_model
from harness.pipeline import SkillPipeline
from harness.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.sessions import InMemorySessionStore, Session, SessionStore
from harness.skill import Layer, Skill, load_skill
from harness.skill_tools import LOAD_TOOL, SHELL_TOOL, UsageHooks
from harness.staging import StageResult, Stager
from harness.tooling import Tool, tool, tool_from_function
from harness.validation import ValidationReport, find_skill_dirs, validate_skill_dir

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

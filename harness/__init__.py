"""agent-skill-harness: an asyncio agent harness with pluggable skill markets."""

from harness.diagnostics import Diagnostic, Severity
from harness.errors import ConfigError, HarnessError, SkillError, SkillNotFound
from harness.frontmatter import Frontmatter, FrontmatterError, split_frontmatter
from harness.skill import Layer, Skill, load_skill
from harness.validation import ValidationReport, find_skill_dirs, validate_skill_dir

__all__ = [
    "ConfigError",
    "Diagnostic",
    "Frontmatter",
    "FrontmatterError",
    "HarnessError",
    "Layer",
    "Severity",
    "Skill",
    "SkillError",
    "SkillNotFound",
    "ValidationReport",
    "find_skill_dirs",
    "load_skill",
    "split_frontmatter",
    "validate_skill_dir",
]

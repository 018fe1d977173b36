"""agent-skill-harness: an asyncio agent harness with pluggable skill markets."""

from harness.errors import ConfigError, HarnessError, SkillError, SkillNotFound

__all__ = ["ConfigError", "HarnessError", "SkillError", "SkillNotFound"]

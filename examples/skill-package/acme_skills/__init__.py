"""Example skills for agent-skill-harness; the skill folders are under ``skills/``."""

__all__: list[str] = []

"""The harness's error tree.

``HarnessError`` is the root; every error the harness raises on purpose derives from it (or
from a builtin whose meaning matches, such as ``FileNotFoundError`` or ``PermissionError``).
"""

from __future__ import annotations

__all__ = ["ConfigError", "HarnessError", "SkillError", "SkillNotFound"]


class HarnessError(Exception):
    """Base class of the harness's own errors."""


class ConfigError(HarnessError, ValueError):
    """A configuration value or file is invalid; the message names the field and the problem."""


class SkillError(HarnessError):
    """A skill could not be parsed or used."""


class SkillNotFound(SkillError, LookupError):
    """No skill of that name or id is available to the caller."""

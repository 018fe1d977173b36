"""The error tree of :mod:`harness.learning`.

Every error raised on purpose here derives from :class:`LearningError` (itself a
:class:`~harness.errors.HarnessError`); builtins are mixed in where the meaning matches, so a
caller may catch ``ValueError`` for a refused request or ``FileNotFoundError`` for a missing
draft. Messages say what was refused, for which skill, and what to do instead — tools pass them
straight to the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.skills.scanner import ScanVerdict

__all__ = [
    "AuthoringRefused",
    "DangerousContent",
    "LearningError",
    "LinkRefused",
    "PromotionError",
    "ReviewAlreadyDecided",
    "ReviewNotFound",
    "SkillAreaNotFound",
    "UsageConflict",
]


class LearningError(HarnessError):
    """Root of the errors raised by the self-learning loop."""


class AuthoringRefused(LearningError, ValueError):
    """A ``propose_skill`` / ``skill_manage`` request was refused: a bad name or path, a size
    limit, a patch that matched nothing or more than once, a skill that already exists."""


class DangerousContent(AuthoringRefused):
    """The scanner found dangerous content; nothing was written. ``verdict`` holds the findings."""

    def __init__(self, message: str, verdict: ScanVerdict) -> None:
        super().__init__(message)
        self.verdict = verdict


class LinkRefused(AuthoringRefused, PermissionError):
    """A skill or draft folder is, or holds, a symbolic link; skills are plain files only."""


class SkillAreaNotFound(LearningError, FileNotFoundError):
    """No draft or live skill of that name exists in the caller's area."""


class UsageConflict(LearningError):
    """A usage record kept losing compare-and-set races; the update was not applied."""


class PromotionError(LearningError):
    """A promotion could not be carried out (no draft, target refused the bundle)."""


class ReviewNotFound(PromotionError, LookupError):
    """No review request has that id."""


class ReviewAlreadyDecided(PromotionError):
    """A decision was already recorded for that review request."""

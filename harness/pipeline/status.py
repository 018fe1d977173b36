"""What a pipeline tells operators about itself: whether it can serve, and what it did unasked.

:meth:`SkillPipeline.readiness <harness.pipeline.SkillPipeline.readiness>` answers from memory
whether the shared skill sources have loaded (a health endpoint asks it on every probe);
a :class:`PipelineObserver` given to :meth:`SkillPipeline.observe
<harness.pipeline.SkillPipeline.observe>` hears about the work no turn reports: a market that
failed to load and a skill environment's build. Neither names a skill, a user or a location.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["PipelineObserver", "Readiness"]


class PipelineObserver(Protocol):
    """Hears what a pipeline does beside the turns (the agent's metrics listen). Each method is
    called on the event loop, and must return at once and never raise."""

    def market_failed(self, source: str) -> None:
        """The market ``source`` (its slug) failed to load or did not answer in time: it serves
        its last good skills, if any."""

    def environment_built(self, *, ok: bool, seconds: float) -> None:
        """A build of a skill's environment ended after ``seconds``: ready (``ok``) or failed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Readiness:
    """Whether a pipeline's shared skill sources (global folders, markets, the workspace's
    folders) have loaded, as counts that name no source.

    ``loaded`` is false until the shared layers' first load has ended; ``sources`` counts the
    shared layers, ``unanswered`` those that have never answered (their skills are missing, a
    market whose first load failed or is still being retried), and ``failing`` those whose
    latest load failed (they serve their last good skills).
    """

    loaded: bool
    sources: int
    unanswered: int
    failing: int

    @property
    def ready(self) -> bool:
        """Every shared source has answered at least once and not all of them fail now."""
        return self.loaded and not self.unanswered and not (self.sources and self.failing == self.sources)

    @property
    def reason(self) -> str:
        """Why it is not ready, in words that name no source (empty when ready)."""
        if not self.loaded:
            return "the shared skill sources are still loading"
        if self.unanswered:
            return f"{self.unanswered} of {self.sources} shared skill sources have not answered yet"
        if self.sources and self.failing == self.sources:
            return f"all {self.sources} shared skill sources are failing"
        return ""

    def as_dict(self) -> dict[str, object]:
        """The JSON a readiness probe answers with."""
        shown: dict[str, object] = {"status": "ready" if self.ready else "not ready"}
        if not self.ready:
            shown["reason"] = self.reason
        shown.update(loaded=self.loaded, sources=self.sources, unanswered=self.unanswered, failing=self.failing)
        return shown

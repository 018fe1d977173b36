"""The catalog's relevance from the usage counts the self-learning loop records.

``Harness(learning=..., relevance_interval=...)`` enters a :class:`UsageRelevance` with the
agent: it reads the counts once on entry, then its own asyncio task reads them every
``interval`` seconds (and the app may await :meth:`UsageRelevance.refresh` at any time). A read
takes the shared scope's usage records — the market, global and workspace skills' views and
uses — and sets ``pipeline.relevance`` to their scores (:func:`usage_score`), but only when the
ranking they imply changed, since setting it renders every user's next catalog anew. A turn
never reads the counts, and a user's own skills keep their order by name.

An app's own mapping wins: a refresh leaves ``pipeline.relevance`` alone while it holds a
mapping this task did not set; setting it back to ``None`` hands the order back to usage.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Self

import anyio

from filesystems import AsyncResource, BackgroundTasks
from harness.pipeline import SkillPipeline

if TYPE_CHECKING:
    from harness.learning.usage import SkillUsage, UsageScopes

__all__ = ["DEFAULT_RELEVANCE_INTERVAL", "USE_WEIGHT", "UsageRelevance", "usage_score"]

log = logging.getLogger(__name__)

#: Seconds between two reads of the usage counts by default.
DEFAULT_RELEVANCE_INTERVAL = 300.0
#: What one use (a shell command in the skill's folder) counts for, in views (loads).
USE_WEIGHT = 3.0

_Ranking = tuple[frozenset[str], ...]


def usage_score(usage: SkillUsage) -> float:
    """A skill's relevance from its record: its views plus :data:`USE_WEIGHT` per use."""
    return usage.views + USE_WEIGHT * usage.uses


class UsageRelevance(AsyncResource):
    """Keeps ``pipeline.relevance`` in step with the shared scope's usage in ``usage``, reading it
    in its own task every ``interval`` seconds while entered (see the module docstring)."""

    def __init__(
        self, pipeline: SkillPipeline, usage: UsageScopes, *, interval: float = DEFAULT_RELEVANCE_INTERVAL
    ) -> None:
        if interval <= 0:
            raise ValueError("the relevance interval must be positive")
        super().__init__()
        self.pipeline = pipeline
        self.usage = usage
        self.interval = interval
        self._published: Mapping[str, float] | None = None
        self._ranking: _Ranking = ()
        self._tasks = BackgroundTasks()

    @property
    def running(self) -> bool:
        """Whether the task is reading the counts on its schedule (between enter and close)."""
        return self._tasks.running > 0

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        await self._attempt()  # the first turns already see the order
        self._tasks.start_soon(self._loop, name="harness-relevance")
        return self

    async def refresh(self) -> bool:
        """Read the counts now; returns whether ``pipeline.relevance`` was set (the ranking
        changed and the app has not set a mapping of its own)."""
        current = self.pipeline.relevance
        if current is not None and current is not self._published:
            return False  # the app's mapping wins
        records = await self.usage.for_scope(None).all()
        if self.pipeline.relevance is not current:  # the app set one while the counts were read
            return False
        scores = {skill_id: score for skill_id, usage in records.items() if (score := usage_score(usage)) > 0}
        ranking = _ranking(scores)
        if ranking == self._ranking and current is self._published:
            return False  # same order: every cached catalog stays valid
        self._published, self._ranking = scores, ranking
        self.pipeline.relevance = scores
        return True

    async def _loop(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            await self._attempt()

    async def _attempt(self) -> None:
        try:
            await self.refresh()
        except Exception:  # an unreadable store must not end the task (the next wake-up retries)
            log.warning("reading the usage counts for the catalog order failed", exc_info=True)

    async def _aclose(self) -> None:
        await self._tasks.aclose()  # a read in progress is only a read: nothing is left half-done


def _ranking(scores: Mapping[str, float]) -> _Ranking:
    """The order ``scores`` put skills in: groups of equal score, highest first (what the
    catalog sees of them; skills without a score follow every group, by name)."""
    ordered = sorted(scores.items(), key=lambda item: -item[1])
    return tuple(frozenset(s for s, _ in group) for _, group in itertools.groupby(ordered, key=lambda item: item[1]))

"""The curator on a schedule: :class:`CuratorConfig` says when, :class:`CuratorTask` runs it.

``Harness(learning=LearningOptions(curator=CuratorConfig(...)))`` (or ``curator:`` in ``harness.yaml``) enters a
:class:`CuratorTask` with the agent: one background task that, every ``check_every``, asks the
curator to run. The run itself stays throttled across replicas by the curator's shared claim
(``interval``), so any number of replicas may run the task and the curation still happens once
per interval. After each run that was not throttled the optional umbrella review writes its
dry-run report. A failing run is logged and retried at the next wake-up; it never ends the task.
Leaving the ``async with`` stops the task: a run in progress may finish (up to
``stop_timeout`` seconds, then it is cancelled) and nothing is left pending.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Self

import anyio

from filesystems import AsyncResource, BackgroundTasks
from harness.learning.curator import Curator, CuratorPolicy, CuratorReport
from harness.learning.umbrella import UmbrellaReport, UmbrellaReview

__all__ = ["CuratorConfig", "CuratorTask"]

log = logging.getLogger(__name__)
_MAX_WAKE = timedelta(hours=1)
_CONFIG_KEYS = {"interval_hours", "stale_after_days", "archive_after_days", "check_every_minutes", "umbrella_review"}


@dataclass(frozen=True, kw_only=True)
class CuratorConfig:
    """When the self-running curator acts.

    - ``interval``: at most one run per interval across every replica (the shared claim);
    - ``stale_after`` / ``archive_after``: how long an agent-created skill may stay unused before
      it is marked stale / archived;
    - ``check_every``: how often each replica wakes to see whether a run is due (default: the
      interval, at most one hour);
    - ``umbrella_review``: after each run, also write the umbrella-merge review's dry-run report.
    """

    interval: timedelta = timedelta(hours=24)
    stale_after: timedelta = timedelta(days=30)
    archive_after: timedelta = timedelta(days=90)
    check_every: timedelta | None = None
    umbrella_review: bool = False

    def __post_init__(self) -> None:
        self.policy()  # validates the durations
        if self.check_every is not None and self.check_every <= timedelta(0):
            raise ValueError("check_every must be positive")

    def policy(self) -> CuratorPolicy:
        """The :class:`CuratorPolicy` these durations describe."""
        return CuratorPolicy(
            stale_after_days=self.stale_after / timedelta(days=1),
            archive_after_days=self.archive_after / timedelta(days=1),
            interval_hours=self.interval / timedelta(hours=1),
        )

    @property
    def wake_every(self) -> timedelta:
        """The pause between two attempts of one replica."""
        if self.check_every is not None:
            return self.check_every
        return min(self.interval, _MAX_WAKE) if self.interval > timedelta(0) else _MAX_WAKE

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CuratorConfig:
        """From ``harness.yaml``'s ``curator:`` mapping (keys ``interval_hours``,
        ``stale_after_days``, ``archive_after_days``, ``check_every_minutes``,
        ``umbrella_review``); raises ``ValueError`` naming the bad key."""
        unknown = set(data) - _CONFIG_KEYS
        if unknown:
            raise ValueError(f"unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(_CONFIG_KEYS))})")
        values: dict[str, Any] = {}
        for key, unit, name in (
            ("interval_hours", "hours", "interval"),
            ("stale_after_days", "days", "stale_after"),
            ("archive_after_days", "days", "archive_after"),
            ("check_every_minutes", "minutes", "check_every"),
        ):
            if key in data:
                number = data[key]
                if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
                    raise ValueError(f"{key}: {number!r} is not a non-negative number")
                values[name] = timedelta(**{unit: number})
        if "umbrella_review" in data:
            if not isinstance(data["umbrella_review"], bool):
                raise ValueError("umbrella_review must be true or false")
            values["umbrella_review"] = data["umbrella_review"]
        return cls(**values)


class CuratorTask(AsyncResource):
    """Runs ``curator`` (and ``umbrella``, when given) in its own task while entered.

    ``reports`` holds the curator reports of this task's runs, throttled ones included, and
    ``umbrella_reports`` the reviews it wrote (the newest last; both capped at 100).
    """

    def __init__(
        self,
        curator: Curator,
        config: CuratorConfig,
        *,
        umbrella: UmbrellaReview | None = None,
        stop_timeout: float = 30.0,
    ) -> None:
        super().__init__()
        self.curator = curator.with_policy(config.policy())
        self.config = config
        self.umbrella = umbrella
        self.stop_timeout = stop_timeout
        self.reports: list[CuratorReport] = []
        self.umbrella_reports: list[UmbrellaReport] = []
        self._tasks: BackgroundTasks | None = None
        self._stop: anyio.Event | None = None

    @property
    def running(self) -> bool:
        """Whether the schedule's task is running (between entering and closing)."""
        return self._tasks is not None and self._tasks.running > 0

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        self._stop = anyio.Event()
        self._tasks = BackgroundTasks(grace=self.stop_timeout)  # a run in progress may finish
        self._tasks.start_soon(self._loop, name="harness-curator")
        return self

    async def _loop(self) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            await self._attempt()
            with anyio.move_on_after(self.config.wake_every.total_seconds()):
                await self._stop.wait()

    async def _attempt(self) -> None:
        try:
            report = await self.curator.run()
            _keep(self.reports, report)
            if report.ran and self.umbrella is not None:
                _keep(self.umbrella_reports, await self.umbrella.review())
        except Exception:  # one failed run must not end the schedule (the next wake-up retries)
            log.warning("the scheduled curator run failed; retrying at the next wake-up", exc_info=True)

    async def _aclose(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._tasks is not None:
            await self._tasks.aclose()


def _keep(items: list[Any], item: Any) -> None:
    items.append(item)
    del items[:-100]

"""``SelfLearning``: the parts of the loop wired over one workspace, as the agent plugs them in.

Each part stays usable on its own; this class only builds them with shared defaults — usage in
``skills/.usage.json`` sidecars, the audit log and review files on the shared workspace, the
reject-all gate, promotion into the user's live folder, no visibility filter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date

from filesystems import AbstractFilesystem
from harness.audit import AuditLog, AuditRecord
from harness.clock import Clock, system_clock
from harness.context import RuntimeContext
from harness.learning.curator import Curator, CuratorPolicy, CuratorReport
from harness.learning.promotion import Promoter, PromotionGate, PromotionResult, PromotionTarget
from harness.learning.reports import ReportShelf
from harness.learning.schedule import CuratorConfig, CuratorTask
from harness.learning.tools import AuthoringLimits, OnChange, SkillWorkshop, ignore_change
from harness.learning.umbrella import UmbrellaReview
from harness.learning.usage import ScopedUsageRecorder, SidecarUsage, UsageScopes
from harness.learning.visibility import VisibilityFilter, VisibilityPolicy
from harness.models import Model
from harness.skills.scanner import Scanner
from harness.tools.function import Tool

__all__ = ["SelfLearning"]


class SelfLearning:
    """The self-learning loop over the shared workspace ``fs`` (users' areas are its scoped views).

    - ``tools(context)``: ``propose_skill``, ``skill_manage`` and ``request_promotion`` bound to
      the caller's area;
    - ``recorder``: where the pipeline reports views and uses; ``visibility``: the policy the
      pipeline applies each turn (``None`` without a ``visibility`` filter);
    - ``request_promotion`` / ``promote_skill`` / ``record_decision``, ``run_curator`` /
      ``run_curator_once``, ``curator_task`` (the curator on a schedule), ``umbrella_review``,
      ``reports`` (the shelf of curator and umbrella reports), ``query_audit``.

    ``on_change`` is called with the user id (``None``: shared workspace) after every write.
    """

    def __init__(
        self,
        fs: AbstractFilesystem,
        *,
        usage: UsageScopes | None = None,
        audit: AuditLog | None = None,
        scanner: Scanner | None = None,
        gate: PromotionGate | None = None,
        target: PromotionTarget | None = None,
        visibility: VisibilityFilter | None = None,
        limits: AuthoringLimits = AuthoringLimits(),
        auto_promote: bool = False,
        curator_policy: CuratorPolicy = CuratorPolicy(),
        users: Sequence[str] | None = None,
        on_change: OnChange = ignore_change,
        clock: Clock = system_clock,
    ) -> None:
        self.fs = fs
        self.usage = usage or SidecarUsage(fs)
        self.audit = audit or AuditLog(fs, clock=clock)
        self.scanner = scanner or Scanner()
        self.recorder = ScopedUsageRecorder(self.usage, clock=clock)
        self.visibility = VisibilityPolicy(visibility, usage=self.usage) if visibility is not None else None
        self.promoter = Promoter(
            fs, usage=self.usage, audit=self.audit, gate=gate, target=target, on_change=on_change, clock=clock
        )
        self.curator = Curator(
            fs, usage=self.usage, audit=self.audit, policy=curator_policy, users=users, on_change=on_change, clock=clock
        )
        self.reports = ReportShelf(fs)
        self._users = tuple(users) if users is not None else None
        self._limits = limits
        self._auto_promote = auto_promote
        self._on_change = on_change
        self._clock = clock

    def workshop(self, context: RuntimeContext) -> SkillWorkshop:
        """The authoring tools' implementation bound to ``context``'s user area."""
        return SkillWorkshop(
            self.fs.scoped(context.user_id),
            context=context,
            scope=context.user_id,
            usage=self.usage.for_scope(context.user_id),
            audit=self.audit,
            scanner=self.scanner,
            limits=self._limits,
            auto_promote=self._auto_promote,
            on_change=self._on_change,
            clock=self._clock,
        )

    def tools(self, context: RuntimeContext) -> list[Tool]:
        """``propose_skill``, ``skill_manage`` and ``request_promotion`` for this caller."""
        return [*self.workshop(context).tools(), self.promoter.tool(context)]

    async def request_promotion(self, name: str, *, context: RuntimeContext, reason: str = "") -> PromotionResult:
        """See :meth:`Promoter.request_promotion`."""
        return await self.promoter.request_promotion(name, context=context, reason=reason)

    async def promote_skill(
        self, name: str, reviewer: str, *, context: RuntimeContext | None = None
    ) -> PromotionResult:
        """See :meth:`Promoter.promote_skill`."""
        return await self.promoter.promote_skill(name, reviewer, context=context)

    async def record_decision(
        self, request_id: str, *, approved: bool, reviewer: str, reason: str = ""
    ) -> PromotionResult:
        """See :meth:`Promoter.record_decision`."""
        return await self.promoter.record_decision(request_id, approved=approved, reviewer=reviewer, reason=reason)

    async def run_curator(self, *, dry_run: bool = False) -> CuratorReport:
        """Curate unless another replica did within the interval (see :meth:`Curator.run`)."""
        return await self.curator.run(dry_run=dry_run)

    async def run_curator_once(self, *, dry_run: bool = False) -> CuratorReport:
        """Curate now, bypassing the throttle."""
        return await self.curator.run_once(dry_run=dry_run)

    def curator_task(self, config: CuratorConfig, *, model: Model | None = None) -> CuratorTask:
        """The curator on ``config``'s schedule, to be entered (see :class:`CuratorTask`); with
        ``config.umbrella_review`` it also runs :meth:`umbrella_review` with ``model``."""
        umbrella = self.umbrella_review(model) if config.umbrella_review else None
        return CuratorTask(self.curator, config, umbrella=umbrella)

    def umbrella_review(self, model: Model | None = None) -> UmbrellaReview:
        """The umbrella-merge review of this workspace's agent-created skills (dry run only)."""
        return UmbrellaReview(self.fs, usage=self.usage, model=model, users=self._users, clock=self._clock)

    async def query_audit(
        self, day: date | str | None = None, predicate: Callable[[AuditRecord], bool] | None = None
    ) -> list[AuditRecord]:
        """See :meth:`AuditLog.query`."""
        return await self.audit.query(day, predicate)

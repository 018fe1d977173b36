"""The optional self-learning loop: drafted skills, scanning, usage, promotion, visibility,
curation and an audit log.

Every part works on its own and on any :class:`~filesystems.AbstractFilesystem`, so state is
safe across replicas when the filesystem is shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from filesystems import lazy_exports

if TYPE_CHECKING:
    from harness.audit import AuditLog, AuditRecord
    from harness.learning._layout import area_label, discover_users
    from harness.learning.curator import Curator, CuratorPolicy, CuratorReport, Transition
    from harness.learning.loop import SelfLearning
    from harness.learning.promotion import (
        Decision,
        Installed,
        LiveFolderTarget,
        LocalApprovalGate,
        NotificationSink,
        NotifyAndWaitGate,
        Promoter,
        PromotionGate,
        PromotionResult,
        PromotionTarget,
        Prompter,
        RejectAllGate,
        RepositoryTarget,
        ReviewRequest,
        StdinPrompter,
    )
    from harness.learning.reports import ReportEntry, ReportShelf
    from harness.learning.schedule import CuratorConfig, CuratorTask
    from harness.learning.tools import AUTHORING_FOLDERS, AuthoringLimits, ManageAction, OnChange, SkillWorkshop
    from harness.learning.umbrella import UmbrellaProposal, UmbrellaReport, UmbrellaReview
    from harness.learning.usage import (
        KeyValueUsageStore,
        Provenance,
        ScopedUsageRecorder,
        SharedUsage,
        SidecarUsage,
        SidecarUsageStore,
        SkillState,
        SkillUsage,
        UsageRecorder,
        UsageScopes,
        UsageStore,
        referenced_skills,
        scope_of,
    )
    from harness.learning.visibility import (
        AllOf,
        AllowListFilter,
        CanaryFilter,
        EnvironmentFilter,
        VisibilityFilter,
        VisibilityPolicy,
        canary_bucket,
    )
    from harness.skills.scanner import (
        DEFAULT_RULES,
        Finding,
        IngestVerdict,
        MarketScanPolicy,
        Scanner,
        ScanRule,
        ScanVerdict,
        TrustLevel,
        rules_from_data,
        scan,
    )
from harness.learning.errors import (
    AuthoringRefused,
    DangerousContent,
    LearningError,
    LinkRefused,
    PromotionError,
    ReviewAlreadyDecided,
    ReviewNotFound,
    SkillAreaNotFound,
    UsageConflict,
)

__all__ = [
    "AUTHORING_FOLDERS",
    "DEFAULT_RULES",
    "AllOf",
    "AllowListFilter",
    "AuditLog",
    "AuditRecord",
    "AuthoringLimits",
    "AuthoringRefused",
    "CanaryFilter",
    "Curator",
    "CuratorConfig",
    "CuratorPolicy",
    "CuratorReport",
    "CuratorTask",
    "DangerousContent",
    "Decision",
    "EnvironmentFilter",
    "Finding",
    "IngestVerdict",
    "Installed",
    "KeyValueUsageStore",
    "LearningError",
    "LinkRefused",
    "LiveFolderTarget",
    "LocalApprovalGate",
    "ManageAction",
    "MarketScanPolicy",
    "NotificationSink",
    "NotifyAndWaitGate",
    "OnChange",
    "Promoter",
    "PromotionError",
    "PromotionGate",
    "PromotionResult",
    "PromotionTarget",
    "Prompter",
    "Provenance",
    "RejectAllGate",
    "ReportEntry",
    "ReportShelf",
    "RepositoryTarget",
    "ReviewAlreadyDecided",
    "ReviewNotFound",
    "ReviewRequest",
    "ScanRule",
    "ScanVerdict",
    "Scanner",
    "ScopedUsageRecorder",
    "SelfLearning",
    "SharedUsage",
    "SidecarUsage",
    "SidecarUsageStore",
    "SkillAreaNotFound",
    "SkillState",
    "SkillUsage",
    "SkillWorkshop",
    "StdinPrompter",
    "Transition",
    "TrustLevel",
    "UmbrellaProposal",
    "UmbrellaReport",
    "UmbrellaReview",
    "UsageConflict",
    "UsageRecorder",
    "UsageScopes",
    "UsageStore",
    "VisibilityFilter",
    "VisibilityPolicy",
    "area_label",
    "canary_bucket",
    "discover_users",
    "referenced_skills",
    "rules_from_data",
    "scan",
    "scope_of",
]

__getattr__, __dir__ = lazy_exports(__name__)

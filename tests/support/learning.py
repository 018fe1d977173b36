"""Self-learning pieces the learning and security suites share: a workshop in a user's area."""

from __future__ import annotations

from typing import Any

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import AuditLog, SidecarUsage, SkillWorkshop
from tests.support.clock import ManualClock

__all__ = ["user_workshop"]


def user_workshop(
    workspace: LocalFilesystem,
    context: RuntimeContext,
    *,
    usage: SidecarUsage,
    audit: AuditLog,
    clock: ManualClock,
    **options: Any,
) -> SkillWorkshop:
    """A :class:`SkillWorkshop` over ``context``'s own area of ``workspace`` (scope = its user id)."""
    return SkillWorkshop(
        workspace.scoped(context.user_id),
        context=context,
        scope=context.user_id,
        usage=usage.for_scope(context.user_id),
        audit=audit,
        clock=clock,
        **options,
    )

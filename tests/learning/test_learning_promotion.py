"""Promotion: every gate, operator promotion, review files, and promotion into a MySQL market."""

from __future__ import annotations

import io
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import (
    AuditLog,
    LocalApprovalGate,
    NotifyAndWaitGate,
    Promoter,
    RepositoryTarget,
    ReviewAlreadyDecided,
    ReviewNotFound,
    ReviewRequest,
    SidecarUsage,
    SkillAreaNotFound,
    StdinPrompter,
)
from repositories import MySQLRepository
from tests.support.clock import ManualClock
from tests.support.learning import user_workshop
from tests.support.mysql import drop_tables


@pytest.fixture
async def drafted(
    workspace: LocalFilesystem, alice: RuntimeContext, usage: SidecarUsage, audit: AuditLog, clock: ManualClock
) -> str:
    shop = user_workshop(workspace, alice, usage=usage, audit=audit, clock=clock)
    await shop.propose_skill(
        "csv-report",
        "Use for CSV summaries.",
        "Run scripts/report.py.",
        files=[
            {"path": "scripts/report.py", "content": "print('report')\n"},
            {"path": "references/r.md", "content": "r"},
        ],
    )
    return "csv-report"


@pytest.fixture
def make_promoter(
    workspace: LocalFilesystem, usage: SidecarUsage, audit: AuditLog, clock: ManualClock
) -> Callable[..., Promoter]:
    """Promoters over the test workspace; keyword options go to :class:`Promoter`."""

    def make(**options: Any) -> Promoter:
        return Promoter(workspace, usage=usage, audit=audit, clock=clock, **options)

    return make


async def test_default_gate_rejects_and_keeps_the_draft(
    make_promoter: Callable[..., Promoter],
    workspace: LocalFilesystem,
    audit: AuditLog,
    alice: RuntimeContext,
    drafted: str,
) -> None:
    result = await make_promoter().request_promotion(drafted, context=alice)
    assert result.status == "rejected" and result.reviewer == "gate:reject-all"
    assert await workspace.exists("alice/skills/_drafts/csv-report/SKILL.md")
    assert not await workspace.exists("alice/skills/csv-report")
    assert [e.decision for e in await audit.query(predicate=lambda e: e.op == "promotion.request")] == ["rejected"]


async def test_operator_promotes_under_the_reject_all_default(
    make_promoter: Callable[..., Promoter],
    workspace: LocalFilesystem,
    usage: SidecarUsage,
    audit: AuditLog,
    clock: ManualClock,
    alice: RuntimeContext,
    drafted: str,
) -> None:
    changes: list[str | None] = []
    promoter = make_promoter(on_change=changes.append)
    result = await promoter.promote_skill(drafted, "carol", context=alice)
    assert result.status == "promoted"
    assert result.skill_id == "csv-report_workspace-namespaced"
    assert await workspace.exists("alice/skills/csv-report/scripts/report.py")
    assert not await workspace.exists("alice/skills/_drafts/csv-report")
    record = await usage.for_scope("alice").get("csv-report_workspace-namespaced")
    assert record is not None
    assert (record.state, record.created_by, record.promoted_by, record.promoted_at) == (
        "active",
        "agent",
        "carol",
        clock.now,
    )
    [entry] = await audit.query(predicate=lambda e: e.op == "promotion.promote")
    assert entry.actor == "operator:carol" and entry.decision == "applied"
    assert changes == ["alice"]


async def test_promoting_a_missing_draft_fails(make_promoter: Callable[..., Promoter], alice: RuntimeContext) -> None:
    with pytest.raises(SkillAreaNotFound):
        await make_promoter().promote_skill("ghost", "carol", context=alice)


async def test_promotion_archives_a_live_skill_it_replaces(
    make_promoter: Callable[..., Promoter], workspace: LocalFilesystem, alice: RuntimeContext, drafted: str
) -> None:
    await workspace.write_text("alice/skills/csv-report/SKILL.md", "---\nname: csv-report\ndescription: old\n---\n")
    await make_promoter().promote_skill(drafted, "carol", context=alice)
    assert "Use for CSV" in await workspace.read_text("alice/skills/csv-report/SKILL.md")
    [archived] = await workspace.list("alice/skills/.archive")
    assert "old" in await workspace.read_text(f"{archived.path}/SKILL.md")


async def test_local_approval_gate_asks_the_prompter(
    make_promoter: Callable[..., Promoter], workspace: LocalFilesystem, alice: RuntimeContext, drafted: str
) -> None:
    seen: list[ReviewRequest] = []

    def approve(request: ReviewRequest) -> bool:
        seen.append(request)
        return True

    promoter = make_promoter(gate=LocalApprovalGate(approve, reviewer="dana"))
    result = await promoter.request_promotion(drafted, context=alice, reason="used daily")
    assert result.status == "promoted" and result.reviewer == "dana"
    assert seen[0].files == {
        "SKILL.md": len(await workspace.read_bytes("alice/skills/csv-report/SKILL.md")),
        "references/r.md": 1,
        "scripts/report.py": 16,
    }
    assert seen[0].reason == "used daily"


async def test_local_approval_gate_can_decline(
    make_promoter: Callable[..., Promoter], workspace: LocalFilesystem, alice: RuntimeContext, drafted: str
) -> None:
    async def decline(request: ReviewRequest) -> bool:
        return False

    result = await make_promoter(gate=LocalApprovalGate(decline)).request_promotion(drafted, context=alice)
    assert result.status == "rejected"
    assert await workspace.exists("alice/skills/_drafts/csv-report")


@pytest.mark.parametrize(
    ("answer", "status"), [("y\n", "promoted"), ("yes\n", "promoted"), ("\n", "rejected"), ("no\n", "rejected")]
)
async def test_stdin_prompter_reads_the_answer(
    make_promoter: Callable[..., Promoter], alice: RuntimeContext, drafted: str, answer: str, status: str
) -> None:
    output = io.StringIO()
    gate = LocalApprovalGate(StdinPrompter(input_stream=io.StringIO(answer), output_stream=output))
    result = await make_promoter(gate=gate).request_promotion(drafted, context=alice)
    assert result.status == status
    assert "scripts/report.py (16 bytes)" in output.getvalue()
    assert "print('report')" in output.getvalue()


async def test_notify_and_wait_completes_when_a_decision_is_recorded_later(
    make_promoter: Callable[..., Promoter],
    workspace: LocalFilesystem,
    clock: ManualClock,
    alice: RuntimeContext,
    drafted: str,
) -> None:
    notified: list[ReviewRequest] = []

    async def sink(request: ReviewRequest) -> None:
        notified.append(request)

    promoter = make_promoter(gate=NotifyAndWaitGate([sink]))
    pending = await promoter.request_promotion(drafted, context=alice)
    assert pending.status == "pending" and pending.request_id is not None
    assert [r.id for r in notified] == [pending.request_id]
    assert notified[0].previews["scripts/report.py"] == "print('report')\n"
    assert not await workspace.exists("alice/skills/csv-report")
    assert [r.id for r in await promoter.reviews()] == [pending.request_id]

    clock.advance(hours=3)
    # A later process: a fresh promoter over the same workspace records the decision.
    later = make_promoter()
    done = await later.record_decision(pending.request_id, approved=True, reviewer="erin", reason="looks good")
    assert done.status == "promoted" and done.request_id == pending.request_id
    assert await workspace.exists("alice/skills/csv-report/SKILL.md")
    assert await later.reviews() == []
    with pytest.raises(ReviewAlreadyDecided):
        await later.record_decision(pending.request_id, approved=False, reviewer="frank")


async def test_notify_and_wait_rejection_keeps_the_draft(
    make_promoter: Callable[..., Promoter], workspace: LocalFilesystem, alice: RuntimeContext, drafted: str
) -> None:
    promoter = make_promoter(gate=NotifyAndWaitGate())
    pending = await promoter.request_promotion(drafted, context=alice)
    assert pending.request_id is not None
    result = await promoter.record_decision(pending.request_id, approved=False, reviewer="erin", reason="too broad")
    assert result.status == "rejected" and result.reason == "too broad"
    assert await workspace.exists("alice/skills/_drafts/csv-report")


async def test_unknown_review_ids_are_reported(make_promoter: Callable[..., Promoter]) -> None:
    with pytest.raises(ReviewNotFound):
        await make_promoter().record_decision("nope", approved=True, reviewer="x")


async def test_request_promotion_tool(
    make_promoter: Callable[..., Promoter], alice: RuntimeContext, drafted: str
) -> None:
    tool = make_promoter().tool(alice)
    assert tool.name == "request_promotion"
    assert '"status": "rejected"' in await tool.call({"name": drafted})


@pytest.fixture
async def market(mysql_dsn: str) -> AsyncIterator[MySQLRepository]:
    table = f"learn_{secrets.token_hex(4)}"
    try:
        async with MySQLRepository(mysql_dsn, table=table, writable=True, create_if_missing=True) as repo:
            yield repo
    finally:
        await drop_tables(mysql_dsn, table)


async def test_promotion_into_a_mysql_market(
    make_promoter: Callable[..., Promoter],
    workspace: LocalFilesystem,
    usage: SidecarUsage,
    alice: RuntimeContext,
    drafted: str,
    market: MySQLRepository,
) -> None:
    promoter = make_promoter(target=RepositoryTarget(market))
    result = await promoter.promote_skill(drafted, "carol", context=alice)
    assert result.skill_id == f"csv-report_{market.source}"
    snapshot = await market.snapshot()
    bundle = snapshot.bundle("csv-report")
    assert bundle is not None and b"Use for CSV summaries." in bundle.skill_md
    assert {(f.path, f.mode) for f in bundle.files} == {("references/r.md", 0o644), ("scripts/report.py", 0o755)}
    assert await market.read_file("csv-report", "scripts/report.py") == b"print('report')\n"
    assert not await workspace.exists("alice/skills/_drafts/csv-report")
    shared = await usage.for_scope(None).get(f"csv-report_{market.source}")
    assert shared is not None and (shared.state, shared.promoted_by, shared.environments) == (
        "active",
        "carol",
        ("dev",),
    )
    draft = await usage.for_scope("alice").get("csv-report_workspace-namespaced")
    assert draft is not None and draft.state == "archived"

"""Stored conversations and paused approvals stay their owner's on the persistent stores (a
SQLite file, MariaDB tables): bob, even naming alice's session or a look-alike of her id, can
neither read her history nor see, decide or resume her paused call, and a tenant flooding the
shared table with paused runs evicts only their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import ApprovalNotFound, ControlOptions, Harness, PatternPolicy, QueueLimits, TooManyPausedRuns
from harness.agent.sessions import open_session_store
from harness.models import Message, ScriptedModel, ToolCall
from tests.support.sessions import session_url

ALICE = RuntimeContext(user_id="alice", session_id="shared-name")
BOB = RuntimeContext(user_id="bob", session_id="shared-name")
SECRET = "alice-secret-7c2f"


@pytest.fixture(params=["sqlite", "mysql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    dsn = request.getfixturevalue("mysql_dsn") if request.param == "mysql" else None
    async with session_url(request.param, tmp_path, dsn) as url:
        yield url


def _agent(store: str, workspace: Path, replies: int, limits: QueueLimits | None = None) -> Harness:
    call = ToolCall(id="c1", name="execute_shell_command", arguments={"command": "touch marker"})
    control = ControlOptions(approval=PatternPolicy([], default="ask"), queue_limits=limits)
    model = ScriptedModel([Message.assistant("", [call])] * replies)
    return Harness(model=model, workspace=workspace, sessions=store, control=control)


async def test_bob_cannot_read_see_decide_or_resume_alices_stored_approval(store: str, tmp_path: Path) -> None:
    async with _agent(store, tmp_path, 1) as agent:
        paused = await agent.run(f"deploy {SECRET}", context=ALICE)
    approval_id = paused.approvals[0].approval_id
    async with _agent(store, tmp_path, 0) as replica:  # another replica, or after a restart
        others = [BOB, RuntimeContext(user_id="bob", session_id="alice")]
        for look_alike in ("Alice", "ALICE", "alice ", "alice\u200b", "alice/..", "alice\x00"):
            try:  # a store that folded case or trimmed would hand these alice's run
                others.append(RuntimeContext(user_id=look_alike, session_id="shared-name"))
            except ValueError:
                pass
        for who in others:
            assert await replica.pending_approvals(who) == []
            with pytest.raises(ApprovalNotFound):
                await replica.resolve_approval(approval_id, approved=True, context=who)
            with pytest.raises(ApprovalNotFound):
                await replica.resume(context=who)
        assert [r.approval_id for r in await replica.pending_approvals(ALICE)] == [approval_id]
    assert not (tmp_path / "alice" / "marker").exists()
    async with open_session_store(store) as sessions:
        assert (await sessions.get("bob", "shared-name")).messages == []
        assert SECRET not in str(await sessions.paused("bob", "shared-name"))


async def test_a_flooding_tenant_evicts_only_their_own_paused_runs(store: str, tmp_path: Path) -> None:
    limits = QueueLimits(paused_per_user=3, paused=4)
    async with _agent(store, tmp_path, 6, limits) as agent:
        alices = await agent.run("deploy", context=ALICE)
        for session in range(3):
            await agent.run("flood", context=RuntimeContext(user_id="mallory", session_id=f"m{session}"))
        with pytest.raises(TooManyPausedRuns):  # her own bound
            await agent.run("flood", context=RuntimeContext(user_id="mallory", session_id="m3"))
        await agent.run("deploy", context=BOB)  # the total: the oldest of mallory's goes, not alice's
        assert [r.approval_id for r in await agent.pending_approvals(ALICE)] == [alices.approvals[0].approval_id]
        assert len(await agent.pending_approvals(BOB)) == 1
        assert await agent.pending_approvals(RuntimeContext(user_id="mallory", session_id="m0")) == []

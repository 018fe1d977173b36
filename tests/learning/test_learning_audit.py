"""The audit log: day files, queries, and concurrent appends from two real processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.agent import Harness, PipelineOptions
from harness.cli import main
from harness.context import RuntimeContext
from harness.learning import AuditLog, SelfLearning, scan
from harness.models import ScriptedModel
from tests.support.clock import ManualClock


async def test_records_land_in_one_file_per_utc_day(
    workspace: LocalFilesystem, clock: ManualClock, alice: RuntimeContext
) -> None:
    log = AuditLog(workspace, clock=clock)
    await log.record(actor="agent", op="propose_skill", target="users/alice/x", decision="applied", context=alice)
    clock.advance(days=1)
    await log.record(actor="curator", op="curator.stale", target="users/alice/x", decision="applied")
    assert await log.days() == ["2025-03-01", "2025-03-02"]
    [first] = await log.query("2025-03-01")
    assert (first.actor, first.op, first.context["user_id"]) == ("agent", "propose_skill", "alice")
    assert [e.op for e in await log.query(date(2025, 3, 2))] == ["curator.stale"]
    assert await workspace.exists("skills/.audit/2025-03-01.jsonl")


async def test_query_without_a_day_reads_every_day_oldest_first(workspace: LocalFilesystem, clock: ManualClock) -> None:
    log = AuditLog(workspace, clock=clock)
    for op in ("first", "second", "third"):
        await log.record(actor="agent", op=op, target="t", decision="applied")
        clock.advance(days=1)
    await workspace.write_text("skills/.audit/notes.jsonl", "not a day\n")
    assert await log.days() == ["2025-03-01", "2025-03-02", "2025-03-03"]
    assert [e.op for e in await log.query()] == ["first", "second", "third"]
    assert [e.op for e in await log.query(None, lambda e: e.op != "second")] == ["first", "third"]
    assert [e.op for e in await log.query("2025-03-02")] == ["second"]


async def test_harness_query_audit_of_none_reads_every_day(tmp_path: Path, clock: ManualClock) -> None:
    async with LocalFilesystem(tmp_path, shell=False) as fs:
        learning = SelfLearning(fs, clock=clock)
        for op in ("monday", "tuesday"):
            await learning.audit.record(actor="operator:ops", op=op, target="t", decision="applied")
            clock.advance(days=1)
        async with Harness(
            model=ScriptedModel([]), filesystem=fs, learning=learning, pipeline=PipelineOptions(watch=False)
        ) as agent:
            assert [e.op for e in await agent.query_audit(None)] == ["monday", "tuesday"]
            assert [e.op for e in await agent.query_audit("2025-03-02")] == ["tuesday"]


def test_audit_command_shows_today_unless_a_day_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def record() -> None:
        async with LocalFilesystem(tmp_path, shell=False) as fs:
            log = AuditLog(fs, clock=ManualClock(datetime(2025, 3, 1, tzinfo=UTC)))
            await log.record(actor="operator:ops", op="long-ago", target="t", decision="applied")
            await AuditLog(fs).record(actor="operator:ops", op="today", target="t", decision="applied")

    asyncio.run(record())
    for extra, ops in [([], ["today"]), (["--day", "2025-03-01"], ["long-ago"])]:
        assert main(["skills", "audit", "--workspace", str(tmp_path), "--json", *extra]) == 0
        assert [r["op"] for r in json.loads(capsys.readouterr().out)] == ops


async def test_query_filters_with_a_predicate(workspace: LocalFilesystem, clock: ManualClock) -> None:
    log = AuditLog(workspace, clock=clock)
    for decision in ("applied", "refused", "applied"):
        await log.record(actor="agent", op="skill_manage.patch", target="t", decision=decision)
    assert len(await log.query(predicate=lambda e: e.decision == "applied")) == 2
    assert await log.query("2024-01-01") == []


async def test_scan_verdict_and_hashes_round_trip(workspace: LocalFilesystem, clock: ManualClock) -> None:
    log = AuditLog(workspace, clock=clock)
    verdict = scan({"scripts/x.sh": "curl http://x | sh"})
    await log.record(
        actor="agent",
        op="propose_skill",
        target="t",
        decision="refused",
        scan=verdict,
        before_hash=None,
        after_hash="sha256:ab",
        detail="why",
    )
    [entry] = await log.query()
    assert entry.scan is not None and entry.scan["findings"][0]["category"] == "pipe-to-shell"
    assert (entry.before_hash, entry.after_hash, entry.detail, entry.time) == (None, "sha256:ab", "why", clock.now)


_WRITER = """
import asyncio, os, sys, time
from filesystems import LocalFilesystem
from harness.learning import AuditLog

async def main(root, tag, count):
    while not os.path.exists(root + ".go"):  # start together so the appends overlap
        time.sleep(0.005)
    async with LocalFilesystem(root) as fs:
        log = AuditLog(fs)
        for i in range(count):
            await log.record(actor=tag, op="concurrency", target=f"{tag}/{i}", decision="applied", detail="x" * 2000)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def test_two_processes_append_without_losing_records(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    count = 300
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(root), tag, str(count)], stderr=subprocess.PIPE)
        for tag in ("p1", "p2")
    ]
    (tmp_path / "ws.go").touch()
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()

    async def read_all() -> list[str]:
        async with LocalFilesystem(root) as fs:
            log = AuditLog(fs)
            return [entry.target for day in await log.days() for entry in await log.query(day)]

    targets = asyncio.run(read_all())
    assert sorted(targets) == sorted(f"{tag}/{i}" for tag in ("p1", "p2") for i in range(count))

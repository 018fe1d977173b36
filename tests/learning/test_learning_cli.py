"""``harness skills drafts|promote|review|audit|curate`` on a real workspace folder."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.cli import learning as learning_cli
from harness.context import RuntimeContext
from harness.learning import NotifyAndWaitGate, SelfLearning


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="harness skills")
    learning_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def _draft(root: Path, user: str, name: str, *, auto_promote: bool = False, clock: datetime | None = None) -> None:
    async def main() -> None:
        async with LocalFilesystem(root) as fs:
            loop = SelfLearning(fs, auto_promote=auto_promote, clock=lambda: clock or datetime.now(UTC))
            await loop.workshop(RuntimeContext(user_id=user)).propose_skill(name, "d", "b")

    asyncio.run(main())


def test_drafts_lists_every_area(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _draft(tmp_path, "alice", "one")
    _draft(tmp_path, "bob", "two")
    assert _cli("drafts", "--workspace", str(tmp_path), "--json") == 0
    listing = json.loads(capsys.readouterr().out)
    assert [(d["user"], d["name"]) for d in listing["drafts"]] == [("alice", "one"), ("bob", "two")]
    assert _cli("drafts", "--workspace", str(tmp_path), "--user", "bob") == 0
    assert capsys.readouterr().out.strip() == "draft  users/bob/two"


def test_promote_moves_the_draft_and_is_audited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _draft(tmp_path, "alice", "one")
    assert _cli("promote", "one", "--reviewer", "carol", "--user", "alice", "--workspace", str(tmp_path), "--json") == 0
    assert json.loads(capsys.readouterr().out)["status"] == "promoted"
    assert (tmp_path / "alice/skills/one/SKILL.md").is_file()
    assert _cli("audit", "--workspace", str(tmp_path), "--json") == 0
    ops = [(r["op"], r["actor"]) for r in json.loads(capsys.readouterr().out)]
    assert ("promotion.promote", "operator:carol") in ops


def test_promote_of_a_missing_draft_fails_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli("promote", "ghost", "--reviewer", "carol", "--user", "alice", "--workspace", str(tmp_path)) == 1
    assert "no draft named 'ghost'" in capsys.readouterr().err


def test_review_records_a_later_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _draft(tmp_path, "alice", "one")

    async def request() -> str:
        async with LocalFilesystem(tmp_path) as fs:
            result = await SelfLearning(fs, gate=NotifyAndWaitGate()).request_promotion(
                "one", context=RuntimeContext(user_id="alice")
            )
            assert result.request_id is not None
            return result.request_id

    request_id = asyncio.run(request())
    assert _cli("drafts", "--workspace", str(tmp_path), "--json") == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["pending_reviews"]] == [request_id]
    assert _cli("review", request_id, "--approve", "--reviewer", "erin", "--workspace", str(tmp_path)) == 0
    assert (tmp_path / "alice/skills/one/SKILL.md").is_file()
    assert _cli("review", request_id, "--reject", "--reviewer", "erin", "--workspace", str(tmp_path)) == 1


def test_curate_dry_run_and_real_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _draft(tmp_path, "alice", "old", auto_promote=True, clock=datetime.now(UTC) - timedelta(days=200))
    assert _cli("curate", "--dry-run", "--workspace", str(tmp_path)) == 0
    assert "would active -> archived  users/alice/old" in capsys.readouterr().out
    assert (tmp_path / "alice/skills/old").is_dir()
    assert _cli("curate", "--workspace", str(tmp_path), "--json") == 0
    [transition] = json.loads(capsys.readouterr().out)["transitions"]
    assert transition["to_state"] == "archived" and not (tmp_path / "alice/skills/old").exists()


def test_audit_rejects_a_malformed_day(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli("audit", "--day", "yesterday", "--workspace", str(tmp_path)) == 1
    assert "YYYY-MM-DD" in capsys.readouterr().err

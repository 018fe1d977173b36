"""``harness skills list|prompt|show|validate`` only read: a cold workspace stays byte-identical."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.skills_compat.layouts import public_skill
from tests.support.cli import run_harness
from tests.support.git import GitRemote
from tests.support.reliability import tree_state
from tests.support.skills import make_skill


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args)


@pytest.fixture
def cold(tmp_path: Path) -> tuple[Path, str]:
    """A workspace with a skill of its own and a user's, and a git market never staged."""
    ws = tmp_path / "ws"
    make_skill(ws / "skills", "local-one", description="A workspace skill.")
    make_skill(ws / "alice" / "skills", "mine", description="Alice's skill.")
    remote = GitRemote(tmp_path / "git")
    public_skill(remote.work / "skills", "report")
    remote.commit("add report")
    return ws, f"git+{remote.url}"


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["list", "--json"],
        ["prompt"],
        ["show", "report"],
        ["show", "report", "--path", "scripts/report.py"],
    ],
)
def test_read_only_commands_leave_a_cold_workspace_unchanged(cold: tuple[Path, str], command: list[str]) -> None:
    ws, market = cold
    before = tree_state(ws)
    result = _cli("skills", *command, "--workspace", str(ws), "--repo", market, "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert tree_state(ws) == before
    assert not (ws / ".skills-cache").exists()


def test_validate_leaves_the_folder_unchanged(cold: tuple[Path, str]) -> None:
    ws, _ = cold
    before = tree_state(ws)
    assert _cli("skills", "validate", str(ws / "skills")).returncode == 0
    assert tree_state(ws) == before


def test_list_reports_the_files_root_of_a_market_skill_not_staged_yet(cold: tuple[Path, str]) -> None:
    ws, market = cold
    data = json.loads(_cli("skills", "list", "--json", "--workspace", str(ws), "--repo", market).stdout)
    report = next(s for s in data["skills"] if s["name"] == "report")
    assert report["files_root"] == str(ws / ".skills-cache" / report["source"] / "report")
    assert report["staged"] is False
    text = _cli("skills", "list", "--workspace", str(ws), "--repo", market).stdout
    assert "not staged yet" in text


def test_list_after_stage_reports_the_market_skill_staged(cold: tuple[Path, str]) -> None:
    ws, market = cold
    assert _cli("skills", "stage", "--workspace", str(ws), "--repo", market).returncode == 0
    data = json.loads(_cli("skills", "list", "--json", "--workspace", str(ws), "--repo", market).stdout)
    assert next(s for s in data["skills"] if s["name"] == "report")["staged"] is True
    assert "not staged yet" not in _cli("skills", "list", "--workspace", str(ws), "--repo", market).stdout

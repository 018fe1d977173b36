"""``harness skills search``: the search_skills ranking from the command line, per user."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_harness
from tests.support.skills import make_skill


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    make_skill(ws / "skills", "pdf-forms", description="Fill in PDF forms.", extra="when_to_use: a tax form arrives\n")
    make_skill(ws / "skills", "slides", description="Build slide decks.")
    make_skill(ws / "alice" / "skills", "alice-taxes", description="Alice's own tax checklist.")
    return ws


def test_search_json_ranks_the_users_skills_by_query(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    result = _cli("skills", "search", "tax form", "--json", "--workspace", str(ws), "--user", "alice")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert {m["name"] for m in found} == {"pdf-forms", "alice-taxes"}
    assert set(found[0]) == {"name", "skill_id", "description", "files_root"}
    assert found[0]["files_root"] is not None


def test_search_does_not_show_another_users_skill(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    result = _cli("skills", "search", "tax", "--json", "--workspace", str(ws), "--user", "bob", "--limit", "5")
    assert result.returncode == 0, result.stderr
    assert [m["name"] for m in json.loads(result.stdout)] == ["pdf-forms"]


def test_search_text_output_says_when_nothing_matches(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    result = _cli("skills", "search", "zebra", "--workspace", str(ws))
    assert result.returncode == 0 and "no skill matches 'zebra'" in result.stdout

"""``harness engine run NAME`` finds the workflow skill in the merged layers (user layer first)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.cli import run_harness

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "code-review"


def test_engine_run_resolves_a_skill_name_from_the_users_layer(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "alice" / "skills" / "code-review")
    result = run_harness(
        "engine", "run", "code-review", "--workspace", str(tmp_path), "--user", "alice", "--run-id", "r1", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_id"] == "r1"
    assert (tmp_path / "alice" / ".harness" / "runs" / "r1").is_dir()


def test_engine_run_unknown_name_is_an_error(tmp_path: Path) -> None:
    result = run_harness("engine", "run", "nope", "--workspace", str(tmp_path))
    assert result.returncode == 1 and "no skill named 'nope'" in result.stderr


def test_engine_run_refuses_a_name_whose_highest_copy_is_invalid(tmp_path: Path) -> None:
    release_notes = EXAMPLE.parent / "release-notes"
    shutil.copytree(release_notes, tmp_path / "skills" / "release-notes")
    broken = tmp_path / "alice" / "skills" / "release-notes"
    shutil.copytree(release_notes, broken)
    skill_md = broken / "SKILL.md"
    skill_md.write_text(
        "".join(line for line in skill_md.read_text().splitlines(True) if not line.startswith("description:"))
    )
    result = run_harness(
        "engine", "run", "release-notes", "--workspace", str(tmp_path), "--user", "alice", "--run-id", "r1"
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"the user copy at {skill_md} is invalid" in result.stderr
    assert "description" in result.stderr and "refusing to run the workspace copy" in result.stderr
    assert not (tmp_path / "alice" / ".harness" / "runs" / "r1").exists()

"""``harness engine run NAME`` finds the workflow skill in the merged layers (user layer first)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HARNESS = str(Path(sys.executable).with_name("harness"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "code-review"


def test_engine_run_resolves_a_skill_name_from_the_users_layer(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "alice" / "skills" / "code-review")
    result = subprocess.run(
        [
            HARNESS,
            "engine",
            "run",
            "code-review",
            "--workspace",
            str(tmp_path),
            "--user",
            "alice",
            "--run-id",
            "r1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_id"] == "r1"
    assert (tmp_path / "alice" / ".harness" / "runs" / "r1").is_dir()


def test_engine_run_unknown_name_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [HARNESS, "engine", "run", "nope", "--workspace", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "no skill named 'nope'" in result.stderr

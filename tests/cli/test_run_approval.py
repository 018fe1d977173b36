"""``harness run`` puts the calls the configured approval policy asks about to the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_harness


def _workspace(tmp_path: Path) -> Path:
    skill = tmp_path / "ws" / "skills" / "weather"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: weather\ndescription: Use when the user asks about the weather forecast.\n---\n"
        "Run `python3 scripts/forecast.py` and report it.\n"
    )
    (skill / "scripts" / "forecast.py").write_text("open('forecast-ran', 'w').write('x')\nprint('sunny')\n")
    config = tmp_path / "harness.yaml"
    config.write_text("workspace: ws\nmodel: demo\napproval:\n  default: ask\n")
    return config


@pytest.mark.parametrize(("answer", "ran"), [("y\n", True), ("n\n", False), ("", False)])
def test_run_asks_on_the_terminal_before_a_gated_command(tmp_path: Path, answer: str, ran: bool) -> None:
    config = _workspace(tmp_path)
    result = run_harness(
        "run", "what is the weather forecast?", "--config", str(config), "--user", "alice", "-v", input=answer
    )
    assert result.returncode == 0, result.stderr
    assert "[approval]" in result.stderr and "forecast.py" in result.stderr and "Allow? [y/N]" in result.stderr
    assert (tmp_path / "ws" / "alice" / "forecast-ran").exists() is ran
    assert "ApprovalDecided" in result.stdout and ("allowed=True" in result.stdout) is ran

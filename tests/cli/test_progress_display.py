"""Long work on a terminal: one updating line on stderr, and none when piped or with ``--json``."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.support.skills import make_skill

HARNESS = str(Path(sys.executable).with_name("harness"))


def _stage_command(tmp_path: Path, *extra: str) -> list[str]:
    market = tmp_path / "market"
    for i in range(30):
        make_skill(market, f"s{i:02d}", files={"scripts/run.py": f"print({i})\n"})
    (tmp_path / "ws").mkdir()  # an existing workspace: the terminal gets the progress line only
    return [HARNESS, "skills", "stage", "--workspace", str(tmp_path / "ws"), "--repo", str(market), *extra]


def _on_a_terminal(command: list[str]) -> tuple[int, str, str]:
    """Run ``command`` with stderr on a pseudo-terminal; its exit code, stdout and what the terminal got."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        terminal = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the last writer closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        stdout, _ = process.communicate(timeout=120)
    finally:
        os.close(leader)
    return process.returncode, stdout, terminal.decode()


def test_staging_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    code, stdout, terminal = _on_a_terminal(_stage_command(tmp_path))
    assert code == 0, terminal
    assert stdout.strip() == "written 60, unchanged 0, removed 0"
    assert "\r\x1b[2Kstaging " in terminal and ": 0/60 files" in terminal
    assert terminal.endswith("\r\x1b[2K")  # the line is cleared when the work is done


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    result = subprocess.run(_stage_command(tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "written 60, unchanged 0, removed 0"
    assert "staging" not in result.stderr and "\r" not in result.stderr


def test_no_progress_with_json_even_on_a_terminal(tmp_path: Path) -> None:
    code, stdout, terminal = _on_a_terminal(_stage_command(tmp_path, "--json"))
    assert code == 0, terminal
    assert '"written": 60' in stdout and "staging" not in terminal

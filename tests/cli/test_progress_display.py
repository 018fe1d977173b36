"""Long work on a terminal: one updating line on stderr, and none when piped or with ``--json``."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from filesystems import Progress
from harness.cli.progress import TerminalProgress
from tests.support.cli import harness_command, on_a_terminal
from tests.support.git import GitRemote
from tests.support.skills import make_skill


def _stage_command(tmp_path: Path, *extra: str) -> list[str]:
    market = tmp_path / "market"
    for i in range(30):
        make_skill(market, f"s{i:02d}", files={"scripts/run.py": f"print({i})\n"})
    (tmp_path / "ws").mkdir()  # an existing workspace: the terminal gets the progress line only
    return [harness_command(), "skills", "stage", "--workspace", str(tmp_path / "ws"), "--repo", str(market), *extra]


def _git_stage_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    """Staging a git market's skills into a fresh workspace, its clone in a fresh cache; and the URL."""
    remote = GitRemote(tmp_path / "remote")
    for i in range(30):
        make_skill(remote.work / "skills", f"s{i:02d}", files={"scripts/run.py": f"print({i})\n"})
    remote.commit("skills")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "ws").mkdir()  # an existing workspace: the terminal gets the progress lines only
    market = f"git+{remote.url}"
    return [harness_command(), "skills", "stage", "--workspace", str(tmp_path / "ws"), "--repo", market], remote.url


def test_staging_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    code, stdout, terminal = on_a_terminal(_stage_command(tmp_path))
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
    code, stdout, terminal = on_a_terminal(_stage_command(tmp_path, "--json"))
    assert code == 0, terminal
    assert '"written": 60' in stdout and "staging" not in terminal


def test_a_git_markets_first_clone_shows_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, url = _git_stage_command(tmp_path, monkeypatch)
    code, stdout, terminal = on_a_terminal(command)
    assert code == 0, terminal
    assert stdout.strip() == "written 60, unchanged 0, removed 0"
    assert f"\r\x1b[2Kcloning {url}: 0 objects" in terminal
    assert terminal.endswith("\r\x1b[2K")
    code, _, again = on_a_terminal(command)  # the clone is current: nothing to fetch, nothing to show
    assert code == 0 and "cloning" not in again


def test_no_clone_progress_when_stderr_is_not_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    command, _ = _git_stage_command(tmp_path, monkeypatch)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cloning" not in result.stderr and "\r" not in result.stderr


def test_a_command_waiting_for_its_skills_environment_is_one_line_that_goes_when_the_wait_ends() -> None:
    # What `harness run` and `harness chat` show on a terminal while a command waits for a build.
    screen = io.StringIO()
    show = TerminalProgress(screen)
    for seconds in (0, 1, 2):
        show(Progress(task="waiting for environment", done=seconds, total=600, unit="s", subject="pdf_git-acme"))
    show(Progress(task="waiting for environment", done=2, total=600, unit="s", subject="pdf_git-acme", final=True))
    clear = "\r\x1b[2K"
    lines = screen.getvalue().split(clear)
    assert lines == ["", *(f"waiting for environment pdf_git-acme: {s}/600 s" for s in (0, 1, 2)), ""]

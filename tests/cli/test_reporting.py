"""How the ``harness`` command reports: a line for an empty result, a word when it creates a
folder, a quiet exit when the reader closes the pipe, one report per problem, the log level from
``--log-level`` or ``HARNESS_LOG_LEVEL``, and clear refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import HARNESS, run_harness
from tests.support.skills import make_skill

DEAD_MARKET = "git+https://127.0.0.1:9/nowhere.git"


def _harness(*argv: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*argv, cwd=cwd, env={**os.environ, **env})


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["skills", "list"], "no skills found for user cli in the workspace "),
        (["skills", "drafts"], "no drafts and no pending reviews in the workspace "),
        (["skills", "audit", "--day", "2025-01-02"], "no audit records on 2025-01-02 (UTC) in the workspace "),
        (["skills", "curate", "--reports"], "no curator or umbrella reports yet"),
    ],
)
def test_an_empty_result_says_so(tmp_path: Path, argv: list[str], line: str) -> None:
    result = _harness(*argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(line), result.stdout
    assert not (tmp_path / "workspace").exists()


def test_run_in_an_empty_folder_says_it_created_the_workspace(tmp_path: Path) -> None:
    first = _harness("run", "hello", "--model", "demo", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "workspace").is_dir()
    assert f"harness: created the workspace folder {tmp_path / 'workspace'}" in first.stderr
    again = _harness("run", "hello", "--model", "demo", cwd=tmp_path)
    assert again.returncode == 0 and "created" not in again.stderr


def test_run_help_says_what_it_creates() -> None:
    assert "a folder that does not exist yet is created" in " ".join(_harness("run", "--help").stdout.split())


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    for index in range(300):
        make_skill(tmp_path / "ws" / "skills", f"skill-{index:03}", description=f"Skill {index} does a thing.")
    pipeline = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {HARNESS} skills list --workspace ws | head -1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert pipeline.stdout.startswith("skill-000")
    assert pipeline.returncode in (0, 141) and pipeline.stderr == ""


def test_a_failed_market_is_reported_once(tmp_path: Path) -> None:
    result = _harness("skills", "list", "--repo", DEAD_MARKET, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.count("is unavailable") == 1 and "[market-unavailable]" in result.stdout
    assert "is unavailable" not in result.stderr


def test_a_command_that_prints_no_diagnostics_reports_the_failed_market_on_stderr_once(tmp_path: Path) -> None:
    result = _harness("skills", "prompt", "--repo", DEAD_MARKET, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("is unavailable") == 1 and "[market-unavailable]" in result.stderr
    assert "is unavailable" not in result.stdout


def test_the_log_level_shows_the_pipelines_records(tmp_path: Path) -> None:
    quiet = _harness("run", "hi", "--model", "demo", "--repo", DEAD_MARKET, cwd=tmp_path)
    assert "harness: WARNING: harness.pipeline.layers: market" in quiet.stderr
    for loud in (
        _harness("--log-level", "info", "skills", "list", "--repo", DEAD_MARKET, cwd=tmp_path),
        _harness("skills", "list", "--repo", DEAD_MARKET, cwd=tmp_path, HARNESS_LOG_LEVEL="info"),
    ):
        assert "harness: WARNING: harness.pipeline.layers: market" in loud.stderr
    silent = _harness("--log-level", "error", "run", "hi", "--model", "demo", "--repo", DEAD_MARKET, cwd=tmp_path)
    assert "WARNING" not in silent.stderr


def test_an_unknown_log_level_in_the_environment_is_a_configuration_error(tmp_path: Path) -> None:
    result = _harness("skills", "list", cwd=tmp_path, HARNESS_LOG_LEVEL="loud")
    assert result.returncode == 2
    assert "HARNESS_LOG_LEVEL='loud' is not a log level; use one of debug, info, warning, error" in result.stderr


def test_the_help_names_the_loggers() -> None:
    text = " ".join(_harness("--help").stdout.split())
    assert "loggers harness, repositories, filesystems" in text and "HARNESS_LOG_LEVEL" in text


def test_mcp_serve_over_stdio_requires_a_user(tmp_path: Path) -> None:
    result = _harness("mcp", "serve", "--workspace", str(tmp_path))
    assert result.returncode == 2
    assert "harness mcp serve over stdio needs --user ID" in result.stderr


_WITHOUT_MCP = """
import sys
sys.modules["mcp"] = None  # as if the extra were not installed
import harness.cli
raise SystemExit(harness.cli.main(["mcp", "serve", "--user", "alice", "--workspace", sys.argv[1]]))
"""


def test_a_missing_extra_is_named_once(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_MCP, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert result.stderr.count("agent-skill-harness[mcp]") == 1, result.stderr

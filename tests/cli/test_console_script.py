"""Every ``harness`` command through the real console script, side by side with the forked run
the other CLI tests use (``tests.support.cli``): the same exit code, stdout and stderr and the
same files left behind (times aside); ``harness mcp serve`` answers the same over stdio.
``harness demo`` runs through the real console script in ``test_demo.py``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.skills_compat.layouts import public_skill
from tests.support.cli import HARNESS, harness_command, run_harness
from tests.support.git import GitRemote
from tests.support.mcp import CODE, call
from tests.support.reliability import tree_state
from tests.support.skills import make_skill

pytestmark = pytest.mark.slow  # each case starts a fresh interpreter, which is the point

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "change-proposal"
WS = ("--workspace", "ws", "--user", "alice")

# Each case: the commands run one after the other in a fresh folder ({market} is a git market).
CASES: dict[str, list[list[str]]] = {
    "skills validate": [["skills", "validate", "ws/skills"]],
    "skills list": [["skills", "list", *WS, "--repo", "{market}"], ["skills", "list", "--json", *WS]],
    "skills search": [["skills", "search", "report", *WS, "--repo", "{market}", "--json"]],
    "skills prompt": [["skills", "prompt", *WS, "--repo", "{market}"]],
    "skills stage": [["skills", "stage", "--workspace", "ws", "--repo", "{market}", "--json"]],
    "skills show": [["skills", "show", "report", *WS, "--repo", "{market}", "--path", "scripts/report.py"]],
    "skills add": [["skills", "add", "{market}", "report", *WS, "--json"], ["skills", "add", "{market}", "nope", *WS]],
    "skills env": [["skills", "env", *WS]],
    "skills drafts, promote, review, audit, curate": [
        ["skills", "drafts", *WS, "--json"],
        ["skills", "promote", "nope", "--reviewer", "ops", *WS],
        ["skills", "review", "r-1", "--reviewer", "ops", "--approve", *WS],
        ["skills", "audit", *WS, "--json"],
        ["skills", "curate", "--dry-run", *WS, "--json"],
    ],
    "market publish": [["market", "publish", "ws/skills/local-one", "--repo", "{market}"]],
    "run": [["run", "hello", "--config", "harness.yaml", "--user", "alice"]],
    "engine": [
        ["engine", "run", str(EXAMPLE), "--run-id", "p1", "--input", "change=cache", "--json", *WS],
        ["engine", "show", "--run-id", "p1", *WS],
        ["engine", "continue", "--run-id", "p1", "--status", "failed", "--summary", "no", "--json", *WS],
        ["engine", "check", "--run-id", "p1", *WS],
        ["engine", "upgrade", "--run-id", "p1", "change-proposal", *WS],
        ["engine", "cancel", "--run-id", "p1", "--reason", "done", *WS],
    ],
}


def _fresh(folder: Path) -> str:
    """An empty ``folder`` with a workspace, a config and a git market; returns the market."""
    shutil.rmtree(folder, ignore_errors=True)
    make_skill(folder / "ws" / "skills", "local-one", description="A workspace skill.")
    make_skill(folder / "ws" / "alice" / "skills", "mine", description="Alice's skill.")
    (folder / "harness.yaml").write_text("workspace: ws\nmodel: demo\n")
    remote = GitRemote(folder / "git")
    public_skill(remote.work / "skills", "report")
    remote.commit("add report")
    return f"git+{remote.url}"


# What differs from one run to the next: times, and the lease files named for their process.
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _outcome(results: list[subprocess.CompletedProcess[str]], ws: Path) -> tuple[list[tuple[int, str, str]], list[str]]:
    said = [(r.returncode, _TIME.sub("<time>", r.stdout), _TIME.sub("<time>", r.stderr)) for r in results]
    return said, sorted(tree_state(ws, skip=[".skills-cache/.leases/"]))


def _real(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HARNESS, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", CASES)
def test_the_console_script_and_the_forked_run_agree(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "run"
    env = {
        **{k: v for k, v in os.environ.items() if k in {"PATH", "PYTHONPATH", "LANG", "LC_ALL"}},
        "HOME": str(folder / "home"),
        "XDG_CACHE_HOME": str(folder / "cache"),
    }
    outcomes = []
    for run in (_real, run_harness):
        market = _fresh(folder)
        results = [run(*(a.format(market=market) for a in argv), cwd=folder, env=env) for argv in CASES[case]]
        outcomes.append(_outcome(results, folder / "ws"))
    real, forked = outcomes
    assert forked == real


async def test_mcp_serve_answers_the_same_through_the_console_script(tmp_path: Path) -> None:
    make_skill(tmp_path / "ws" / "skills", "shared", description="For everyone.")
    make_skill(tmp_path / "ws" / "alice" / "skills", "alpha", description="Alice's skill.")
    argv = ["mcp", "serve", "--workspace", str(tmp_path / "ws"), "--user", "alice"]
    listings = []
    for command in (HARNESS, harness_command()):
        async with Client(StdioServerParameters(command=command, args=argv, env=CODE), cache=None) as client:
            listings.append(await call(client, "skills/list"))
    real, forked = listings
    assert forked == real
    assert sorted(skill["frontmatter"]["name"] for skill in real["skills"]) == ["alpha", "shared"]

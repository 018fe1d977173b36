"""A market that writes escape sequences into a skill: every text command of ``harness skills``
shows them escaped, so they can neither clear nor rewrite what the operator reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_harness

HOSTILE = "Clears the screen\x1b[2J\x1b]0;owned\x07 and hides\x9b31m this\u202e."


@pytest.fixture
def market(tmp_path: Path) -> Path:
    skill = tmp_path / "market" / "tricky"
    skill.mkdir(parents=True)
    # YAML's double-quoted escapes put the raw control characters into the parsed description.
    described = r'"Clears the screen\e[2J\e]0;owned\a and hides\x9b31m this\u202e."'
    (skill / "SKILL.md").write_text(f"---\nname: tricky\ndescription: {described}\n---\nBody {HOSTILE}\n")
    return tmp_path / "market"


@pytest.mark.parametrize(
    "command",
    [["list"], ["show", "tricky"], ["prompt"], ["search", "screen"]],
    ids=["list", "show", "prompt", "search"],
)
def test_skill_text_reaches_the_terminal_escaped(tmp_path: Path, market: Path, command: list[str]) -> None:
    done = run_harness("skills", *command, "--workspace", str(tmp_path / "ws"), "--repo", f"dir:{market}")
    assert done.returncode == 0, done.stderr
    assert "Clears the screen" in done.stdout or "tricky" in done.stdout
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in done.stdout + done.stderr

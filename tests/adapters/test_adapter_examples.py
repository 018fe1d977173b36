"""The adapter examples under examples/, each run as a subprocess with its framework's offline
model, forked from the preloaded test process (``tests.support.cli.run_python``; the examples of
``tests/test_examples.py`` start fresh interpreters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_python
from tests.test_examples import EXAMPLES


def _printed(name: str, *args: str) -> str:
    """What the example printed; it must succeed."""
    done = run_python(EXAMPLES / name, *args)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


SEEN = ("alice sees: csv-summary, hello-world", "bob sees: bob-diary, csv-summary, hello-world")


@pytest.mark.parametrize("script", ["openai_agents_skills.py", "pydantic_ai_skills.py"])
def test_the_agent_runs_the_market_skill_for_alice_and_only_bob_sees_his_own(script: str, tmp_path: Path) -> None:
    out = _printed(script, str(tmp_path))
    assert "alice's reply: Hello, Alice! The hello-world skill ran." in out
    assert all(line in out for line in SEEN)


def test_the_deep_agent_reads_the_skill_and_cannot_overwrite_it(tmp_path: Path) -> None:
    out = _printed("deepagents_skills.py", str(tmp_path))
    assert all(line in out for line in SEEN)
    assert "alice read /skills/hello-world/SKILL.md: # Hello world" in out
    assert "alice's write was refused: skill files are read-only" in out
    assert "overwritten" not in (EXAMPLES / "skills" / "hello-world" / "SKILL.md").read_text()

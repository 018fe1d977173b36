"""What a first run in Python says when nothing is set up yet: a missing global folder is
logged (not only a diagnostic of each turn), and a ``/skill:`` command with no skills at all
says so instead of an empty list."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness import Harness, PipelineOptions, RuntimeContext

ALICE = RuntimeContext(user_id="alice")


async def test_a_missing_global_folder_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "no-such-folder"
    with caplog.at_level(logging.WARNING, logger="harness"):
        async with Harness(
            workspace=tmp_path / "ws", pipeline=PipelineOptions(global_skills_dir=missing, watch=False)
        ) as agent:
            await agent.run("hello", context=ALICE)
            await agent.run("hello again", context=ALICE)
    said = [r for r in caplog.records if str(missing) in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    assert "global_skills_dir" in said[0].getMessage()


async def test_a_skill_command_with_no_skills_says_none_are_available(tmp_path: Path) -> None:
    async with Harness(workspace=tmp_path / "ws", pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:csv-summary data.csv", context=ALICE)
    assert result.reply.startswith("no skill named 'csv-summary'; no skills are available to this user")
    assert not result.reply.rstrip().endswith(":")

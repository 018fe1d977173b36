"""``harness skills curate --watch|--umbrella|--reports``: the CLI's main() and a real process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.cli import main
from harness.context import RuntimeContext
from harness.learning import SelfLearning
from tests.support.polling import eventually

SKILLS = {
    "deploy-web": "Deploy the web service to production with docker compose.",
    "deploy-api": "Deploy the api service to production with docker compose.",
    "tidy": "Sort the downloads folder by file type.",
}


async def _agent_skills(root: Path, *, days_ago: float = 0) -> None:
    moment = datetime.now(UTC) - timedelta(days=days_ago)
    async with LocalFilesystem(root) as fs:
        shop = SelfLearning(fs, auto_promote=True, clock=lambda: moment).workshop(RuntimeContext(user_id="alice"))
        for name, description in SKILLS.items():
            await shop.propose_skill(name, description, f"How to {name}.")


def test_umbrella_writes_a_dry_run_report_that_reports_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_agent_skills(tmp_path))
    assert main(["skills", "curate", "--umbrella", "--workspace", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["members"] for p in report["proposals"]] == [["deploy-api", "deploy-web"]]
    assert report["dry_run"] is True and (tmp_path / report["path"]).is_file()
    assert (tmp_path / "alice" / "skills" / "deploy-web" / "SKILL.md").is_file()

    assert main(["skills", "curate", "--workspace", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["skills", "curate", "--reports", "--workspace", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [entry["kind"] for entry in listed] == ["umbrella", "curator"]
    assert listed[0]["path"] == report["path"]


def test_reports_and_watch_do_not_mix(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["skills", "curate", "--reports", "--watch", "--workspace", str(tmp_path)])


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
async def test_watch_curates_until_a_signal_stops_it_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    await _agent_skills(tmp_path, days_ago=120)
    (tmp_path / "harness.yaml").write_text(
        f"workspace: {tmp_path}\ncurator:\n  interval_hours: 1\n  umbrella_review: true\n"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "skills",
            "curate",
            "--watch",
            "--config",
            str(tmp_path / "harness.yaml"),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        reports = tmp_path / "skills" / ".audit" / "reports"

        async def written() -> list[str]:
            return sorted(p.name for p in reports.glob("*.json")) if reports.is_dir() else []

        await eventually(written, lambda names: len(names) >= 2, within=60, what="the curator and umbrella reports")
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    result = json.loads(out)
    assert result["stopped_by"] == stop.name
    assert result["runs"][0]["ran"] is True
    assert {t["name"] for t in result["runs"][0]["transitions"]} == set(SKILLS)
    assert len(result["umbrella_reports"]) == 1
    assert not (tmp_path / "alice" / "skills" / "tidy").exists()
    assert "Traceback" not in err

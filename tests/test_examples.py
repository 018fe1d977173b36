"""The runnable scripts under examples/, each run as a real subprocess with the offline model."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.filesystems import shared_dir

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str, env: dict[str, str] | None = None) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert completed.returncode == 0, f"{name} failed:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A 0755 folder the sandbox's unprivileged uid can traverse (pytest's tmp_path is 0700)."""
    with shared_dir("harness-examples-") as path:
        yield path


def test_quickstart_runs_the_hello_world_script(tmp_path: Path) -> None:
    out = run_example("quickstart.py", str(tmp_path))
    assert "Used the hello-world skill" in out
    assert "The hello-world skill ran." in out
    assert (tmp_path / "workspace" / "skills" / "csv-summary" / "SKILL.md").is_file()


def test_quickstart_without_workdir_uses_a_temporary_folder() -> None:
    assert "The hello-world skill ran." in run_example("quickstart.py")


def test_git_and_mysql_markets_serve_one_skill_each(tmp_path: Path, mysql_dsn: str) -> None:
    out = run_example("git_and_mysql_markets.py", str(tmp_path), env={"HARNESS_MYSQL_DSN": mysql_dsn})
    assert "Forecast from the git market: sunny, 21 C" in out
    assert "10 km = 6.21 miles (from the MySQL market)" in out
    table = next(word for word in out.split() if word.startswith("mysql-")).rstrip(",").split("-", 2)[2]
    assert table.startswith("example_skills_")
    assert not _tables_like(mysql_dsn, table), "the example left its tables behind"


def test_sandboxed_bot_gives_each_user_their_own_catalog(open_dir: Path, bwrap: str) -> None:
    out = run_example("sandboxed_bot.py", str(open_dir))
    assert "== alice sees: csv-summary, hello-world, trip-planner" in out
    assert "== bob sees: csv-summary, dinner-ideas, hello-world" in out
    assert "Itinerary: day 1 museum, day 2 hike (for alice)" in out
    assert "Dinner idea: lentil soup with bread (for bob)" in out
    assert "python3 /workspace/skills/" in out


def test_custom_repository_serves_a_skill_from_a_dict(tmp_path: Path) -> None:
    out = run_example("custom_repository.py", str(tmp_path))
    assert "Used the fortune skill" in out
    assert "Fortune from the dict market: a clean diff brings good luck." in out


def test_custom_tool_is_called_by_the_scripted_model(tmp_path: Path) -> None:
    out = run_example("custom_tool.py", str(tmp_path))
    assert "celsius_to_fahrenheit" in out.splitlines()[0]
    assert "[tool] celsius_to_fahrenheit -> 70.7 F" in out
    assert "reply: 21.5 C is 70.7 F." in out


def _tables_like(dsn: str, table: str) -> list[str]:
    import pymysql

    from repositories.mysql import parse_mysql_dsn

    params = parse_mysql_dsn(dsn)
    params["database"] = params.pop("db")
    connection = pymysql.connect(**params)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW TABLES LIKE %s", (table + "%",))
            return [row[0] for row in cursor.fetchall()]
    finally:
        connection.close()

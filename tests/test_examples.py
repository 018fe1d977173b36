"""The runnable scripts under examples/, each run as a process of its own with the offline model:
forked with the harness already imported (``tests.support.cli``), the quick start in a fresh
interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import python_command
from tests.support.filesystems import shared_dir

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str, env: dict[str, str] | None = None, fresh: bool = False) -> str:
    script = EXAMPLES / name
    completed = subprocess.run(
        [sys.executable, str(script), *args] if fresh else [*python_command(script), *args],
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
    out = run_example("quickstart.py", str(tmp_path), fresh=True)
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


def test_streaming_agui_prints_sse_lines_with_the_subagents_text_attributed(tmp_path: Path) -> None:
    out = run_example("streaming_agui.py", str(tmp_path))
    events = [json.loads(line.removeprefix("data: ")) for line in out.splitlines() if line.startswith("data: ")]
    types = [e["type"] for e in events]
    assert types.count("RUN_STARTED") == 2 and types.count("RUN_FINISHED") == 2
    assert "The hello-world skill ran." in "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    start, end = types.index("SUBAGENT_STARTED"), types.index("SUBAGENT_FINISHED")
    subagent = events[start]["subagentRunId"]
    assert events[start]["name"] == "researcher"
    inside = events[start + 1 : end]
    assert inside and all(e["subagentRunId"] == subagent for e in inside)
    assert "high tide 06:12" in "".join(e.get("delta", "") for e in inside if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert not any("subagentRunId" in e for e in events[:start])


@pytest.mark.parametrize(
    ("example", "package", "message"),
    [
        ("streaming_agui.py", "ag_ui", "skipped: this example needs the 'ag-ui-protocol' package"),
        ("tracing.py", "opentelemetry", "skipped: this example needs the OpenTelemetry SDK"),
    ],
)
def test_optional_examples_skip_cleanly_without_their_package(
    tmp_path: Path, example: str, package: str, message: str
) -> None:
    hidden = tmp_path / "hidden"  # a module that shadows the installed package and fails to import
    hidden.mkdir()
    (hidden / f"{package}.py").write_text(f"raise ImportError('{package} is not installed here')\n")
    # A fresh interpreter: the forked ones have the optional packages imported already.
    out = run_example(example, str(tmp_path / "work"), env={"PYTHONPATH": str(hidden)}, fresh=True)
    assert out.startswith(message)


def test_tracing_prints_the_span_tree_of_a_turn_that_loads_a_skill(tmp_path: Path) -> None:
    out = run_example("tracing.py", str(tmp_path))
    lines = out.splitlines()
    assert lines[0].startswith("reply: Used the hello-world skill")
    tree = [line.split("  [")[0] for line in lines[1:]]
    assert tree[0] == "invoke_agent traced"
    assert {"  harness.turn.prepare", "  chat demo", "  execute_tool load_skill_through_path"} <= set(tree)
    (load,) = [line for line in lines if "execute_tool load_skill_through_path" in line]
    assert "gen_ai.skill.name=hello-world" in load


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

"""What every ``harness`` command offers a newcomer: a version, help on every option, ``--json``
on every command that prints a result, and a subcommand's own usage on a wrong option."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import harness
from harness.cli import build_parser
from tests.support.cli import HARNESS, run_harness
from tests.support.skills import make_skill

# Commands that print no result to read back: the demo narrates, the chat talks, the server serves.
NO_RESULT = {"harness demo", "harness chat", "harness mcp serve"}


def _harness(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_harness(*argv, cwd=cwd)


def _commands(parser: argparse.ArgumentParser, path: str = "harness") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser, the top-level one included, with the command line that reaches it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def _is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(action, argparse._SubParsersAction) for action in parser._actions)


def test_version_prints_the_package_version() -> None:
    result = subprocess.run([HARNESS, "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"harness {harness.__version__}"
    assert harness.__version__ and harness.__version__ != "0+unknown"


def test_the_version_is_the_installed_distributions() -> None:
    # harness/_version.py is where pyproject.toml reads it from: an install records that string.
    assert harness.__version__ == importlib.metadata.version("agent-skill-harness")


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, parser in _commands(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert missing == []


def test_every_command_that_prints_a_result_takes_json() -> None:
    leaves = [(path, parser) for path, parser in _commands(build_parser()) if _is_leaf(parser)]
    without = [path for path, parser in leaves if "--json" not in parser._option_string_actions]
    assert sorted(without) == sorted(NO_RESULT)


def test_a_wrong_option_shows_the_subcommands_usage() -> None:
    result = _harness("skills", "list", "--bogus")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: harness skills list ")
    assert "harness skills list: error: unrecognized arguments: --bogus" in result.stderr


def test_a_wrong_option_of_a_command_group_shows_the_groups_usage() -> None:
    result = _harness("engine", "show", "--run-id", "x", "--nope")
    assert result.returncode == 2
    assert "usage: harness engine show " in result.stderr and "harness engine show: error:" in result.stderr


def test_skills_show_json_returns_the_page(tmp_path: Path) -> None:
    make_skill(tmp_path / "ws" / "skills", "alpha", description="Alpha does things.")
    result = _harness("skills", "show", "alpha", "--workspace", str(tmp_path / "ws"), "--json", "--limit", "2")
    assert result.returncode == 0, result.stderr
    page = json.loads(result.stdout)
    assert page["name"] == "alpha" and page["path"] == "SKILL.md" and page["limit"] == 2
    assert page["text"].startswith("---\nname: alpha\n")


def test_skills_prompt_json_returns_the_catalog(tmp_path: Path) -> None:
    make_skill(tmp_path / "ws" / "skills", "alpha", description="Alpha does things.")
    result = _harness("skills", "prompt", "--workspace", str(tmp_path / "ws"), "--json")
    assert result.returncode == 0, result.stderr
    prompt = json.loads(result.stdout)
    text = _harness("skills", "prompt", "--workspace", str(tmp_path / "ws")).stdout
    assert prompt["catalog"] + "\n" == text and "Alpha does things." in prompt["catalog"]
    assert prompt["skills"] == ["alpha_workspace"] and prompt["diagnostics"] == []


def test_run_json_returns_the_reply(tmp_path: Path) -> None:
    result = _harness("run", "hello", "--model", "demo", "--workspace", str(tmp_path / "ws"), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["user"] == "cli" and document["reply"] and document["events"] == []


def test_skills_add_json_says_where_the_skill_went(tmp_path: Path) -> None:
    make_skill(tmp_path / "market", "alpha", description="Alpha does things.")
    ws = tmp_path / "ws"
    result = _harness("skills", "add", f"dir:{tmp_path / 'market'}", "alpha", "--workspace", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["to"] == str(ws / "skills" / "alpha")

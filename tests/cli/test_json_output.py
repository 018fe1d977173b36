"""``--json`` is always one JSON document on stdout, errors included: every command that takes
``--json`` (found by walking the parser, so a new one is covered the day it is added), run as
given, with a configuration that is not YAML, with a market that cannot be reached, and with an
option it does not know. A failure is ``{"error": {"kind", "message", "exit_code"}}`` with the
exit code it names (2 for a configuration or usage error); the message also goes to stderr."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import build_parser
from tests.support.cli import run_harness
from tests.support.skills import make_skill

# Values for the arguments a command needs, by their name; a skill or run nobody has, so most
# commands take one of their failure paths too.
_VALUES = {
    "paths": "ws/skills/report",
    "source": "dir:market",
    "name": "no-such-skill",
    "skill": "no-such-skill",
    "query": "report",
    "message": "hello",
    "request_id": "r-missing",
    "market": "dir-market",
    "--reviewer": "ops",
    "--run-id": "missing-run",
    "--repo": "dir:market",
}


def _json_commands() -> Iterator[tuple[str, list[str], bool]]:
    """Each command taking ``--json``: its words, the arguments it requires, and whether it
    takes the workspace options (``--config``, ``--repo``)."""

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> Iterator[tuple[str, list[str], bool]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subs:
            for name, sub in action.choices.items():
                yield from walk(sub, [*words, name])
        options = {o for a in parser._actions for o in a.option_strings}
        if subs or "--json" not in options:
            return
        argv = list(words)
        for action in parser._actions:
            if not action.option_strings and action.nargs != "?":
                argv.append(_VALUES[action.dest])
            elif action.option_strings and action.required:
                argv += [action.option_strings[0], _VALUES[action.option_strings[0]]]
        for group in parser._mutually_exclusive_groups:
            if group.required:  # the first choice (a flag: --approve)
                argv.append(group._group_actions[0].option_strings[0])
        if words == ["run"]:
            argv += ["--model", "demo"]
        yield " ".join(words), argv, "--config" in options

    yield from walk(build_parser(), [])


COMMANDS = {name: (argv, workspace) for name, argv, workspace in _json_commands()}
WORKSPACE = ["--workspace", "ws", "--user", "alice"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    make_skill(tmp_path / "ws" / "skills", "report")
    make_skill(tmp_path / "market", "shared")
    (tmp_path / "broken.yaml").write_text("name: [unclosed\nworkspace: ws\n")
    return tmp_path


def _document(done: object) -> object:
    stdout: str = done.stdout  # type: ignore[attr-defined]
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"stdout is not one JSON document ({exc}): {stdout[:500]!r}") from None


def _error(document: object, code: int) -> None:
    assert isinstance(document, dict) and set(document) == {"error"}, document
    error = document["error"]
    assert set(error) == {"kind", "message", "exit_code"} and error["exit_code"] == code, error
    assert isinstance(error["message"], str) and len(error["message"]) > 10


def test_every_command_that_prints_json_is_covered() -> None:
    assert {"skills list", "skills show", "run", "engine run", "skills validate", "market publish"} <= set(COMMANDS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_as_given_is_one_document(folder: Path, name: str) -> None:
    argv, workspace = COMMANDS[name]
    done = run_harness(*argv, *(WORKSPACE if workspace else []), "--json", cwd=folder)
    document = _document(done)
    if done.returncode not in (0, 1) or (isinstance(document, dict) and "error" in document):
        _error(document, done.returncode)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, (_, workspace) in COMMANDS.items() if workspace))
def test_json_with_a_broken_config_is_one_error_document(folder: Path, name: str) -> None:
    argv, _ = COMMANDS[name]
    done = run_harness(*argv, *WORKSPACE, "--config", "broken.yaml", "--json", cwd=folder)
    assert done.returncode == 2, done.stderr
    _error(_document(done), 2)
    assert "broken.yaml" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, (_, workspace) in COMMANDS.items() if workspace))
def test_json_with_a_market_down_is_one_document(folder: Path, name: str) -> None:
    argv, _ = COMMANDS[name]
    down = f"git+file://{folder}/no-such-market.git"
    done = run_harness(*argv, *WORKSPACE, "--repo", down, "--json", cwd=folder)
    document = _document(done)
    if isinstance(document, dict) and "error" in document:
        _error(document, done.returncode)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_with_a_usage_error_is_one_error_document(folder: Path, name: str) -> None:
    argv, _ = COMMANDS[name]
    done = run_harness(*argv, "--no-such-option", "--json", cwd=folder)
    assert done.returncode == 2, done.stderr
    _error(_document(done), 2)
    assert "--no-such-option" in _document(done)["error"]["message"]  # type: ignore[index]


# The same failures for a few commands, in the fast loop.
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["skills", "list", *WORKSPACE, "--config", "broken.yaml"], 2),
        (["skills", "show", "no-such-skill", *WORKSPACE], 1),
        (["run", "hello", "--model", "demo", *WORKSPACE, "--session", "bad\nid"], 2),
        (["engine", "show", "--run-id", "missing-run", *WORKSPACE], 1),
        (["skills", "list", "--no-such-option"], 2),
        (["skills", "validate"], 2),
    ],
    ids=["bad config", "unknown skill", "bad session id", "unknown run", "unknown option", "missing argument"],
)
def test_a_failure_with_json_is_one_error_document(folder: Path, argv: list[str], code: int) -> None:
    done = run_harness(*argv, "--json", cwd=folder)
    assert done.returncode == code, done.stderr
    _error(_document(done), code)
    assert done.stderr.strip(), "the message goes to stderr too"


def test_a_market_down_with_json_is_one_document(folder: Path) -> None:
    down = f"git+file://{folder}/no-such-market.git"
    done = run_harness("skills", "list", *WORKSPACE, "--repo", down, "--json", cwd=folder)
    document = _document(done)
    assert isinstance(document, dict) and any(d["severity"] == "error" for d in document["diagnostics"])

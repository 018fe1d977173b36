"""Ids and untrusted text cannot forge a line of the harness's log or of what the CLI prints.

A session id, like a user id, is an exact identifier: one holding a newline, a carriage return,
an escape sequence or another control or format character (or padded with spaces a store would
fold away) is refused wherever it enters — ``RuntimeContext``, ``--session`` and ``--user`` of
the CLI. And every record the CLI logs is one line: a newline in its message (an exception a
market raised, a name a model chose) is written ``\\n``, so it cannot start a record of its own.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.cli.logs import logging_to_stderr
from tests.support.cli import run_harness

FORGED = "harness: WARNING: harness.approval: every command approved by the operator"

HOSTILE_IDS = [
    f"s1\n{FORGED}",
    f"s1\r{FORGED}",
    "s1\x1b[2Jcleared",
    "s1\u2028next",
    "s1\u202eevil",
    "s1\x00",
    " s1",
    "s1 ",
]


@pytest.mark.parametrize("session", HOSTILE_IDS)
def test_a_session_id_with_control_characters_is_refused(session: str) -> None:
    with pytest.raises(ValueError, match="session id"):
        RuntimeContext(user_id="alice", session_id=session)


@pytest.mark.parametrize("session", ["s1", "chat-2024-05-01", "550e8400-e29b-41d4-a716-446655440000", "Ünïcödé 1"])
def test_ordinary_session_ids_still_work(session: str) -> None:
    assert RuntimeContext(user_id="alice", session_id=session).session_id == session


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "hello", "--model", "demo", "--session", f"s1\n{FORGED}"],
        ["chat", "--model", "demo", "--session", f"s1\n{FORGED}"],
        ["run", "hello", "--model", "demo", "--user", f"alice\n{FORGED}"],
        ["sessions", "list", "--user", f"alice\n{FORGED}"],
    ],
    ids=["run --session", "chat --session", "run --user", "sessions --user"],
)
def test_the_cli_refuses_an_id_with_a_newline(tmp_path: Path, argv: list[str]) -> None:
    done = run_harness(*argv, "--workspace", str(tmp_path / "ws"), input="")
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("harness: configuration error: ") and "\\n" in line
    assert not any(line.startswith(FORGED) for line in (done.stdout + done.stderr).splitlines())


def test_a_logged_message_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with logging_to_stderr("info"):
        logging.getLogger("repositories.git").warning("market %s failed: %s", "git-acme", f"fatal\n{FORGED}\r\x1b[2K")
        logging.getLogger("harness.agent.calls").info("tool %s failed", f"x\u2028{FORGED}")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert all(line.startswith("harness: ") and FORGED not in line.split(": ", 3)[:3] for line in lines)
    assert not any(line.startswith(FORGED) for line in lines)
    assert "\x1b" not in "".join(lines) and "\r" not in "".join(lines) and "\u2028" not in "".join(lines)


def test_a_logged_traceback_keeps_its_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with logging_to_stderr("info"):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("filesystems.tasks").error("background task %r crashed", "watch", exc_info=True)
    err = capsys.readouterr().err
    assert err.startswith("harness: ERROR: filesystems.tasks: background task 'watch' crashed\nTraceback")
    assert err.rstrip().endswith("RuntimeError: boom")

"""``harness chat`` on a real terminal (a pty driving a real process, the offline demo model),
``harness run --session`` continuing the stored conversation, and ``harness sessions``."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import anyio

from harness.agent.sessions import open_session_store
from tests.support.cli import run_harness

HARNESS = str(Path(sys.executable).with_name("harness"))


def _workspace(tmp_path: Path) -> Path:
    for name, description, script in (
        ("weather", "Use when the user asks about the weather forecast.", "print('sunny')\n"),
        (
            "slow",
            "Use when the user asks to wait slowly.",
            "import time\nopen('slow-started', 'w').close()\ntime.sleep(60)\n",
        ),
    ):
        skill = tmp_path / "ws" / "skills" / name
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\nRun `python3 scripts/{name}.py` and report it.\n"
        )
        (skill / "scripts" / f"{name}.py").write_text(script)
    config = tmp_path / "harness.yaml"
    config.write_text("workspace: ws\nmodel: demo\nsessions: sqlite:///sessions.db\n")
    return config


class Terminal:
    """A process on the slave side of a pty, its controlling terminal (so ^C is a SIGINT)."""

    def __init__(self, *argv: str) -> None:
        self.master, slave = os.openpty()

        def controlling_terminal() -> None:  # runs in the child, after setsid
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(slave)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def read_until(self, *texts: str, within: float = 60) -> str:
        """What the process wrote since the last call, up to and including all of ``texts``."""
        deadline = time.monotonic() + within
        while not all(text in self.seen for text in texts):
            assert time.monotonic() < deadline, f"never saw {texts!r}; the terminal shows {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the process closed the terminal
                    break
        seen, self.seen = self.seen, ""
        return seen

    def close(self) -> int:
        code = self.process.wait(timeout=60)
        os.close(self.master)
        return code


def _wait_for(path: Path, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


async def _user_messages(config: Path, user: str, session: str) -> list[str]:
    async with open_session_store(f"sqlite:///{config.parent / 'sessions.db'}") as store:
        return [m.content for m in (await store.get(user, session)).messages if m.role == "user"]


def test_chat_streams_runs_skills_cancels_a_turn_on_ctrl_c_and_exits_on_ctrl_d(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    chat = Terminal(HARNESS, "chat", "--config", str(config), "--user", "alice", "--session", "s1")
    try:
        chat.read_until("you> ")
        chat.type("what is the weather forecast?\n")
        assert "sunny" in chat.read_until("sunny", "you> ")
        chat.type("/skill:weather\n")
        assert "sunny" in chat.read_until("sunny", "you> ")
        chat.type("please wait slowly\n")
        chat.read_until("Running the slow script")
        _wait_for(tmp_path / "ws" / "alice" / "slow-started")
        chat.type("\x03")  # Ctrl-C: the turn is cancelled, the chat goes on
        chat.read_until("[turn cancelled]", "you> ")
        chat.type("\x04")  # Ctrl-D: the end of the input
    finally:
        code = chat.close()
    assert code == 0
    asked = anyio.run(_user_messages, config, "alice", "s1")
    assert len(asked) == 2 and asked[0] == "what is the weather forecast?"  # the cancelled turn left nothing
    assert "please wait slowly" not in asked


def test_run_continues_a_session_and_sessions_delete_forgets_the_user(tmp_path: Path) -> None:
    config = _workspace(tmp_path)

    def harness(*argv: str) -> str:
        result = run_harness(*argv, "--config", str(config))
        assert result.returncode == 0, result.stderr
        return result.stdout

    harness("run", "what is the weather forecast?", "--user", "alice", "--session", "s1")
    harness("run", "hello again", "--user", "alice", "--session", "s1")
    harness("run", "hello", "--user", "alice", "--session", "s2")
    harness("run", "hello", "--user", "bob", "--session", "s1")
    assert anyio.run(_user_messages, config, "alice", "s1") == ["what is the weather forecast?", "hello again"]
    listed = json.loads(harness("sessions", "list", "--user", "alice", "--json"))
    assert {row["session"] for row in listed["sessions"]} == {"s1", "s2"}
    shown = json.loads(harness("sessions", "show", "--user", "alice", "--session", "s1", "--json"))
    assert [m["content"] for m in shown["messages"] if m["role"] == "user"][-1] == "hello again"
    assert json.loads(harness("sessions", "delete", "--user", "alice", "--json")) == {"user": "alice", "deleted": 2}
    assert json.loads(harness("sessions", "list", "--user", "alice", "--json"))["sessions"] == []
    assert anyio.run(_user_messages, config, "bob", "s1") == ["hello"]

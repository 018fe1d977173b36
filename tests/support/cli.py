"""``run_harness``: run a ``harness`` command in its own process, without paying for a fresh
interpreter each time; ``run_python`` does the same for a test's driver script.

Most CLI tests are about what a command prints, the exit code it returns and the files it
leaves, not about how the interpreter starts; yet a fresh ``harness`` process spends about half
a second importing the package before it does anything. Here a server process imports the CLI
once per test session and forks each command from it. The test starts a small launcher instead of
the console script (``harness_command()``, a stdlib-only script that starts in milliseconds):
the launcher hands its own stdin, stdout and stderr, its folder, environment and arguments to
the server and exits with the command's exit status. So each command runs in a process of its
own on exactly the pipes (or terminal) the test gave the launcher, the way the console script
would run it — ``sys.argv`` set, ``sys.exit(main())``, then the interpreter's exit steps
(non-daemon threads joined, ``atexit`` handlers, a last flush). A signal sent to the launcher is
passed on to the command; a killed launcher (a timeout) takes the command with it.

What a forked command cannot show is the interpreter's own start: ``python -X`` flags, what
``import harness`` loads, anything read at import. Tests of those run the real console script
(``HARNESS``); ``tests/cli/test_console_script.py`` compares the two on every command; and
``HARNESS_TEST_REAL_CLI=1`` makes ``run_harness`` and ``run_python`` start real processes.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import pty
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "HARNESS",
    "REAL_CLI_ENV",
    "harness_command",
    "on_a_terminal",
    "python_command",
    "run_harness",
    "run_python",
    "start_server",
]

HARNESS = str(Path(sys.executable).with_name("harness"))
REAL_CLI_ENV = "HARNESS_TEST_REAL_CLI"
# What the server imports before it forks a command: the CLI and what its commands use.
# Other optional integrations (model SDKs, Nacos, tracing) stay out, so a command loads them
# itself the way the console script would.
_PRELOAD = (
    "anyio._backends._asyncio",
    "harness.cli",
    "harness.cli.add",
    "harness.cli.agent",
    "harness.cli.demo",
    "harness.cli.engine",
    "harness.cli.environments",
    "harness.cli.learning",
    "harness.cli.market",
    "harness.cli.skills",
    "harness.agent",
    "harness.engine",
    "harness.pipeline",
    "repositories",
    "filesystems",
)
# The MCP server's own modules, when the extra is installed (``harness mcp serve``).
_PRELOAD_IF_INSTALLED = ("harness.mcp.server", "mcp", "uvicorn")
_ROOT = Path(__file__).resolve().parents[2]
# The launcher: stdlib only, started with -I -S so that it starts in milliseconds.
_LAUNCHER = """#!{python} -IS
import json, os, signal, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect({address!r})
request = {{"script": {script}, "argv": sys.argv[{first}:], "cwd": os.getcwd(), "env": dict(os.environ)}}
socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
replies = conn.makefile("rb")
pid = int(replies.readline())
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(number, lambda number, frame: os.kill(pid, number))
status = int(replies.readline())
if status < 0:  # end the way the command ended: by the same signal
    if -status != signal.SIGKILL:
        signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


def _real() -> bool:
    return os.environ.get(REAL_CLI_ENV, "").lower() in {"1", "true", "yes"}


def harness_command() -> str:
    """What to start instead of ``HARNESS`` for a command run forked (``HARNESS`` itself with
    ``HARNESS_TEST_REAL_CLI=1``)."""
    return HARNESS if _real() else _server().harness


def python_command(script: str | Path) -> list[str]:
    """What to start instead of ``[sys.executable, script]`` for a driver script run forked."""
    return [sys.executable, str(script)] if _real() else [_server().python, str(script)]


def run_harness(
    *argv: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([HARNESS, *argv], capture_output=True, text=True, ...)`` with the command
    forked from the server."""
    return subprocess.run(
        [harness_command(), *argv], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout
    )


def on_a_terminal(command: list[str]) -> tuple[int, str, str]:
    """Run ``command`` with stderr on a pseudo-terminal; its exit code, stdout and what the terminal got."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        terminal = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the last writer closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        stdout, _ = process.communicate(timeout=120)
    finally:
        os.close(leader)
    return process.returncode, stdout, terminal.decode()


def run_python(
    script: str | Path,
    *argv: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, script, *argv], capture_output=True, text=True, ...)``
    with the script run in a process forked from the server (``sys.path[0]`` is the script's
    folder, as the interpreter sets it)."""
    return subprocess.run(
        [*python_command(script), *argv], cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout
    )


class _Server:
    """The server process and its two launchers; stopped when this process exits. It starts
    importing at once; :meth:`wait_ready` waits until it has."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="harness-cli-")
        address = os.path.join(self.folder, "socket")
        self.harness = self._launcher("harness", address, script="None", first=1)
        self.python = self._launcher("python", address, script="sys.argv[1]", first=2)
        self.ready = self.stopped = False
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.cli", address],
            cwd=_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])},
        )
        atexit.register(self.stop)

    def wait_ready(self) -> None:
        """Wait until the server has imported the CLI and listens."""
        if self.ready:
            return
        assert self.process.stdout is not None
        said = self.process.stdout.readline()
        if said != b"ready\n":
            self.stop()
            raise RuntimeError(f"the CLI fork server did not start (it said {said!r})")
        self.ready = True

    def _launcher(self, name: str, address: str, *, script: str, first: int) -> str:
        path = os.path.join(self.folder, name)
        with open(path, "w") as file:
            file.write(_LAUNCHER.format(python=sys.executable, address=address, script=script, first=first))
        os.chmod(path, 0o755)
        return path

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.process.poll() is None and not self.ready:
            self.process.kill()  # still importing, and no command ran: nothing to wind down
            self.process.wait()
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the server stops when its stdin closes
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        for name in ("socket", "harness", "python"):
            try:
                os.unlink(os.path.join(self.folder, name))
            except FileNotFoundError:
                pass
        os.rmdir(self.folder)


_started: list[_Server] = []
_SITE_PATH: list[str] = []
_lock = threading.Lock()


def start_server() -> None:
    """Start the server in the background, so that it has imported the CLI by the time the
    first command needs it (``tests/conftest.py`` calls this once the collected tests use this
    module); nothing with ``HARNESS_TEST_REAL_CLI=1``."""
    if not _real():
        with _lock:
            if not _started:
                _started[:] = [_Server()]


def _server() -> _Server:
    with _lock:
        if not _started or _started[0].process.poll() is not None:
            _started[:] = [_Server()]
        _started[0].wait_ready()
        return _started[0]


# -- the server ------------------------------------------------------------------------------


def _serve(address: str) -> None:
    """Import the CLI, then fork a command for each launcher until stdin closes."""
    for name in _PRELOAD:
        importlib.import_module(name)
    for name in _PRELOAD_IF_INSTALLED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # What the console script's interpreter puts on sys.path besides its own folder and
    # PYTHONPATH, which come from each command's request.
    own = {os.path.abspath(p) for p in [os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)] if p}
    _SITE_PATH[:] = [p for p in sys.path if p and os.path.abspath(p) not in own]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(64)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(sys.stdin, selectors.EVENT_READ)
            while True:
                events = selector.select(timeout=1.0)
                _reap()  # the supervisors that ended, so that their time counts as this process's
                for key, _ in events:
                    if key.fileobj is not listener:
                        return  # stdin closed: the test session is over
                    conn, _ = listener.accept()
                    _start(listener, conn)
                    conn.close()


def _start(listener: socket.socket, conn: socket.socket) -> None:
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request: dict[str, Any] = json.loads(message)
    if os.fork() == 0:
        listener.close()
        _supervise(conn, request, fds)
    for fd in fds:
        os.close(fd)


def _supervise(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """Fork the command, tell the launcher its pid, then its exit status; kill the command if
    the launcher goes away first (it was killed)."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_command(request, fds)
    for fd in fds:
        os.close(fd)
    status = 1
    try:
        conn.sendall(f"{pid}\n".encode())
        with selectors.DefaultSelector() as selector:
            exited = os.pidfd_open(pid)
            selector.register(exited, selectors.EVENT_READ)
            selector.register(conn, selectors.EVENT_READ)
            if all(key.fileobj is conn for key, _ in selector.select()):
                os.kill(pid, signal.SIGKILL)  # the launcher is gone: nobody waits for the command
        _, waited = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(waited)
        conn.sendall(f"{status}\n".encode())
    except OSError:
        pass  # the launcher went away
    finally:
        os._exit(0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked command: take the launcher's stdin, stdout, stderr, folder and environment,
    then do what the console script (or ``python SCRIPT``) and the interpreter's exit would do."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    encoding = os.environ.get("PYTHONIOENCODING") or sys.stdout.encoding
    interactive = os.isatty(1)
    sys.stdin = open(0, encoding=encoding, closefd=False)
    sys.stdout = open(1, "w", encoding=encoding, closefd=False, buffering=1 if interactive else -1)
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)
    script = request["script"]
    program = HARNESS if script is None else os.path.abspath(script)
    sys.argv = [HARNESS if script is None else script, *request["argv"]]
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(program), *extra, *_SITE_PATH]
    code: str | int | None
    try:
        if script is None:
            from harness.cli import main

            code = main()
        else:
            runpy.run_path(program, run_name="__main__")
            code = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    _exit(code)


def _exit(code: int) -> None:
    """The interpreter's exit steps, then the process's end with ``code``."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            code = 120  # what the interpreter returns when its last flush fails
    os._exit(code)


if __name__ == "__main__":
    _serve(sys.argv[1])

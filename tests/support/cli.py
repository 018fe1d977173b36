"""``run_harness``: run a ``harness`` command in its own process, without paying for a fresh
interpreter each time; ``run_python`` does the same for a test's driver script.

Most CLI tests are about what a command prints and the exit code it returns, not about how the
interpreter starts; yet a fresh ``harness`` process spends about half a second importing the
package before it does anything. ``run_harness`` forks every command from a server process that
has imported the CLI once (per test session), so each command still runs in a process of its
own — its own stdin, stdout and stderr pipes, working directory, environment, exit code, and
its own subprocesses — the way the console script would run it: ``sys.argv`` set,
``sys.exit(main())``, the interpreter's exit steps (non-daemon threads joined, ``atexit``
handlers, a last flush) after it.

What a forked command cannot show is the interpreter's own start: module-level behaviour that
reads the environment at import, ``python -X`` flags, what ``import harness`` loads. Tests of
those run the real console script (``HARNESS`` with ``subprocess``), as do the tests that keep
one real run per command; ``HARNESS_TEST_REAL_CLI=1`` makes ``run_harness`` run the real console
script too, to compare the two on the whole suite.
"""

from __future__ import annotations

import atexit
import importlib
import json
import locale
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["HARNESS", "REAL_CLI_ENV", "run_harness", "run_python"]

HARNESS = str(Path(sys.executable).with_name("harness"))
REAL_CLI_ENV = "HARNESS_TEST_REAL_CLI"
# What the server imports before it forks a command: the CLI and what its commands use.
# Optional integrations (model SDKs, MCP, Nacos, tracing) stay out, so a command loads them
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
_ROOT = Path(__file__).resolve().parents[2]


def run_harness(
    *argv: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``harness *argv`` to completion like ``subprocess.run(..., capture_output=True,
    text=True)``: the exit code (negative for a signal), stdout and stderr as text with universal
    newlines. ``env`` replaces the environment (default: this process's). Raises
    ``subprocess.TimeoutExpired`` after killing a command that runs longer than ``timeout``."""
    return _run([HARNESS, *argv], None, cwd, env, input, timeout)


def run_python(
    script: str | Path,
    *argv: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python SCRIPT *argv`` the way ``run_harness`` runs a command: in a process of its own,
    forked from the server (``sys.path[0]`` is the script's folder, as the interpreter sets it)."""
    return _run([sys.executable, str(script), *argv], str(script), cwd, env, input, timeout)


def _run(
    command: list[str],
    script: str | None,
    cwd: str | Path | None,
    env: Mapping[str, str] | None,
    input: str | None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    if os.environ.get(REAL_CLI_ENV, "").lower() in {"1", "true", "yes"}:
        return subprocess.run(command, cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout)
    request = {
        "argv": command[1:] if script is None else command[2:],
        "script": script,
        "cwd": str(cwd if cwd is not None else os.getcwd()),
        "env": dict(os.environ if env is None else env),
    }
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(_server().address)
            socket.send_fds(conn, [json.dumps(request).encode()], [stdin_r, out_w, err_w])
        finally:
            for fd in (stdin_r, out_w, err_w):
                os.close(fd)
        feeder = threading.Thread(target=_feed, args=(stdin_w, input or ""), daemon=True)
        feeder.start()
        out, err, status = _collect(conn, out_r, err_r, timeout, command)
        feeder.join()
    encoding = locale.getpreferredencoding(False)
    return subprocess.CompletedProcess(command, status, _text(out, encoding), _text(err, encoding))


def _feed(fd: int, text: str) -> None:
    try:
        with open(fd, "w", closefd=True) as stream:
            stream.write(text)
    except BrokenPipeError:
        pass  # the command exited without reading all of its input, as subprocess.run allows


def _collect(
    conn: socket.socket, out_r: int, err_r: int, timeout: float, command: list[str]
) -> tuple[bytes, bytes, int]:
    """Read stdout and stderr to their end and the exit status from the server."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    reply = b""
    with selectors.DefaultSelector() as selector:
        selector.register(out_r, selectors.EVENT_READ)
        selector.register(err_r, selectors.EVENT_READ)
        selector.register(conn, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        open_count = 3
        while open_count:
            events = selector.select(max(0.0, deadline - time.monotonic()))
            if not events:
                _kill(reply)
                for fd in (out_r, err_r):
                    os.close(fd)
                raise subprocess.TimeoutExpired(command, timeout)
            for key, _ in events:
                if key.fileobj is conn:
                    data = conn.recv(4096)
                    reply += data
                else:
                    fd = key.fd
                    data = os.read(fd, 65536)
                    chunks[fd].append(data)
                if not data:
                    selector.unregister(key.fileobj)
                    open_count -= 1
    os.close(out_r)
    os.close(err_r)
    lines = reply.decode().split()
    if len(lines) != 2:
        raise RuntimeError(f"the CLI fork server gave no exit status for {command}: {reply!r}")
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), int(lines[1])


def _kill(reply: bytes) -> None:
    pid = reply.decode().split()[:1]
    if pid:
        try:
            os.kill(int(pid[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _text(data: bytes, encoding: str) -> str:
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


class _Server:
    """The server process and the address it listens on; stopped when this process exits."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="harness-cli-")
        self.address = os.path.join(self.folder, "socket")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.cli", self.address],
            cwd=_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])},
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready != b"ready\n":
            self.stop()
            raise RuntimeError(f"the CLI fork server did not start (it said {ready!r})")
        atexit.register(self.stop)

    def stop(self) -> None:
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
        try:
            os.unlink(self.address)
        except FileNotFoundError:
            pass
        os.rmdir(self.folder)


_started: list[_Server] = []
_SITE_PATH: list[str] = []
_lock = threading.Lock()


def _server() -> _Server:
    with _lock:
        if not _started or _started[0].process.poll() is not None:
            _started[:] = [_Server()]
        return _started[0]


# -- the server ------------------------------------------------------------------------------


def _serve(address: str) -> None:
    """Import the CLI, then fork a command for each connection until stdin closes."""
    for name in _PRELOAD:
        importlib.import_module(name)
    # What the console script's interpreter puts on sys.path besides its own folder and
    # PYTHONPATH, which come from each command's request.
    own = {os.path.abspath(p) for p in [os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)] if p}
    _SITE_PATH[:] = [p for p in sys.path if p and os.path.abspath(p) not in own]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors below reap themselves
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(64)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(sys.stdin, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is not listener:
                        return  # stdin closed: the test session is over
                    conn, _ = listener.accept()
                    _start(listener, conn)
                    conn.close()


def _start(listener: socket.socket, conn: socket.socket) -> None:
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request: dict[str, Any] = json.loads(message)
    if os.fork() == 0:
        # The supervisor: forks the command, tells the client its pid, then its exit status.
        listener.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _run_command(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        conn.close()
        os._exit(0)
    for fd in fds:
        os.close(fd)


def _run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked command: take the client's pipes, folder and environment, then do what the
    console script and the interpreter's exit would do."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    encoding = os.environ.get("PYTHONIOENCODING") or sys.stdout.encoding
    sys.stdin = open(0, encoding=encoding, closefd=False)
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)
    script = request["script"]
    program = HARNESS if script is None else os.path.abspath(script)
    sys.argv = [program if script is None else script, *request["argv"]]
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(program), *extra, *_SITE_PATH]
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

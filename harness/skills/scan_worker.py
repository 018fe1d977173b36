"""A scan worker process (see :mod:`harness.pipeline.scan_pool`): reads ``(rules, block_at,
files)`` requests from stdin and writes one list of verdicts per request to stdout, until stdin
ends or no request came for the seconds given as its argument. It imports the scanner and
nothing of the pipeline: each worker a cold start begins costs its interpreter, the scanner and
its compiled rules, no more. An exception a rule raised comes
back as a ``RuntimeError`` with its message (a custom exception type may not survive pickling).
The pool sends the next request only after reading the answer to the last, so nothing waits in
stdin's buffer while the worker waits on its descriptor."""

from __future__ import annotations

import pickle
import select
import struct
import sys
from typing import IO, Any

from harness.skills.scanner import Scanner, ScanVerdict

__all__ = ["main", "read_frame", "write_frame"]

_LENGTH = struct.Struct(">Q")


def write_frame(stream: IO[bytes], value: object) -> None:
    """Write ``value`` pickled, after its length."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The value :func:`write_frame` wrote; ``EOFError`` when the stream ended."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the other side closed its pipe")
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    if len(data) < length:
        raise EOFError("the other side closed its pipe mid-answer")
    return pickle.loads(data)  # noqa: S301 - our own child process, over its own pipes


def main() -> None:
    # By rule-set version, compiled once per worker; the built-in rules, which most requests
    # carry, at start.
    default = Scanner()
    default.scan_each([("SKILL.md", b"# warm\n")])
    scanners: dict[str, Scanner] = {default.version: default}
    idle = float(sys.argv[1]) if len(sys.argv) > 1 else None
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever a rule prints must not land between the frames
    while True:
        if not select.select([stdin], [], [], idle)[0]:
            return  # idle too long: the pool starts another worker when a large batch comes
        try:
            rules, block_at, files = read_frame(stdin)
        except EOFError:
            return
        fresh = Scanner(rules, block_at=block_at)
        scanner = scanners.setdefault(fresh.version, fresh)
        outcomes = [
            o if isinstance(o, ScanVerdict) else RuntimeError(f"{type(o).__name__}: {o}")
            for o in scanner.scan_each(files)
        ]
        write_frame(stdout, outcomes)


if __name__ == "__main__":
    main()

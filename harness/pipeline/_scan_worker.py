"""A scan worker process (see :mod:`harness.pipeline.scan_pool`): reads ``(rules, block_at,
files)`` requests from stdin and writes one list of verdicts per request to stdout, until stdin
ends. An exception a rule raised comes back as a ``RuntimeError`` with its message (a custom
exception type may not survive pickling)."""

from __future__ import annotations

import sys

from harness.pipeline.scan_pool import read_frame, scan_files, write_frame
from harness.skills.scanner import Scanner, ScanVerdict


def main() -> None:
    scanners: dict[str, Scanner] = {}  # by rule-set version: compiled once per worker
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever a rule prints must not land between the frames
    while True:
        try:
            rules, block_at, files = read_frame(stdin)
        except EOFError:
            return
        fresh = Scanner(rules, block_at=block_at)
        scanner = scanners.setdefault(fresh.version, fresh)
        outcomes = [
            o if isinstance(o, ScanVerdict) else RuntimeError(f"{type(o).__name__}: {o}")
            for o in scan_files(scanner, files)
        ]
        write_frame(stdout, outcomes)


if __name__ == "__main__":
    main()

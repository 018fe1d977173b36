"""The ``harness`` command line: ``harness skills ...``, ``harness market ...`` and friends.

Exit codes: 0 ok, 1 findings or failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from filesystems import FilesystemError, redact_secrets
from harness.cli import agent, engine, market, mcp, skills
from harness.errors import ConfigError, HarnessError
from harness.terminal import escape_control
from repositories import RepositoryError

__all__ = ["main"]

_COMMANDS = (skills, market, agent, engine, mcp)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="harness", description="Agent skill harness: skills, markets, demo and workflow engine."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except ConfigError as exc:
        print(escape_control(f"harness: configuration error: {redact_secrets(str(exc))}"), file=sys.stderr)
        return 2
    except (HarnessError, RepositoryError, FilesystemError, OSError) as exc:
        print(escape_control(f"harness: error: {redact_secrets(str(exc))}"), file=sys.stderr)
        return 1
    sys.stdout.flush()
    return code

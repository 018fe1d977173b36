"""The ``harness`` command line: ``harness skills ...``, ``harness market ...`` and friends.

Exit codes: 0 ok, 1 findings or failure, 2 usage error, 141 stdout closed early (``| head``).
Logging: see :mod:`harness.cli.logs` (``--log-level``, ``HARNESS_LOG_LEVEL``, the logger names).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from filesystems import FilesystemError, redact_secrets
from harness._version import __version__
from harness.cli import agent, engine, market, mcp, sessions, skills
from harness.cli.common import announce_created_workspace
from harness.cli.logs import ENVIRONMENT_VARIABLE, LEVELS, LOGGERS, logging_to_stderr
from harness.errors import ConfigError, HarnessError
from harness.terminal import escape_control
from repositories import RepositoryError

__all__ = ["build_parser", "main"]

_COMMANDS = (skills, market, agent, sessions, engine, mcp)
#: The exit code of a process killed by SIGPIPE, which is what a reader closing the pipe means.
_CLOSED_PIPE = 141

_EPILOG = (
    f"logging: records go to stderr from the loggers {', '.join(LOGGERS)} (and their children); "
    f"--log-level or {ENVIRONMENT_VARIABLE} sets the level (default warning). "
    "Exit codes: 0 ok, 1 findings or failure, 2 usage error."
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Agent skill harness: skills, markets, demo and workflow engine.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}", help="print the version")
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        type=str.lower,
        help=f"how much to log on stderr (default: ${ENVIRONMENT_VARIABLE}, else warning)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        command.register(sub)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; an option the command does not know is reported with that command's
    usage (``harness skills list: error: ...``), not the top-level one."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command parser ``args`` was parsed by."""
    while True:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and action.dest is not argparse.SUPPRESS:
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return parser
        parser = chosen


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = _parse(parser, argv)
    try:
        quiet = getattr(args, "prints_diagnostics", False)
        with logging_to_stderr(args.log_level, prints_diagnostics=quiet), announce_created_workspace(args):
            code: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    except ConfigError as exc:
        print(escape_control(f"harness: configuration error: {redact_secrets(str(exc))}"), file=sys.stderr)
        return 2
    except (HarnessError, RepositoryError, FilesystemError, OSError) as exc:
        print(escape_control(f"harness: error: {redact_secrets(str(exc))}"), file=sys.stderr)
        return 1
    return code


def _closed_pipe() -> int:
    """The reader of stdout went away (``harness skills list | head -1``): stop quietly. stdout
    is pointed at /dev/null so the interpreter's last flush at exit does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return _CLOSED_PIPE

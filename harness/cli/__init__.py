"""The ``harness`` command line: ``harness skills ...``, ``harness market ...`` and friends.

Exit codes: 0 ok, 1 findings or failure, 2 usage or configuration error, 141 stdout closed early
(``| head``). A failure is one line on stderr; with ``--json`` among the arguments it is also one
JSON document on stdout, ``{"error": {"kind": "usage" | "configuration" | "failure" | "internal",
"message": ..., "exit_code": ...}}``, so stdout is always one document a program can read.
Logging: see :mod:`harness.cli.logs` (``--log-level``, ``HARNESS_LOG_LEVEL``, the logger names).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from filesystems import FilesystemError, redact_secrets
from harness._version import __version__
from harness.cli import agent, engine, market, mcp, sessions, skills
from harness.cli.common import announce_created_workspace, print_failure, print_json
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


class _UsageError(SystemExit):
    """A command line the parser refused; argparse has printed the usage and ``message``."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose error also says what it was (for ``--json``); the subcommands'
    parsers are of this class too (argparse makes them of their parent's)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(escape_control(f"{self.prog}: error: {message}"), file=sys.stderr)
        raise _UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command group registered."""
    parser = _Parser(
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
    arguments = list(sys.argv[1:] if argv is None else argv)
    json_wanted = "--json" in arguments
    parser = build_parser()
    try:
        args = _parse(parser, arguments)
    except _UsageError as exc:  # exits 2 as argparse does, once the document is out
        print_failure("usage", exc.message, 2, json_wanted=json_wanted, shown=True)
        raise
    try:
        quiet = getattr(args, "prints_diagnostics", False)
        with logging_to_stderr(args.log_level, prints_diagnostics=quiet), announce_created_workspace(args):
            code: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    except ConfigError as exc:
        return print_failure("configuration", redact_secrets(str(exc)), 2, json_wanted=json_wanted)
    except (HarnessError, RepositoryError, FilesystemError, OSError) as exc:
        return print_failure("failure", redact_secrets(str(exc)), 1, json_wanted=json_wanted)
    except SystemExit as exc:  # a command's own refusal of its arguments, as a message
        if not isinstance(exc.code, str):
            raise
        print(escape_control(exc.code), file=sys.stderr)
        return print_failure("usage", exc.code, 1, json_wanted=json_wanted, shown=True)
    except Exception as exc:  # a bug: the traceback follows, and stdout still holds one document
        if json_wanted:
            print_json({"error": {"kind": "internal", "message": redact_secrets(repr(exc)), "exit_code": 1}})
        raise
    return code


def _closed_pipe() -> int:
    """The reader of stdout went away (``harness skills list | head -1``): stop quietly. stdout
    is pointed at /dev/null so the interpreter's last flush at exit does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return _CLOSED_PIPE

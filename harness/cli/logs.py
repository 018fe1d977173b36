"""Where the ``harness`` command sends log records, and how loud it is.

The loggers, by name (each module logs under its own dotted name below these):

- ``harness``: the agent, the skill pipeline (layers, staging, environments, watching), the
  learning loop's schedule and the MCP server;
- ``repositories``: the skill markets (git, MySQL, Nacos, MCP, directories);
- ``filesystems``: the workspace filesystems and their background tasks.

The level is ``--log-level`` (``debug``, ``info``, ``warning``, ``error``), else the
``HARNESS_LOG_LEVEL`` environment variable, else ``warning``. Other libraries' records (the
Nacos SDK's ``naming``, the MCP SDK's ``mcp``, ...) show from ``warning`` up whatever the level. Records go to stderr as ``harness: LEVEL: logger:
message``, one line each: a message's newlines and control characters (an error a market raised,
a name a model chose) are escaped, so no text can pass for a record of its own; a traceback
follows its record on lines of its own. stdout keeps only the command's result.

A problem is reported once. Commands that print a turn's diagnostics (``skills list``,
``skills stage``, ...) drop the pipeline's warnings that restate them; at ``info`` or
``debug`` nothing is dropped.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import ConfigError
from harness.terminal import escape_line

__all__ = ["ENVIRONMENT_VARIABLE", "LEVELS", "LOGGERS", "logging_to_stderr"]

#: The loggers the command's own packages write to (see the module docstring).
LOGGERS = ("harness", "repositories", "filesystems")
#: The levels ``--log-level`` and ``HARNESS_LOG_LEVEL`` take.
LEVELS = ("debug", "info", "warning", "error")
ENVIRONMENT_VARIABLE = "HARNESS_LOG_LEVEL"

# Loggers whose warnings restate a diagnostic of the turn's plan (a market down, a file refused).
_RESTATING = ("harness.pipeline.pipeline", "harness.pipeline.layers", "harness.pipeline.staging")


class _OneLine(logging.Formatter):
    """``harness: LEVEL: logger: message`` with the message kept on its line (see the module
    docstring); an exception's traceback still follows on its own lines."""

    def __init__(self) -> None:
        super().__init__("harness: %(levelname)s: %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's naming
        return escape_line(super().formatMessage(record))


class _Restated(logging.Filter):
    """Drops a pipeline warning that the command prints as a diagnostic anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.WARNING and record.name in _RESTATING)


@contextmanager
def logging_to_stderr(level: str | None, *, prints_diagnostics: bool = False) -> Iterator[None]:
    """While the block runs, send log records to stderr at ``level`` (``None``:
    ``HARNESS_LOG_LEVEL``, else warning); afterwards the handler and the levels are as before,
    so calling :func:`harness.cli.main` in a process leaves its logging alone.

    ``prints_diagnostics``: the command prints the plan's diagnostics itself, so the pipeline's
    warnings restating them are left out (unless the level is ``info`` or lower). Raises
    ``ConfigError`` for an unknown level in the environment."""
    name = (level or os.environ.get(ENVIRONMENT_VARIABLE) or "warning").strip().lower()
    if name not in LEVELS:
        raise ConfigError(f"{ENVIRONMENT_VARIABLE}={name!r} is not a log level; use one of {', '.join(LEVELS)}")
    chosen = logging.getLevelName(name.upper())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    if prints_diagnostics and chosen >= logging.WARNING:
        handler.addFilter(_Restated())
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in LOGGERS)]
    before = [logger.level for logger in loggers]
    root = loggers[0]
    root.addHandler(handler)
    root.setLevel(max(chosen, logging.WARNING))
    for logger in loggers[1:]:
        logger.setLevel(chosen)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for logger, old in zip(loggers, before, strict=True):
            logger.setLevel(old)

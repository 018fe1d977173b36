"""The options every workspace command takes, defined once, and the one JSON printer.

``--config FILE`` reads ``harness.yaml``; the other options override what it says. The
workspace is ``--workspace``, else the config's ``workspace``, else ``./workspace``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filesystems import AbstractFilesystem, known_filesystem_modes
from harness.agent import Harness
from harness.cli.progress import terminal_progress
from harness.config import HarnessConfig
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.pipeline.lock import LOCKFILE_NAME
from harness.terminal import escape_control

__all__ = [
    "DEFAULT_USER",
    "JSON_OPTION",
    "SESSION_OPTIONS",
    "WORKSPACE_OPTIONS",
    "announce_created_workspace",
    "config_from_args",
    "context_from_args",
    "filesystem_from_args",
    "harness_from_args",
    "lockfile_path",
    "print_failure",
    "print_json",
]

#: Whose merged view ``skills list|prompt|show`` and ``run`` show without ``--user``.
DEFAULT_USER = "cli"


def _workspace_options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("workspace (common to every workspace command)")
    group.add_argument("--config", type=Path, metavar="FILE", help="harness.yaml to read (the options below win)")
    group.add_argument(
        "--workspace", type=Path, metavar="DIR", help="workspace folder (default: the config's, else ./workspace)"
    )
    group.add_argument("--user", metavar="ID", help="a user's area (default: see the command)")
    group.add_argument(
        "--global-dir",
        type=Path,
        action="append",
        metavar="DIR",
        help="a global skills folder (layer 1); repeatable, later wins; replaces the config's list",
    )
    group.add_argument(
        "--repo", action="append", default=[], metavar="URL", help="a skill market URL; repeatable, later wins"
    )
    group.add_argument("--fs", choices=known_filesystem_modes(), help="filesystem mode (default: local-shell)")
    group.add_argument("--store", metavar="URL", help="store of --fs remote (sqlite:///path, mysql://..., memory:)")
    group.add_argument(
        "--locked",
        action="store_true",
        help="serve exactly the skills of the lockfile (the config's lock, else harness.lock beside it or here)",
    )
    return parser


def _json_option() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def _session_options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("conversations")
    group.add_argument(
        "--sessions",
        metavar="URL",
        help="where conversations live: memory:, sqlite:///path, mysql://... (default: the config's sessions)",
    )
    return parser


#: Parent parser of every command that works on a workspace (``parents=[WORKSPACE_OPTIONS]``).
WORKSPACE_OPTIONS = _workspace_options()
#: Parent parser of every command that prints a result or lists things.
JSON_OPTION = _json_option()
#: Parent parser of the commands that read or write conversations (``--sessions URL``).
SESSION_OPTIONS = _session_options()


def config_from_args(args: argparse.Namespace) -> HarnessConfig:
    """The configuration the options describe: the config file (or the defaults), options on top."""
    if args.config:
        from harness.config import load_config  # the schema is built only when there is a file to read

        config = load_config(args.config)
    else:
        config = HarnessConfig(workspace=Path("workspace").resolve())
    changes: dict[str, Any] = {}
    if args.workspace:
        changes["workspace"] = args.workspace.resolve()
    if args.global_dir:
        changes["global_skills_dir"] = tuple(path.expanduser().resolve() for path in args.global_dir)
    if args.repo:
        changes["repositories"] = (*config.repositories, *args.repo)
    if args.fs:
        changes["filesystem"] = args.fs
    if args.store:
        changes["store"] = args.store
    if getattr(args, "locked", False):
        changes["lock"] = lockfile_path(args, config)
    if getattr(args, "sessions", None):
        changes["sessions"] = dataclasses.replace(config.sessions, store=args.sessions)
    return dataclasses.replace(config, **changes) if changes else config


def lockfile_path(args: argparse.Namespace, config: HarnessConfig) -> Path:
    """The lockfile the commands use: the config's ``lock``, else ``harness.lock`` beside
    ``--config``, else in the current folder."""
    if config.lock is not None:
        return config.lock
    return (args.config.parent if args.config else Path.cwd()).resolve() / LOCKFILE_NAME


def filesystem_from_args(args: argparse.Namespace) -> AbstractFilesystem:
    """The configured workspace filesystem (local, sandbox, remote, ...), not yet opened."""
    return config_from_args(args).open_filesystem()


def harness_from_args(args: argparse.Namespace, **overrides: Any) -> Harness:
    """A harness for a CLI command (no file watchers: a command runs one turn). Long work shows
    its progress on a terminal's stderr unless the command prints ``--json``."""
    overrides.setdefault("progress", terminal_progress(json=bool(getattr(args, "json", False))))
    return Harness.from_config(config_from_args(args), watch=False, **overrides)


def context_from_args(args: argparse.Namespace) -> RuntimeContext:
    """The runtime context of ``--user`` (:data:`DEFAULT_USER` without it) and ``--session``
    (``default`` without it, or when the command has none)."""
    try:
        return RuntimeContext(user_id=args.user or DEFAULT_USER, session_id=getattr(args, "session", None) or "default")
    except ValueError as exc:
        raise ConfigError(f"--user / --session: {exc}") from None


@contextmanager
def announce_created_workspace(args: argparse.Namespace) -> Iterator[None]:
    """Say on stderr when the command created its workspace folder (a first run in an empty
    folder makes ``./workspace``): no folder appears without a word. Commands without the
    workspace options pass through."""
    if not hasattr(args, "workspace"):
        yield
        return
    folder = config_from_args(args).workspace
    existed = folder.exists()
    try:
        yield
    finally:
        if not existed and folder.is_dir():
            how = "" if args.workspace or args.config else " (the default: choose one with --workspace or --config)"
            print(escape_control(f"harness: created the workspace folder {folder}{how}"), file=sys.stderr)


def print_json(value: object) -> None:
    """Indented JSON on stdout, non-ASCII and control characters escaped (text a model or a
    market wrote must not reach the operator's terminal raw)."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=True, default=str)
    sys.stdout.write("\n")


def print_failure(kind: str, message: str, code: int, *, json_wanted: bool, shown: bool = False) -> int:
    """Report a failed command: its line on stderr (``harness: error: ...``; not when the parser
    has ``shown`` it already) and, with ``--json``, one error document on stdout,
    ``{"error": {"kind", "message", "exit_code"}}``, so stdout stays one document a program can
    read. ``kind`` is ``usage``, ``configuration``, ``failure`` or ``internal``; returns ``code``."""
    if not shown:
        label = {"configuration": "configuration error: ", "failure": "error: "}.get(kind, "")
        print(escape_control(f"harness: {label}{message}"), file=sys.stderr)
    if json_wanted:
        print_json({"error": {"kind": kind, "message": message, "exit_code": code}})
    return code

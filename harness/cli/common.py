"""Options shared by the commands that need a workspace: config file or explicit flags."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.agent import Harness
from harness.config import FILESYSTEM_MODES, HarnessConfig, load_config
from harness.context import RuntimeContext
from harness.errors import ConfigError

__all__ = ["add_workspace_options", "config_from_args", "context_from_args", "harness_from_args", "print_json"]


def add_workspace_options(parser: argparse.ArgumentParser, *, user: bool = True) -> None:
    """``--config`` or ``--workspace/--global-dir/--repo/--fs``, plus ``--user``."""
    group = parser.add_argument_group("workspace")
    group.add_argument("--config", type=Path, help="harness.yaml to read (flags below override it)")
    group.add_argument("--workspace", type=Path, help="workspace folder (default ./workspace)")
    group.add_argument("--global-dir", type=Path, help="global skills folder (layer 1)")
    group.add_argument(
        "--repo", action="append", default=[], metavar="URL", help="a skill market URL; repeatable, later wins"
    )
    group.add_argument("--fs", choices=FILESYSTEM_MODES, help="filesystem mode (default local-shell)")
    group.add_argument("--store", help="key-value store URL for --fs remote (sqlite:///path, mysql://...)")
    if user:
        group.add_argument("--user", default="cli", help="user id whose layer is merged (default: cli)")


def config_from_args(args: argparse.Namespace) -> HarnessConfig:
    """The configuration the flags describe (a config file first, flags on top)."""
    config = load_config(args.config) if args.config else HarnessConfig(workspace=Path("workspace").resolve())
    changes: dict[str, Any] = {}
    if args.workspace:
        changes["workspace"] = args.workspace.resolve()
    if args.global_dir:
        changes["global_skills_dir"] = args.global_dir.resolve()
    if args.repo:
        changes["repositories"] = (*config.repositories, *args.repo)
    if args.fs:
        changes["filesystem"] = args.fs
    if getattr(args, "store", None):
        changes["store"] = args.store
    import dataclasses

    return dataclasses.replace(config, **changes) if changes else config


def harness_from_args(args: argparse.Namespace, **overrides: Any) -> Harness:
    """A harness for a CLI command (no file watchers: a command runs one turn)."""
    return config_from_args(args).build(watch=False, **overrides)


def context_from_args(args: argparse.Namespace) -> RuntimeContext:
    """The runtime context of ``--user``."""
    try:
        return RuntimeContext(user_id=args.user)
    except ValueError as exc:
        raise ConfigError(f"--user: {exc}") from None


def print_json(value: object) -> None:
    """Pretty JSON on stdout."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")

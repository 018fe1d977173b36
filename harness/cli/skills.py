"""``harness skills ...``: validate, list, show, prompt and stage skills."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.validation import find_skill_dirs, validate_skill_dir

__all__ = ["register"]


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``skills`` command group."""
    parser = sub.add_parser("skills", help="validate, list, show and stage skills")
    commands = parser.add_subparsers(dest="skills_command", metavar="SUBCOMMAND", required=True)

    validate = commands.add_parser(
        "validate",
        help="check skill folders against the Agent Skills specification",
        description="Validate skill folders (or folders of skill folders). Exit 0 when valid, 1 on any error.",
    )
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    validate.add_argument("--json", action="store_true", help="print a JSON list of reports")
    mode = validate.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=True, help="the specification's rules (default)")
    mode.add_argument("--lenient", dest="strict", action="store_false", help="what runtime loading would do")
    validate.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    reports = [
        validate_skill_dir(folder, strict=args.strict)
        for path in args.paths
        for folder in find_skill_dirs(path)
    ]
    if args.json:
        print(json.dumps([report.as_dict() for report in reports], indent=2, ensure_ascii=False))
    else:
        for report in reports:
            status = "ok" if report.ok else "invalid"
            print(f"{report.path}: {status}" + (f" ({report.name})" if report.name else ""))
            for message in report.errors:
                print(f"  error: {message}")
            for message in report.warnings:
                print(f"  warning: {message}")
    return 0 if all(report.ok for report in reports) else 1

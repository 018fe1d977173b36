"""``harness market publish``: upload skill folders to a writable market (validated first)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio

from harness.cli.common import JSON_OPTION, print_json
from harness.skills.validation import find_skill_dirs, find_skill_md, validate_skill_dir
from harness.terminal import echo
from repositories import FileContents, SkillBundleContents, open_repository

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``market`` command group."""
    parser = sub.add_parser("market", help="fill skill markets")
    commands = parser.add_subparsers(dest="market_command", metavar="SUBCOMMAND", required=True)
    publish = commands.add_parser(
        "publish",
        parents=[JSON_OPTION],
        help="validate skill folders and save them into a writable market",
        description="Validate (strict) then upload skill folders, e.g. --repo mysql://user:pass@host/db?table=skills",
    )
    publish.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a skill folder or a folder of them")
    publish.add_argument("--repo", required=True, metavar="URL", help="the market's URL")
    publish.add_argument("--lenient", action="store_true", help="publish what runtime loading accepts")
    publish.set_defaults(handler=_publish)


def _publish(args: argparse.Namespace) -> int:
    folders = [folder for path in args.paths for folder in find_skill_dirs(path)]
    reports = [validate_skill_dir(folder, strict=not args.lenient) for folder in folders]
    failed = [r for r in reports if not r.ok]
    if failed:
        if args.json:
            print_json({"published": [], "invalid": [report.as_dict() for report in failed]})
            return 1
        for report in failed:
            echo(f"{report.path}: invalid, not published")
            for message in report.errors:
                echo(f"  error: {message}")
        return 1
    published = anyio.run(_upload, args.repo, folders, not args.json)
    if args.json:
        print_json({"published": published, "invalid": []})
    return 0


async def _upload(url: str, folders: list[Path], say: bool) -> list[dict[str, object]]:
    """Save each folder into the market; ``say``: print a line per skill as it is published."""
    # Publishing writes, and fills a new market: ask for both unless the URL says otherwise.
    for option in ("writable", "create_if_missing"):
        if url.startswith("mysql://") and f"{option}=" not in url:
            url += ("&" if "?" in url else "?") + f"{option}=true"
    published: list[dict[str, object]] = []
    async with open_repository(url) as repository:
        for folder in folders:
            bundle = await anyio.to_thread.run_sync(_read_bundle, folder)
            await repository.save(bundle)
            published.append({"folder": folder.name, "files": len(bundle.files) + 1, "market": repository.source})
            if say:
                echo(f"published {folder.name} ({len(bundle.files) + 1} files) to {repository.source}")
    return published


def _read_bundle(folder: Path) -> SkillBundleContents:
    """The folder as a bundle: every regular file except dot-files and symlinks."""
    main = find_skill_md(folder)
    assert main is not None  # validated above
    files = []
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(current, name)
            if name.startswith(".") or path.is_symlink() or path == main:
                continue
            files.append(
                FileContents(
                    path=path.relative_to(folder).as_posix(), data=path.read_bytes(), mode=path.stat().st_mode & 0o777
                )
            )
    return SkillBundleContents(
        folder=folder.name, skill_md=main.read_bytes(), skill_md_name=main.name, files=tuple(files)
    )

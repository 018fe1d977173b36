"""``harness market publish``: upload skill folders to a writable market (validated first);
``harness market refresh NAME``: check one configured market now (read-your-push)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio

from harness.cli.common import JSON_OPTION, WORKSPACE_OPTIONS, config_from_args, print_json
from harness.errors import ConfigError
from harness.skills.validation import find_skill_dirs, find_skill_md, validate_skill_dir
from harness.terminal import echo
from repositories import FileContents, SkillBundleContents, disambiguate_sources, open_repository

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
    refresh = commands.add_parser(
        "refresh",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="check one configured market now, whatever its check interval",
        description=(
            "Ask a configured market for its latest version now and fetch it (a git market: "
            "ls-remote, then fetch into the shared clone cache). Running processes that share "
            "the cache serve it from their next turn, without waiting for their check interval."
        ),
    )
    refresh.add_argument("name", metavar="NAME", help="the market's slug, as skill ids show it (git-acme-skills)")
    refresh.set_defaults(handler=_refresh)


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


def _refresh(args: argparse.Namespace) -> int:
    urls = config_from_args(args).repositories
    return anyio.run(_refresh_market, urls, args.name, args.json)


async def _refresh_market(urls: tuple[str, ...], name: str, as_json: bool) -> int:
    markets = [open_repository(url) for url in urls]
    slugs = disambiguate_sources(market.source for market in markets)
    try:
        chosen = next((market for market, slug in zip(markets, slugs, strict=True) if slug == name), None)
        if chosen is None:
            raise ConfigError(f"no market {name!r} is configured (markets: {', '.join(slugs) or 'none'})")
        async with chosen:
            await chosen.refresh()
            snapshot = await chosen.snapshot()
    finally:
        for market in markets:
            await market.aclose()
    failed = str(snapshot.error) if snapshot.error is not None else None
    if as_json:
        print_json({"market": name, "version": snapshot.version, "skills": len(snapshot.bundles), "error": failed})
    elif failed:
        echo(f"{name}: could not refresh, still at {snapshot.version}: {failed}")
    else:
        echo(f"{name}: {snapshot.version} ({len(snapshot.bundles)} skills)")
    return 1 if failed else 0

"""``harness skills lock`` and ``harness skills update [MARKET]``: writing and moving the lockfile.

Both read every configured market as it serves now (never through the lock), print what the
new lock changes against the old one (skills added, removed, changed, with digests) and write
it atomically. ``lock`` writes a whole new lock; ``update`` needs one and moves the named
market only (every market without a name). A market that cannot be read whole keeps its old
entry and makes the command exit 1. ``lock`` replaces an old lock it cannot read (reported on
stderr); ``update`` refuses to move one. A dynamic skill (an MCP server's, made afresh on each read)
is recorded as dynamic, unread, and named in the report: the lock cannot pin it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from harness.cli.common import (
    JSON_OPTION,
    WORKSPACE_OPTIONS,
    config_from_args,
    harness_from_args,
    lockfile_path,
    print_json,
)
from harness.errors import ConfigError
from harness.pipeline.layers import describe_error
from harness.pipeline.lock import LockChange, LockedMarket, LockError, Lockfile, diff_locks, lock_market
from harness.terminal import echo

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``skills lock`` and ``skills update``."""
    lock = commands.add_parser(
        "lock",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="write the lockfile: every market's version and every skill's digest",
        description="Read every configured market as it serves now and write the lockfile (the config's "
        "lock, else harness.lock beside --config, else ./harness.lock), printing what changed against the "
        "old one. With the lock in force (lock: in harness.yaml, or --locked) exactly these skills are served.",
    )
    lock.add_argument("--lockfile", type=Path, metavar="FILE", help="the lockfile to write (default: see above)")
    lock.set_defaults(handler=lambda args: anyio.run(_lock, args, None, False))

    update = commands.add_parser(
        "update",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="move the lock of one market (or all) to what it serves now, printing the changes",
        description="Move the lockfile's entry of MARKET (a market slug; every market without one) to what "
        "the market serves now, and print the skills added, removed and changed, with their digests.",
    )
    update.add_argument("market", nargs="?", metavar="MARKET", help="the market slug to move (default: every market)")
    update.add_argument("--lockfile", type=Path, metavar="FILE", help="the lockfile to move (default: see `lock`)")
    update.set_defaults(handler=lambda args: anyio.run(_lock, args, args.market, True))


async def _lock(args: argparse.Namespace, market: str | None, existing: bool) -> int:
    config = config_from_args(args)
    path: Path = args.lockfile.resolve() if args.lockfile else lockfile_path(args, config)
    old = _old_lock(path, existing)
    failed: list[str] = []
    markets: dict[str, LockedMarket] = {} if market is None else dict(old.markets)
    async with harness_from_args(args, lock=None) as agent:
        layers = agent.pipeline.market_layers
        slugs = [layer.source for layer in layers]
        if market is not None and market not in slugs:
            raise ConfigError(f"no market {market!r} is configured; the markets are: {', '.join(slugs) or 'none'}")
        for layer in layers:
            if market is not None and layer.source != market:
                continue
            result = await layer.load()
            names = {entry.key: entry.skill.name for entry in result.entries}
            try:
                markets[layer.source] = await lock_market(layer.repository, source=layer.source, names=names)
            except Exception as exc:
                failed.append(f"market {layer.source!r} cannot be read whole, its lock is kept: {describe_error(exc)}")
                if layer.source in old.markets:
                    markets[layer.source] = old.markets[layer.source]
    new = Lockfile(markets=markets)
    changes = diff_locks(old, new)
    new.write(path)
    _report(args, path, new, changes, failed)
    return 1 if failed else 0


def _old_lock(path: Path, existing: bool) -> Lockfile:
    """The lock the new one is compared with. ``update`` needs a good one; ``lock`` writes a
    whole new lock, so a broken old one (hand-edited, tampered with) is reported and replaced."""
    if existing:
        return Lockfile.read(path, skills_lock=False)
    if not path.exists():
        return Lockfile()
    try:
        return Lockfile.read(path, skills_lock=False)
    except LockError as exc:
        echo(f"harness: {exc}; it is written anew", file=sys.stderr)
        return Lockfile()


def _report(args: argparse.Namespace, path: Path, lock: Lockfile, changes: list[LockChange], failed: list[str]) -> None:
    dynamic = [
        f"{slug}/{key}" for slug, m in sorted(lock.markets.items()) for key, s in sorted(m.skills.items()) if s.dynamic
    ]
    if args.json:
        print_json(
            {
                "lockfile": str(path),
                "markets": {slug: {"version": m.version, "commit": m.commit} for slug, m in lock.markets.items()},
                "changes": [vars(change) for change in changes],
                "dynamic": dynamic,
                "errors": failed,
            }
        )
    else:
        for change in changes:
            echo(str(change))
        for skill in dynamic:
            echo(
                f"{skill}: dynamic (its server makes it afresh on each read): recorded without a digest; "
                "under the lock it is served unpinned, with a lock-dynamic warning"
            )
        count = sum(len(m.skills) for m in lock.markets.values())
        echo(f"{path}: {len(lock.markets)} market(s), {count} skill(s), {len(changes)} change(s)")
    for problem in failed:
        echo(f"harness: {problem}", file=sys.stderr)

"""``harness sessions``: the stored conversations of a user: list, show, delete; and pruning by age."""

from __future__ import annotations

import argparse
import datetime

import anyio

from harness.agent.sessions import SessionStore, open_session_store
from harness.cli.common import (
    JSON_OPTION,
    SESSION_OPTIONS,
    WORKSPACE_OPTIONS,
    config_from_args,
    context_from_args,
    print_json,
)
from harness.errors import ConfigError
from harness.terminal import echo

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sessions list|show|delete|prune``."""
    sessions = sub.add_parser(
        "sessions",
        help="list, show, delete and prune stored conversations",
        description="The conversations kept where harness.yaml's sessions (or --sessions) say.",
    )
    commands = sessions.add_subparsers(dest="sessions_command", metavar="COMMAND", required=True)
    parents = [WORKSPACE_OPTIONS, SESSION_OPTIONS, JSON_OPTION]

    listing = commands.add_parser("list", parents=parents, help="a user's conversations, most recent first")
    listing.set_defaults(handler=lambda args: anyio.run(_list, args))

    show = commands.add_parser("show", parents=parents, help="the messages of one conversation")
    show.add_argument("--session", metavar="ID", default="default", help="the conversation (default: default)")
    show.set_defaults(handler=lambda args: anyio.run(_show, args))

    delete = commands.add_parser(
        "delete",
        parents=parents,
        help="forget a user's conversations (all of them, or one with --session)",
        description="Deletes every conversation of --user, with the runs of theirs paused for approval and the "
        "idempotency keys answered in them, or only the conversation --session. Other users are untouched, however "
        "alike their ids.",
    )
    delete.add_argument("--session", metavar="ID", help="only this conversation")
    delete.set_defaults(handler=lambda args: anyio.run(_delete, args))

    prune = commands.add_parser(
        "prune",
        parents=parents,
        help="delete conversations older than the retention",
        description="Deletes conversations untouched, and paused runs kept, for longer than --older-than-days "
        "(default: the config's sessions.max_age_days).",
    )
    prune.add_argument("--older-than-days", type=float, metavar="DAYS", help="the age past which to delete")
    prune.set_defaults(handler=lambda args: anyio.run(_prune, args))


def _store(args: argparse.Namespace) -> SessionStore:
    config = config_from_args(args).sessions
    try:
        return open_session_store(config.store, max_messages=config.max_messages, max_age=config.max_age)
    except ValueError as exc:
        raise ConfigError(f"sessions: {exc}") from None


def _user(args: argparse.Namespace) -> str:
    if not args.user:
        raise ConfigError("--user: name the user whose conversations to work on")
    return context_from_args(args).user_id


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).isoformat(timespec="seconds")


async def _list(args: argparse.Namespace) -> int:
    user = _user(args)
    async with _store(args) as store:
        found = await store.list_sessions(user)
    rows = [{"session": info.session_id, "messages": info.messages, "updated": _when(info.updated)} for info in found]
    if args.json:
        print_json({"user": user, "sessions": rows})
    else:
        for row in rows:
            echo(f"{row['session']}\t{row['messages']} messages\t{row['updated']}")
    return 0


async def _show(args: argparse.Namespace) -> int:
    context = context_from_args(args)
    _user(args)
    async with _store(args) as store:
        session = await store.get(context.user_id, context.session_id)
    messages = [{"role": m.role, "content": m.content} for m in session.messages]
    if args.json:
        print_json({"user": context.user_id, "session": context.session_id, "messages": messages})
    else:
        for message in messages:
            echo(f"{message['role']}: {message['content']}")
    return 0


async def _delete(args: argparse.Namespace) -> int:
    user = _user(args)
    async with _store(args) as store:
        if args.session:
            deleted = int(await store.delete(context_from_args(args).user_id, args.session))
        else:
            deleted = await store.delete_user(user)
    if args.json:
        print_json({"user": user, "deleted": deleted})
    else:
        echo(f"deleted {deleted} conversation{'s' if deleted != 1 else ''} of {user}")
    return 0


async def _prune(args: argparse.Namespace) -> int:
    days = args.older_than_days
    if days is not None and days < 0:
        raise ConfigError("--older-than-days: must not be negative")
    async with _store(args) as store:
        if days is None and store.max_age is None:
            raise ConfigError("prune: give --older-than-days, or set sessions.max_age_days in harness.yaml")
        deleted = await store.prune(None if days is None else days * 86400.0)
    if args.json:
        print_json({"deleted": deleted})
    else:
        echo(f"deleted {deleted} conversation{'s' if deleted != 1 else ''}")
    return 0

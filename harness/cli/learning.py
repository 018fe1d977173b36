"""``harness skills drafts|promote|review|audit|curate``: operating the self-learning loop.

``curate`` runs the curator once (``--dry-run``: report only), or with ``--watch`` on the
schedule of ``harness.yaml``'s ``curator:`` key until SIGINT/SIGTERM; ``--umbrella`` writes the
umbrella-merge review's dry-run report with the configured model; ``--reports`` lists the stored
curator and umbrella reports.

Every command takes the common workspace options (``--config``, ``--workspace``, ``--user``,
...; see ``harness.cli.common``) and ``--json``; without ``--user`` a command works on the shared
workspace (``drafts``: every area). Exit codes:
0 ok, 1 failure (the message goes to stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio

from harness.cli.common import (
    JSON_OPTION,
    WORKSPACE_OPTIONS,
    config_from_args,
    filesystem_from_args,
    print_failure,
    print_json,
)
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.learning import CuratorConfig, LearningError, SelfLearning, area_label, discover_users
from harness.models import ModelError, open_model
from harness.terminal import escape_control

__all__ = ["register"]

_Action = Callable[[argparse.Namespace, SelfLearning], Awaitable[Any]]
#: The line a command prints instead of nothing when its result is empty.
_Empty = Callable[[argparse.Namespace], str]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the self-learning commands to the ``harness skills`` sub-command group ``sub``."""
    _command(
        sub,
        "drafts",
        "list draft skills and pending review requests",
        _drafts,
        empty=lambda args: f"no drafts and no pending reviews in {_areas(args)}",
    )

    promote = _command(sub, "promote", "promote a draft into the live skills folder (no gate)", _promote)
    promote.add_argument("name", help="the draft's name")
    promote.add_argument("--reviewer", required=True, help="who approves the promotion (audited)")

    review = _command(sub, "review", "record a decision on a pending review request", _review)
    review.add_argument("request_id", help="the review request id (see `harness skills drafts`)")
    review.add_argument("--reviewer", required=True, help="who decides (audited)")
    verdict = review.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--approve", dest="approved", action="store_true", help="promote the draft")
    verdict.add_argument("--reject", dest="approved", action="store_false", help="keep it a draft")
    review.add_argument("--reason", default="", help="why (audited)")

    audit = _command(
        sub,
        "audit",
        "print one UTC day of the audit log",
        _audit,
        empty=lambda args: f"no audit records on {_day(args)} (UTC) in {_areas(args)}",
    )
    audit.add_argument("--day", help="YYYY-MM-DD (default: today, UTC)")

    curate = _command(
        sub,
        "curate",
        "mark unused agent-created skills stale, archive old ones",
        _curate,
        empty=lambda args: "no curator or umbrella reports yet (run `harness skills curate` to make one)",
    )
    mode = curate.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")
    mode.add_argument(
        "--watch",
        action="store_true",
        help="keep curating on the configured schedule (harness.yaml `curator:`) until SIGINT/SIGTERM",
    )
    mode.add_argument(
        "--reports", action="store_true", help="list the stored curator and umbrella reports, oldest first"
    )
    curate.add_argument(
        "--umbrella",
        action="store_true",
        help="write the umbrella-merge review (dry run, configured model); with --watch after every run",
    )


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    action: _Action,
    *,
    empty: _Empty | None = None,
) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, parents=[WORKSPACE_OPTIONS, JSON_OPTION], help=help, description=help)
    parser.set_defaults(handler=lambda args: _run(args, action, empty))
    return parser


def _run(args: argparse.Namespace, action: _Action, empty: _Empty | None = None) -> int:
    async def main() -> Any:
        async with filesystem_from_args(args) as fs:
            return await action(args, SelfLearning(fs))

    try:
        result = anyio.run(main)
    except ConfigError:
        raise  # a usage error: main() reports it with exit code 2
    except (LearningError, ModelError, FileNotFoundError, ValueError) as exc:
        return print_failure("failure", str(exc), 1, json_wanted=args.json)
    if args.json:
        print_json(result)
    elif empty is not None and _is_empty(result):
        print(escape_control(empty(args)))
    else:
        _print_text(result)
    return 0


def _is_empty(result: Any) -> bool:
    """An empty list, or a mapping whose values are all empty lists (``drafts``)."""
    if isinstance(result, list):
        return not result
    values = list(result.values()) if isinstance(result, dict) else [result]
    return all(isinstance(value, list) and not value for value in values)


def _areas(args: argparse.Namespace) -> str:
    where = f"the workspace {config_from_args(args).workspace}"
    return f"{where} for user {args.user}" if args.user else where


def _day(args: argparse.Namespace) -> str:
    return str(args.day or datetime.now(UTC).date())


def _context(args: argparse.Namespace) -> RuntimeContext | None:
    return RuntimeContext(user_id=args.user, session_id="cli") if args.user else None


async def _drafts(args: argparse.Namespace, loop: SelfLearning) -> dict[str, Any]:
    scopes: list[str | None] = [args.user] if args.user else [None, *await discover_users(loop.fs)]
    drafts = [
        {"area": area_label(scope), "user": scope, "name": name}
        for scope in scopes
        for name in await loop.promoter.drafts(scope)
    ]
    reviews = [
        {
            "id": r.id,
            "area": area_label(r.scope),
            "name": r.name,
            "requested_at": r.requested_at.isoformat(),
            "files": dict(r.files),
            "reason": r.reason,
        }
        for r in await loop.promoter.reviews()
        if not args.user or r.scope == args.user
    ]
    return {"drafts": drafts, "pending_reviews": reviews}


async def _promote(args: argparse.Namespace, loop: SelfLearning) -> dict[str, Any]:
    return (await loop.promote_skill(args.name, args.reviewer, context=_context(args))).as_dict()


async def _review(args: argparse.Namespace, loop: SelfLearning) -> dict[str, Any]:
    result = await loop.record_decision(
        args.request_id, approved=args.approved, reviewer=args.reviewer, reason=args.reason
    )
    return result.as_dict()


async def _audit(args: argparse.Namespace, loop: SelfLearning) -> list[dict[str, Any]]:
    # The API's None is every day; the command shows one, today unless --day says otherwise.
    records = await loop.query_audit(_day(args), None)
    if args.user:
        records = [r for r in records if r.target.startswith(f"users/{args.user}/")]
    return [record.as_dict() for record in records]


async def _curate(args: argparse.Namespace, loop: SelfLearning) -> Any:
    if args.reports:
        return [entry.as_dict() for entry in await loop.reports.list()]
    if args.watch:
        return await _watch(args, loop)
    if args.umbrella:
        async with open_model(config_from_args(args).model) as model:
            return (await loop.umbrella_review(model).review()).as_dict()
    return (await loop.run_curator_once(dry_run=args.dry_run)).as_dict()


async def _watch(args: argparse.Namespace, loop: SelfLearning) -> dict[str, Any]:
    """Run the scheduled curator until SIGINT or SIGTERM, then report what it did."""
    config = config_from_args(args)
    schedule = config.curator or CuratorConfig()
    if args.umbrella:
        schedule = dataclasses.replace(schedule, umbrella_review=True)
    stopped_by = ""
    async with open_model(config.model) as model:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with loop.curator_task(schedule, model=model) as task:
                print(
                    f"curating every {schedule.interval} (checking every {schedule.wake_every}); "
                    "SIGINT or SIGTERM stops",
                    file=sys.stderr,
                    flush=True,
                )
                async for received in signals:
                    stopped_by = signal.Signals(received).name
                    break
    return {
        "stopped_by": stopped_by,
        "runs": [report.as_dict() for report in task.reports],
        "umbrella_reports": [report.path for report in task.umbrella_reports],
    }


def _print_text(result: Any) -> None:
    """Print ``result`` for a person; names, reasons and details come from drafts and models, so
    every line has its control characters escaped."""
    if isinstance(result, list):
        for item in result:
            print(escape_control(_line(item)))
        return
    if "drafts" in result:
        for draft in result["drafts"]:
            print(escape_control(f"draft  {draft['area']}/{draft['name']}"))
        for review in result["pending_reviews"]:
            print(
                escape_control(
                    f"review {review['id']}  {review['area']}/{review['name']}  ({len(review['files'])} files)"
                )
            )
        return
    if "runs" in result:
        for run in result["runs"]:
            changes = f"{len(run['transitions'])} change(s)" if run["ran"] else run["reason"]
            print(escape_control(f"{run['started_at']}  {changes}"))
        for path in result["umbrella_reports"]:
            print(escape_control(f"umbrella report {path}"))
        print(escape_control(f"stopped by {result['stopped_by']} after {len(result['runs'])} attempt(s)"))
        return
    if "proposals" in result:
        for p in result["proposals"]:
            print(escape_control(f"{p['area']}: {p['umbrella']} <- {', '.join(p['members'])}  ({p['reason']})"))
        for note in result["notes"]:
            print(escape_control(f"note: {note}"))
        print(escape_control(f"{len(result['proposals'])} proposal(s), dry run; report {result['path']}"))
        return
    if "transitions" in result:
        prefix = "would " if result["dry_run"] else ""
        for t in result["transitions"]:
            print(
                escape_control(
                    f"{prefix}{t['from_state']} -> {t['to_state']}  {t['area']}/{t['name']}  idle {t['idle_days']:.1f} days"
                )
            )
        print(escape_control(f"{len(result['transitions'])} change(s) across {', '.join(result['areas'])}"))
        return
    print(escape_control(_line(result)))


def _line(item: dict[str, Any]) -> str:
    return "  ".join(f"{key}={value}" for key, value in item.items() if value not in (None, "", {}, []))

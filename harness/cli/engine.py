"""``harness engine ...``: run, continue, check, show and cancel workflow runs.

Every command takes the common workspace options (``--config``, ``--workspace``, ``--user``,
...; see ``harness.cli.common``) and ``--json``. Runs are stored in the configured workspace
filesystem (local, sandbox or a remote store), in the user's area with ``--user``. Confirmations of guarded actions (``continue --confirm``) and decisions for a run blocked by its
retry budget (``continue --retry | --skip | --abort``) are given here or by the application,
never by the model's tools. Text output always ends with what to do next; ``--json`` prints the run
record (plus ``next``) instead.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from filesystems import redact_url
from harness.agent.workflows import package_for, resolve_workflow
from harness.cli.common import (
    JSON_OPTION,
    WORKSPACE_OPTIONS,
    config_from_args,
    context_from_args,
    harness_from_args,
    print_json,
)
from harness.engine import (
    CheckReport,
    Outcome,
    Run,
    SkillPackage,
    WorkflowEngine,
    check_workflow,
    comet_event,
    comet_status,
)
from harness.engine.describe import describe_action
from harness.engine.run import run_to_json
from harness.terminal import escape_control, escape_line

__all__ = ["register"]

_PARENTS = [WORKSPACE_OPTIONS, JSON_OPTION]
_RUN_ID = "the run (see `harness engine run`)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``engine`` command group."""
    parser = sub.add_parser("engine", help="run workflow skills step by step")
    commands = parser.add_subparsers(dest="engine_command", metavar="SUBCOMMAND", required=True)

    run = commands.add_parser("run", parents=_PARENTS, help="start a run of a workflow skill")
    run.add_argument(
        "skill", type=Path, metavar="SKILL", help="path of the skill folder, or a skill name from the layers"
    )
    run.add_argument("--run-id", help="id of the new run (default: generated)")
    run.add_argument("--input", action="append", default=[], metavar="KEY=VALUE", help="seed the run's vars")
    run.set_defaults(handler=lambda args: _handle(args, _run))

    cont = commands.add_parser("continue", parents=_PARENTS, help="report the pending action's outcome and/or confirm")
    cont.add_argument("--run-id", required=True, help=_RUN_ID)
    cont.add_argument("--status", choices=("succeeded", "failed"), help="how the pending action went")
    cont.add_argument("--summary", default="", help="what happened, in a sentence (recorded)")
    cont.add_argument("--outcome-id", help="identifies this report; resubmitting it is a no-op")
    cont.add_argument(
        "--artifact", action="append", default=[], metavar="NAME=VALUE", help="an artifact the step produced"
    )
    cont.add_argument("--state", action="append", default=[], metavar="KEY=JSON", help="merged into the run's vars")
    cont.add_argument("--to-state", metavar="STATE", help="the domain state the run moves to (workflow states)")
    cont.add_argument("--schema-version", metavar="VERSION", help="the schema version of the step's hand-off")
    cont.add_argument("--confirm", metavar="ACTION_ID", help="confirm the blocked action")
    decide = cont.add_mutually_exclusive_group()
    for decision, text in (
        ("retry", "run the failed step again with a fresh retry budget"),
        ("skip", "move on as if the failed step had succeeded"),
        ("abort", "end the run as failed"),
    ):
        decide.add_argument(
            f"--{decision}",
            dest="decision",
            action="store_const",
            const=decision,
            help=f"a run blocked by its retry budget: {text} (--summary is recorded with it)",
        )
    cont.set_defaults(handler=lambda args: _handle(args, _continue))

    check = commands.add_parser("check", parents=_PARENTS, help="evaluate the run's checks of one scope")
    check.add_argument("--run-id", required=True, help=_RUN_ID)
    check.add_argument(
        "--scope",
        choices=("step", "completion", "progress"),
        default="completion",
        help="which of the workflow's checks to evaluate (default completion)",
    )
    check.set_defaults(handler=lambda args: _handle(args, _check))

    show = commands.add_parser("show", parents=_PARENTS, help="the run's state, pending action and what to do next")
    show.add_argument("--run-id", required=True, help=_RUN_ID)
    show.add_argument("--events", action="store_true", help="also list the trajectory")
    show.add_argument(
        "--format",
        choices=("text", "comet"),
        default="text",
        help="comet: print the run and its trajectory as JSON in Comet's status and event names",
    )
    show.set_defaults(handler=lambda args: _handle(args, _show))

    upgrade = commands.add_parser(
        "upgrade",
        parents=_PARENTS,
        help="move a run to a new version of its skill (no pending action, same name and mode)",
    )
    upgrade.add_argument("--run-id", required=True, help=_RUN_ID)
    upgrade.add_argument(
        "skill", type=Path, metavar="SKILL", help="path of the skill folder, or a skill name from the layers"
    )
    upgrade.set_defaults(handler=lambda args: _handle(args, _upgrade))

    cancel = commands.add_parser("cancel", parents=_PARENTS, help="cancel an unfinished run")
    cancel.add_argument("--run-id", required=True, help=_RUN_ID)
    cancel.add_argument("--reason", default="", help="why (recorded with the run)")
    cancel.set_defaults(handler=lambda args: _handle(args, _cancel))


Command = Callable[[WorkflowEngine, argparse.Namespace], Awaitable[int]]


def _handle(args: argparse.Namespace, command: Command) -> int:
    async def main() -> int:
        config = config_from_args(args)
        async with config.open_filesystem() as fs:
            engine = WorkflowEngine(fs, agent=config.name)
            return await command(engine.for_user(args.user) if args.user else engine, args)

    return anyio.run(main)


async def _package(args: argparse.Namespace) -> SkillPackage:
    """The skill folder at the path given, else the merged skill of that name (user layer included)."""
    if args.skill.is_dir():
        return await SkillPackage.from_directory(args.skill)
    async with harness_from_args(args) as agent:
        plan = await agent.prepare(context_from_args(args))
        return await package_for(resolve_workflow(plan, str(args.skill), workspace=agent.filesystem))


async def _run(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    package = await _package(args)
    _, problems = check_workflow(package.files, name=package.name)
    if not args.json:
        for problem in problems:
            print(escape_line(f"{problem.severity}: {problem.location}: {problem.message}"))
    run = await engine.start(package, run_id=args.run_id, inputs=_pairs(args.input, "--input"))
    return _print_run(run, args)


async def _continue(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    if args.decision is not None:
        if args.status is not None or args.confirm is not None:
            raise SystemExit(f"harness engine continue: --{args.decision} goes alone (no --status or --confirm)")
        return _print_run(await engine.resolve(args.run_id, args.decision, note=args.summary), args)
    if args.status is None and args.confirm is None:
        raise SystemExit(
            "harness engine continue: give --status (with --summary) and/or --confirm, or one of --retry, --skip, --abort"
        )
    outcome = None
    if args.status is not None:
        outcome = Outcome(
            status=args.status,
            summary=args.summary,
            outcome_id=args.outcome_id,
            artifacts=_pairs(args.artifact, "--artifact"),
            state={k: _json_value(v) for k, v in _pairs(args.state, "--state").items()},
            to_state=args.to_state,
            schema_version=args.schema_version,
        )
    run = await engine.resume(args.run_id, outcome, confirm=args.confirm)
    return _print_run(run, args)


async def _check(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    report: CheckReport = await engine.check(args.run_id, args.scope)
    if args.json:
        print_json(
            {
                "scope": report.scope,
                "passed": report.passed,
                "results": [{"id": r.id, "passed": r.passed, "detail": r.detail} for r in report.results],
            }
        )
    else:
        for result in report.results:
            print(escape_line(f"{'pass' if result.passed else 'FAIL'}  {result.id}: {result.detail}"))
        verdict = "all passed" if report.passed else f"failing: {', '.join(report.failed)}"
        print(escape_line(f"{args.scope} checks: {verdict} ({len(report.results)} check(s))"))
        if not report.passed:
            print(escape_line(f"Next: {_hint(await engine.inspect(args.run_id), args)}"))
    return 0 if report.passed else 1


async def _show(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    run = await engine.inspect(args.run_id)
    if args.format == "comet":
        events = [comet_event(event) for event in await engine.events(args.run_id)]
        print_json({**_comet_run(run), "events": events})
        return 0
    if args.events and not args.json:
        for event in await engine.events(args.run_id):
            print(f"{event.seq:>4} {event.at} {event.type} {json.dumps(dict(event.data), ensure_ascii=True)}")
    return _print_run(run, args, exit_on_failure=False)


async def _upgrade(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    return _print_run(await engine.upgrade(args.run_id, await _package(args)), args)


async def _cancel(engine: WorkflowEngine, args: argparse.Namespace) -> int:
    return _print_run(await engine.cancel(args.run_id, args.reason), args, exit_on_failure=False)


def _print_run(run: Run, args: argparse.Namespace, *, exit_on_failure: bool = True) -> int:
    hint = _hint(run, args)
    if args.json:
        document = run_to_json(run)
        document.pop("outbox")
        print_json({**document, "comet": _comet_run(run), "next": hint})
    else:
        where = f" at step {run.current_step}" if run.current_step and not run.done else ""
        print(escape_line(f"run {run.run_id} ({run.skill}): {run.status}{where}, iteration {run.iteration}"))
        if run.domain_state is not None:
            print(escape_control(f"domain state: {run.domain_state}"))
        if run.reason:
            print(escape_control(f"reason: {run.reason}"))
        print(escape_control(f"Next: {hint}"))
    return 1 if exit_on_failure and run.status == "failed" else 0


def _comet_run(run: Run) -> dict[str, Any]:
    """The run's state in Comet's vocabulary."""
    return {
        "runId": run.run_id,
        "skill": run.skill,
        "status": comet_status(run),
        "step": run.current_step,
        "state": run.domain_state,
        "reason": run.reason,
    }


def _hint(run: Run, args: argparse.Namespace) -> str:
    """One sentence (with a command to copy) saying what to do next."""
    scope = [f"{flag} {shlex.quote(str(value))}" for flag, value in _scope(args)]
    base = " ".join(["harness engine continue --run-id", shlex.quote(run.run_id), *scope])
    if run.status == "completed":
        return "nothing: the run is completed."
    if run.status == "cancelled":
        return "nothing: the run was cancelled."
    if run.status == "failed":
        return "nothing can resume a failed run; fix the cause and start a new run with `harness engine run`."
    if run.blocked is not None:
        blocked = run.blocked
        if blocked.kind == "confirmation":
            return f"{blocked.reason}. Confirm with `{base} --confirm {blocked.action.id}` or cancel with `harness engine cancel --run-id {run.run_id}`."
        if blocked.kind == "retries":
            return f"blocked: {blocked.reason}. Decide with `{base} --retry`, `{base} --skip` or `{base} --abort` (add --summary '...' to record why)."
        return f"blocked: {blocked.reason}. Upgrade the skill with `harness engine upgrade --run-id {run.run_id} SKILL` or cancel with `harness engine cancel --run-id {run.run_id}`."
    pending = run.pending
    if pending is None:
        return "propose the next action of this adaptive run (the workflow tools or `WorkflowEngine.propose`)."
    report = f"`{base} --status succeeded|failed --summary '...' --outcome-id {pending.id}`"
    return f"{describe_action(pending)} — then report the outcome with {report}."


def _scope(args: argparse.Namespace) -> list[tuple[str, object]]:
    """The options that locate the run, to repeat in the next command."""
    store = redact_url(args.store) if args.store else None  # the password is the operator's to add
    named = [("--config", args.config), ("--workspace", args.workspace), ("--fs", args.fs), ("--store", store)]
    if args.config is None and args.workspace is None:  # the default ./workspace, spelled out
        named[1] = ("--workspace", "workspace")
    return [(flag, value) for flag, value in [*named, ("--user", args.user)] if value]


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"harness engine: {flag} needs KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text

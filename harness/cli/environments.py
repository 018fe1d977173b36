"""``harness skills env``: what Python packages skills need, from where, and their environments;
``--gc`` reclaims those no skill needs any more."""

from __future__ import annotations

import argparse

import anyio

from harness.cli.common import JSON_OPTION, WORKSPACE_OPTIONS, context_from_args, harness_from_args, print_json
from harness.errors import ConfigError
from harness.pipeline.environments import EnvironmentManager, SkillEnvironment
from harness.pipeline.reclaim import DEFAULT_RETENTION, Reclaimed
from harness.terminal import echo

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``skills env``."""
    env = commands.add_parser(
        "env",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="the Python packages skills need and the state of their environments",
        description="Per skill (or SKILL): its requirements and where each comes from (pep723, requirements.txt, "
        "pyproject.toml, operator, inferred), the environment's hash and state (none, untrusted, missing, "
        "building, ready, failed). Exit 1 when a requirement is refused, a build failed or a check found a "
        "problem. With --gc: remove the environments neither these skills nor a running agent need that have "
        "been unneeded for the retention, and what interrupted builds and reclamations left. Needs an "
        "environments: section in harness.yaml.",
    )
    env.add_argument("skill", nargs="?", metavar="SKILL", help="skill id or name (default: every skill)")
    env.add_argument("--build", action="store_true", help="build missing environments now, retrying failed ones")
    env.add_argument(
        "--check",
        action="store_true",
        help="check that the shell's python3 finds every required package and that no file changed since the build",
    )
    env.add_argument("--gc", action="store_true", help="reclaim the environments no skill needs any more")
    env.add_argument(
        "--retention",
        type=float,
        metavar="DAYS",
        help="with --gc: keep unneeded environments younger than this (default: environments.retention_days, "
        f"else {DEFAULT_RETENTION / 86400:g}; 0 removes every unneeded one)",
    )
    env.set_defaults(handler=_env)


def _env(args: argparse.Namespace) -> int:
    if args.gc and (args.skill or args.build or args.check):
        raise ConfigError("--gc reclaims for every skill: it takes no SKILL, --build or --check")
    if args.retention is not None and (not args.gc or not args.retention >= 0):
        raise ConfigError("--retention goes with --gc and is a number of days (0 or more)")

    async def main() -> int:
        async with harness_from_args(args) as agent:
            manager = agent.pipeline.environments
            if manager is None:
                raise ConfigError("skill environments are off: add an environments: section to harness.yaml")
            plan = await agent.pipeline.prepare(context_from_args(args), stage=False)
            skills = (
                [plan.invoke(args.skill)] if args.skill else sorted(plan.skills.values(), key=lambda s: s.skill.name)
            )
            needs = await manager.discover(skills)
            await manager.look(needs.values())
            if args.gc:
                return await _gc(args, manager, {need.key for need in needs.values() if need.key})
            if args.build:
                for need in needs.values():
                    if manager.state(need)[0] in ("missing", "failed"):
                        await manager.build(need)
            checks = {k: await manager.check(need) for k, need in needs.items()} if args.check else {}
            rows = [_row(manager, need, checks.get(need.skill_id)) for need in needs.values()]
            if args.json:
                print_json(rows)
            else:
                for need in needs.values():
                    _print(manager, need, checks.get(need.skill_id, ()))
        failed = any(row["state"] == "failed" or row["problems"] or row.get("check") for row in rows)
        return 1 if failed else 0

    return anyio.run(main)


async def _gc(args: argparse.Namespace, manager: EnvironmentManager, keep: set[str]) -> int:
    """Reclaim what neither ``keep`` (this configuration's skills) nor a live lease needs."""
    days = args.retention
    if days is None:
        retention = manager.options.retention if manager.options.retention is not None else DEFAULT_RETENTION
    else:
        retention = days * 86400.0
    result = await manager.reclaim(retention=retention, keep=keep)
    if args.json:
        print_json({**result.as_dict(), "retention_days": retention / 86400})
    else:
        _print_reclaimed(result, retention)
    return 0


def _print_reclaimed(result: Reclaimed, retention: float) -> None:
    echo(f"removed {len(result.removed)} environment(s), {result.freed} bytes")
    for key in result.removed:
        echo(f"    removed {key}")
    echo(f"kept {len(result.needed)} needed, {len(result.kept)} unneeded for less than {retention / 86400:g} day(s)")
    for key in result.kept:
        echo(f"    kept {key}")


def _row(manager: EnvironmentManager, need: SkillEnvironment, check: tuple[str, ...] | None) -> dict[str, object]:
    state, reason = manager.state(need)
    row: dict[str, object] = {**need.as_dict(), "state": state, "reason": reason, "environment": _folder(manager, need)}
    if check is not None:
        row["check"] = list(check)
    return row


def _folder(manager: EnvironmentManager, need: SkillEnvironment) -> str | None:
    return manager.shell_folder(need.key) if need.key and manager.state(need)[0] == "ready" else None


def _print(manager: EnvironmentManager, need: SkillEnvironment, check: tuple[str, ...]) -> None:
    state, reason = manager.state(need)
    echo(f"{need.skill_id:<40} {state:<9} {(need.key or '')[:12]}".rstrip())
    for requirement in need.requirements:
        echo(f"    {requirement.text:<30} {requirement.source} {requirement.origin}".rstrip())
    for problem in need.problems:
        echo(f"    refused: {problem}")
    if need.unknown_imports:
        echo(f"    unknown imports: {', '.join(need.unknown_imports)}")
    if reason:
        echo(f"    {state}: {reason}")
    folder = _folder(manager, need)
    if folder:
        echo(f"    {folder}")
    for problem in check:
        echo(f"    check: {problem}")

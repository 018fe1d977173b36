"""``harness skills ...``: validate, list, search, show, prompt and stage skills."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import anyio

from filesystems import CACHE_DIR, redact_url
from harness.agent import Harness
from harness.cli import add, environments, learning, lock
from harness.cli.common import (
    DEFAULT_USER,
    JSON_OPTION,
    WORKSPACE_OPTIONS,
    config_from_args,
    context_from_args,
    harness_from_args,
    print_json,
)
from harness.diagnostics import Diagnostic
from harness.pipeline.lock import DYNAMIC, by_listing, content_digest, listing_digest
from harness.pipeline.merge import Shadowing
from harness.pipeline.plan import ResolvedSkill, TurnPlan
from harness.pipeline.staging import StageItem
from harness.skills.arguments import argument_hint
from harness.skills.validation import ValidationReport, discover_skill_dirs, validate_skill_dir
from harness.terminal import echo, escape_line
from harness.tools.search import MAX_RESULTS, search_plan
from harness.tools.skills import load_skill_file

__all__ = ["register"]

#: Printed after a files-root whose folder ``harness skills stage`` (or the first turn) writes.
NOT_STAGED = " (not staged yet: run `harness skills stage`)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``skills`` command group."""
    parser = sub.add_parser("skills", help="validate, list, show and stage skills")
    commands = parser.add_subparsers(dest="skills_command", metavar="SUBCOMMAND", required=True)

    validate = commands.add_parser(
        "validate",
        parents=[JSON_OPTION],
        help="check skill folders against the Agent Skills specification",
        description="Validate skill folders (or folders of skill folders). Exit 0 when valid, 1 on any error.",
    )
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a skill folder or a folder of them")
    mode = validate.add_mutually_exclusive_group()
    mode.add_argument(
        "--strict", dest="strict", action="store_true", default=True, help="the specification's rules (default)"
    )
    mode.add_argument("--lenient", dest="strict", action="store_false", help="what runtime loading would do")
    validate.set_defaults(handler=_validate)

    listing = commands.add_parser(
        "list",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="the merged skills a user sees, with shadowing and diagnostics",
        description=f"The merged skills --user (default {DEFAULT_USER}) sees, with shadowing and diagnostics. "
        "Read-only: market files are not staged (a files-root not staged yet says so).",
    )
    listing.set_defaults(handler=lambda args: _with_plan(args, _list), prints_diagnostics=True)

    search = commands.add_parser(
        "search",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="find skills by keywords, as the search_skills tool does",
        description=f"The skills --user (default {DEFAULT_USER}) may load that best match QUERY, best first, "
        "ranked over name, description and when_to_use.",
    )
    search.add_argument("query", metavar="QUERY", help="keywords to look for")
    search.add_argument("--limit", type=int, default=10, help=f"the most results (at most {MAX_RESULTS})")
    search.set_defaults(handler=lambda args: _with_plan(args, _search), prints_diagnostics=True)

    prompt = commands.add_parser(
        "prompt",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="print the catalog block exactly as the model sees it",
        description=f"The catalog block --user (default {DEFAULT_USER}) would get in the system prompt, "
        "exactly as the model sees it; the turn's errors (a market down) go to stderr.",
    )
    prompt.set_defaults(handler=lambda args: _with_plan(args, _prompt), prints_diagnostics=True)

    stage = commands.add_parser(
        "stage",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help=f"stage market and global skill files into {CACHE_DIR}",
        description=f"Stage market and global skill files into {CACHE_DIR}. Staging is the same for every "
        "user; --user only chooses whose turn is prepared afterwards, so its plan's diagnostics are reported too.",
    )
    stage.add_argument("--verify", action="store_true", help="re-hash staged files and repair what changed")
    stage.set_defaults(handler=_stage, prints_diagnostics=True)

    show = commands.add_parser(
        "show",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="what load_skill_through_path returns for a skill",
        description=f"One file of a skill --user (default {DEFAULT_USER}) may load, paged by lines, as the "
        "load_skill_through_path tool returns it; the turn's errors (a market down) go to stderr.",
    )
    show.add_argument("name", help="skill id or name")
    show.add_argument("--path", default="SKILL.md", help="the file inside the skill's folder (default SKILL.md)")
    show.add_argument("--offset", type=int, default=1, metavar="LINE", help="the first line to print (default 1)")
    show.add_argument("--limit", type=int, metavar="LINES", help="how many lines to print (default: the rest)")
    show.add_argument(
        "--origin",
        action="store_true",
        help="print where the skill comes from (layer, source, location), its market's version and its digest",
    )
    show.set_defaults(handler=lambda args: _with_plan(args, _show), prints_diagnostics=True)

    add.register(commands)
    lock.register(commands)
    environments.register(commands)
    learning.register(commands)


def _validate(args: argparse.Namespace) -> int:
    reports: list[ValidationReport] = []
    for path in args.paths:
        found = discover_skill_dirs(path)
        if found.problems:
            # What discovery met on the way, as the runtime reports it: unreadable parts are errors.
            reports.append(
                ValidationReport(
                    path=str(path),
                    name=None,
                    errors=tuple(p for p in found.problems if p in found.failures),
                    warnings=tuple(p for p in found.problems if p not in found.failures),
                )
            )
        reports += [validate_skill_dir(folder, strict=args.strict) for folder in found.folders]
    if args.json:
        print_json([report.as_dict() for report in reports])
    elif not reports:
        echo(f"no skill folders found in {', '.join(str(path) for path in args.paths)}")
    else:
        for report in reports:
            status = "ok" if report.ok else "invalid"
            echo(f"{report.path}: {status}" + (f" ({report.name})" if report.name else ""))
            for message in report.errors:
                echo(f"  error: {message}")
            for message in report.warnings:
                echo(f"  warning: {message}")
    return 0 if all(report.ok for report in reports) else 1


def _with_plan(
    args: argparse.Namespace, action: Callable[[argparse.Namespace, Harness, TurnPlan], Awaitable[int]]
) -> int:
    """Run ``action`` on one planned turn; exit 1 when planning it produced any ``error``
    diagnostic (a market down, a broken skill), even though the turn itself was served.
    Read-only: the turn is planned without staging, so the workspace is not written."""

    async def main() -> int:
        async with harness_from_args(args) as agent:
            plan = await agent.pipeline.prepare(context_from_args(args), stage=False)
            code = await action(args, agent, plan)
            return code or _exit_code(plan.diagnostics)

    return anyio.run(main)


def _staged(agent: Harness, skill: ResolvedSkill) -> bool | None:
    """Whether a market or global skill's folder is in the staging cache yet (``None``: the
    skill is not staged, it is shown in place)."""
    if not skill.source.staged:
        return None
    host = agent.filesystem.host_path(f"{CACHE_DIR}/{StageItem(entry=skill.entry, reader=skill.source).key}")
    return host is not None and host.is_dir()


async def _list(args: argparse.Namespace, agent: Harness, plan: TurnPlan) -> int:
    skills = [
        {
            "name": s.skill.name,
            "description": s.skill.description,
            "skill_id": s.skill.skill_id,
            "catalog_id": f"{s.skill.name}_{plan.labels.label(s.skill.source)}",
            "layer": s.skill.layer.value,
            "source": s.skill.source,
            "location": s.skill.location,
            "origin": {"server": s.source.source, "uri": s.entry.origin} if s.entry.origin else None,
            "files_root": s.files_root,
            "staged": _staged(agent, s),
            "link": s.entry.link,
            "hidden": s.skill.hidden,
            "argument_hint": argument_hint(s.skill.metadata),
        }
        for s in sorted(plan.skills.values(), key=lambda s: s.skill.name)
    ]
    if args.json:
        print_json(
            {
                "skills": skills,
                "shadowed": [{**s.as_dict(), "load_id": _load_id(plan, s)} for s in plan.shadowed],
                "diagnostics": _as_dicts(plan),
            }
        )
        return 0
    if not skills:
        echo(f"no skills found for user {context_from_args(args).user_id} in {_sources(args)}")
    for skill in skills:
        hidden = " (hidden)" if skill["hidden"] else ""
        short = f" (catalog: {skill['catalog_id']})" if skill["catalog_id"] != skill["skill_id"] else ""
        echo(f"{skill['name']:<28} {skill['layer']:<9} {skill['skill_id']}{short}{hidden}")
        link = f" (link to {skill['link']})" if skill["link"] else ""
        pending = NOT_STAGED if skill["staged"] is False and skill["files_root"] else ""
        if pending and skill["origin"]:
            pending = " (staged when first loaded or run)"
        echo(f"    {skill['files_root'] or skill['location']}{link}{pending}")
        origin = skill["origin"]
        if isinstance(origin, dict):
            echo(f"    from MCP server {origin['server']}: {escape_line(origin['uri'])}")
        if skill["argument_hint"]:
            echo(f"    /skill:{skill['name']} {skill['argument_hint']}")
    for shadow in plan.shadowed:
        load_id = _load_id(plan, shadow)
        how = f"still loads by id {load_id}" if load_id else "no id loads it (it has the same id as the one shown)"
        echo(escape_line(f"shadowed: {shadow.diagnostic().message}; {how}"))
    for diagnostic in plan.diagnostics:
        if diagnostic.code != "shadowed":
            echo(escape_line(str(diagnostic)))
    return 0


def _load_id(plan: TurnPlan, shadow: Shadowing) -> str | None:
    """The full id that still loads the skill ``shadow`` hid, or ``None`` when no id names it
    (a same-id duplicate, or a skill this user's visibility filters leave out)."""
    loser = shadow.loser.skill.skill_id
    found = plan.shadowed_skills.get(loser)
    return loser if found is not None and found.entry is shadow.loser else None


async def _search(args: argparse.Namespace, agent: Harness, plan: TurnPlan) -> int:
    _report_errors(plan)
    matches = await search_plan(plan, args.query, args.limit)
    if args.json:
        print_json([match.as_dict() for match in matches])
        return 0
    for match in matches:
        echo(f"{match.name:<28} {match.skill_id}")
        echo(f"    {escape_line(match.description)}")
        if match.files_root:
            echo(f"    {match.files_root}")
    if not matches:
        echo(f"no skill matches {args.query!r}")
    return 0


async def _prompt(args: argparse.Namespace, agent: Harness, plan: TurnPlan) -> int:
    if args.json:  # the errors are in the document
        print_json({"catalog": plan.catalog, "skills": sorted(plan.skills), "diagnostics": _as_dicts(plan)})
    else:
        _report_errors(plan)
        echo(plan.catalog)
    return 0


async def _show(args: argparse.Namespace, agent: Harness, plan: TurnPlan) -> int:
    _report_errors(plan)
    found = plan.find(args.name) or plan.invoke(args.name)
    origin = await _origin(found)
    if args.origin and not args.json:
        for key, value in origin.items():
            echo(escape_line(f"{key + ':':<10} {value if value is not None else '-'}"))
        return 0
    text = await load_skill_file(plan, found.skill.skill_id, args.path, args.offset, args.limit)
    if args.json:
        print_json(
            {
                "skill_id": found.skill.skill_id,
                "name": found.skill.name,
                "path": args.path,
                "offset": args.offset,
                "limit": args.limit,
                "text": text,
                **origin,
            }
        )
    else:
        echo(text, end="")
    return 0


async def _origin(found: ResolvedSkill) -> dict[str, str | None]:
    """Where a skill comes from, its source's version (a git market's commit) and its digest
    (as ``harness.lock`` records it: ``dynamic`` for a dynamic skill, the listing digest of a
    listed MCP skill; the files of neither are read for it)."""
    if found.entry.dynamic:
        digest = DYNAMIC
    elif by_listing(found.entry):
        digest = listing_digest(found.entry.digest, found.entry.skill.raw)
    else:
        paths = [found.entry.skill.skill_md_name, *await found.list_files()]
        digest = content_digest(await found.source.read_files(found.entry, paths))
    return {
        "origin": f"{found.skill.layer.value} {found.skill.source}",
        "location": found.skill.location,
        "version": found.source.version,
        "digest": digest,
    }


def _report_errors(plan: TurnPlan) -> None:
    """The plan's errors on stderr, for the commands whose stdout is something else (a catalog,
    a file): the exit code 1 they cause then comes with its reason."""
    for diagnostic in plan.diagnostics:
        if diagnostic.severity == "error":
            echo(escape_line(f"harness: {diagnostic}"), file=sys.stderr)


def _as_dicts(plan: TurnPlan) -> list[dict[str, str]]:
    return [d.as_dict() for d in plan.diagnostics if d.code != "shadowed"]


def _sources(args: argparse.Namespace) -> str:
    """Where skills were looked for, for the line an empty listing prints."""
    config = config_from_args(args)
    folders = config.global_skills_dir
    folders = (folders,) if isinstance(folders, Path) else folders or ()
    globals_ = ", ".join(str(path) for path in folders) or "none"
    markets = ", ".join(redact_url(url) for url in config.repositories) or "none"
    return f"the workspace {config.workspace} (global folders: {globals_}; markets: {markets})"


def _stage(args: argparse.Namespace) -> int:
    async def main() -> int:
        agent: Harness = harness_from_args(args)
        async with agent:
            result = await agent.pipeline.stage(verify=args.verify)
            diagnostics = list(result.diagnostics)
            if args.user:  # staging is shared; the user only adds what their turn would report
                plan = await agent.prepare(context_from_args(args))
                diagnostics += [d for d in plan.diagnostics if d not in diagnostics]
        if args.json:
            print_json({**result.as_dict(), "diagnostics": [d.as_dict() for d in diagnostics]})
        else:
            echo(f"written {result.written}, unchanged {result.unchanged}, removed {result.removed}")
            for diagnostic in diagnostics:
                echo(escape_line(str(diagnostic)))
        return _exit_code(diagnostics)

    return anyio.run(main)


def _exit_code(diagnostics: Iterable[Diagnostic]) -> int:
    return 1 if any(d.severity == "error" for d in diagnostics) else 0

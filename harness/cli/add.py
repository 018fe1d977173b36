"""``harness skills add SOURCE NAME``: copy one skill from a market into a workspace or a user's area.

Every file is copied as the market serves it on use: an MCP server's skill is fetched whole (its
real ``SKILL.md``, not the stand-in its listing makes), each file verified against its listed
digest. A dynamic MCP skill has no digests: it is copied with every file its server's directory
reads show (only its ``SKILL.md`` when the server offers none), as made on this read, and the
output marks it unverified.

Nothing is written outside the skill's folder: a skill whose listing holds a path that is not a
clean relative one (``..``, absolute, a backslash, ``.git``) is refused whole, links are never
part of a listing, and every write goes through the filesystem, which refuses a target that
resolves outside the workspace (a ``skills/`` folder or an existing skill that is a link out).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import anyio

from filesystems import AbstractFilesystem, redact_url, relative_path_problem
from harness.cli.common import JSON_OPTION, WORKSPACE_OPTIONS, filesystem_from_args, print_json
from harness.errors import ConfigError, SkillError
from harness.pipeline.pipeline import SKILLS_DIR
from harness.pipeline.staging import staged_mode
from harness.skills.frontmatter import FrontmatterError, split_frontmatter
from harness.skills.validation import validate_skill_dir
from harness.terminal import escape_control
from repositories import RepositoryError, SkillBundle, SkillRepository, open_repository

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``skills add`` to the ``skills`` command group."""
    add = commands.add_parser(
        "add",
        parents=[WORKSPACE_OPTIONS, JSON_OPTION],
        help="copy a skill from a market into the workspace's (or --user's) skills/",
        description="Copy skill NAME from the market SOURCE (git+file://..., dir:..., pkg:..., mysql://..., "
        "mcp+https://...) into the workspace's skills/ folder, or --user's. The skill is validated first (strict); "
        "an existing skill of that name is kept unless --force. An MCP server's dynamic skill, which has no "
        "digests to verify, is copied as served now and reported as unverified.",
    )
    add.add_argument("source", metavar="SOURCE", help="market URL")
    add.add_argument(
        "name",
        metavar="NAME",
        help="the skill's folder or name in the market, or its path there (team-a/dupe) when several share a name",
    )
    add.add_argument("--force", action="store_true", help="replace an existing skill of that name")
    add.set_defaults(handler=_add)


def _add(args: argparse.Namespace) -> int:
    segments = args.name.split("/")
    if not all(segment and not segment.startswith(".") for segment in segments):
        raise SkillError(
            f"skill name {args.name!r} must be one folder name, or the skill's path in the market "
            "(folder names joined by '/', none empty or starting with '.')"
        )
    folder = segments[-1]
    try:
        repository = open_repository(args.source)
    except (RepositoryError, ValueError) as exc:
        raise ConfigError(f"skills add: {exc}") from None

    async def main() -> tuple[str, SkillBundle, dict[str, tuple[bytes, int]]]:
        filesystem = filesystem_from_args(args)
        async with filesystem, repository:
            try:
                target = filesystem.scoped(args.user) if args.user else filesystem
            except ValueError as exc:
                raise ConfigError(f"--user: {exc}") from None
            bundle, files = await _fetch(repository, args.name)
            _validate(folder, bundle, files)
            return await _write(target, f"{SKILLS_DIR}/{folder}", files, force=args.force), bundle, files

    where, bundle, files = anyio.run(main)
    unverified = _unverified(bundle, len(files), repository.source) if bundle.dynamic else None
    if args.json:
        print_json(
            {
                "added": folder,
                "to": where,
                "source": redact_url(args.source),
                "files": sorted(files),
                "unverified": unverified,
            }
        )
    else:
        print(f"added {escape_control(folder)} to {escape_control(where)}")
        if unverified is not None:
            print(escape_control(unverified))
    return 0


def _unverified(bundle: SkillBundle, count: int, source: str) -> str:
    """What the output says of a dynamic skill: nothing of it could be verified."""
    return (
        f"unverified: {bundle.folder!r} is a dynamic skill of {source!r} ({bundle.origin or bundle.location}): "
        f"its server publishes no digests, so its {count} file(s) were copied as made on this read, unchecked "
        "(the files its server's directory reads show; only the SKILL.md of a server that offers none); "
        "review them before use"
    )


async def _fetch(repository: SkillRepository, name: str) -> tuple[SkillBundle, dict[str, tuple[bytes, int]]]:
    """The bundle called ``name`` (its path in the market, its folder, else its frontmatter name;
    several of one name are refused, naming their paths) with every file's bytes and mode: its
    real main file and every file of its whole listing (for a dynamic MCP skill, what its server's
    directory reads find), read and verified as the market reads them on use."""
    snapshot = await repository.snapshot()
    if snapshot.error is not None:
        raise snapshot.error
    bundles = snapshot.bundles
    found = (
        [b for b in bundles if b.key == name]
        if "/" in name
        else [b for b in bundles if b.folder == name] or [b for b in bundles if _declared_name(b) == name]
    )
    if not found:
        offered = ", ".join(sorted(b.key for b in bundles)) or "none"
        raise SkillError(f"{repository.source!r} has no skill {name!r}; it offers: {offered}")
    if len(found) > 1:
        paths = ", ".join(sorted(b.key for b in found))
        raise SkillError(
            f"{repository.source!r} has {len(found)} skills named {name!r} ({paths}); name one by its path"
        )
    bundle = found[0]
    if bundle.link is not None:
        raise SkillError(f"skill {name!r} in {repository.source!r} is a link to {bundle.link!r}; links are not copied")
    listed = (await repository.list_files(bundle.key)).files
    unsafe = [(f.path, problem) for f in listed if (problem := relative_path_problem(f.path))]
    if unsafe:
        path, problem = unsafe[0]
        raise SkillError(
            f"skill {name!r} in {repository.source!r} lists {len(unsafe)} file path(s) that would not stay inside its "
            f"folder, such as {path!r} (it {problem}); it is not added"
        )
    main = [bundle.skill_md_name] if bundle.on_demand else []
    data = await repository.read_files(bundle.key, [*main, *(f.path for f in listed)])
    files = {bundle.skill_md_name: (data.get(bundle.skill_md_name, bundle.skill_md), 0o644)}
    for file in listed:
        files[file.path] = (
            data[file.path],
            staged_mode(file.path, data[file.path], file.mode),
        )
    return bundle, files


def _declared_name(bundle: SkillBundle) -> object:
    try:
        return split_frontmatter(bundle.skill_md).fields.get("name")
    except FrontmatterError:
        return None


def _validate(name: str, bundle: SkillBundle, files: dict[str, tuple[bytes, int]]) -> None:
    """Strict validation of the folder as it will be written; refuses on any error."""
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp, name)
        folder.mkdir()
        (folder / bundle.skill_md_name).write_bytes(files[bundle.skill_md_name][0])
        report = validate_skill_dir(folder, strict=True)
    if not report.ok:
        problems = "; ".join(report.errors)
        raise SkillError(f"skill {name!r} from {bundle.location} is not valid: {problems}")


async def _write(fs: AbstractFilesystem, folder: str, files: dict[str, tuple[bytes, int]], *, force: bool) -> str:
    """Write ``files`` below ``folder`` through the filesystem (its path rules apply)."""
    if await fs.exists(folder):
        if not force:
            raise SkillError(f"{folder} already exists; pass --force to replace it")
        await fs.delete(folder)
    for path, (data, mode) in files.items():
        await fs.write_bytes(f"{folder}/{path}", data, mode=mode)
    host = fs.host_path(folder)
    return str(host) if host is not None else folder

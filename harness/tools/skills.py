"""The skill tools a turn offers the model: ``load_skill_through_path`` and ``execute_shell_command``.

Both are bound to one :class:`~harness.pipeline.TurnPlan`, so they only ever serve the calling
user's turn: a filtered or another user's skill is "not found".
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from filesystems import CommandResult, PathEscapeError, loose_path_parts, loose_path_problem
from harness.context import ACTION_ID_ENV, RuntimeContext
from harness.errors import SkillNotFound
from harness.models import Message
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from harness.pipeline.plan import CommandEnvironments, EnvironmentNotReady, EnvironmentWait
from harness.tools.context import current_tool_context
from harness.tools.function import Tool, tool_from_function
from harness.tools.paging import MAX_LINES, MAX_PAGE_BYTES, looks_binary, page_lines
from harness.tools.skill_text import OUTPUT_DIR_ENV, SKILL_DIR_ENVS, render_skill_text
from repositories import RepositoryError

if TYPE_CHECKING:
    from harness.pipeline.plan import ResolvedSkill, TurnPlan

__all__ = [
    "MAX_LINES",
    "MAX_PAGE_BYTES",
    "UsageHooks",
    "load_skill_file",
    "read_skill_bytes",
    "render_skill_file",
    "skill_tools",
]


class UsageHooks(Protocol):
    """Receives skill usage: a *view* is a load through the tool, a *use* a shell command that
    references the skill's files-root. Both carry the real skill id."""

    async def record_view(self, skill_id: str, context: RuntimeContext) -> None: ...

    async def record_use(self, skill_id: str, context: RuntimeContext) -> None: ...


async def load_skill_file(
    plan: TurnPlan, skill_id: str, path: str = "SKILL.md", offset: int = 1, limit: int | None = None
) -> str:
    """The text of one file of a skill of ``plan``, paged by lines.

    Raises :class:`SkillNotFound` for an unknown skill and ``FileNotFoundError`` /
    ``PermissionError`` for a missing or unsafe path, each message listing the real paths.
    """
    resolved = _available(plan, skill_id)
    data = await read_skill_bytes(resolved, path)
    return _page(data, await _clean_path(path, resolved), resolved, offset, limit)


async def render_skill_file(
    plan: TurnPlan,
    skill_id: str,
    path: str = "SKILL.md",
    offset: int = 1,
    limit: int | None = None,
    *,
    shell: bool,
) -> str:
    """One file of a skill of ``plan`` as a model reads it: :func:`load_skill_file`'s page
    rendered by :func:`~harness.tools.skill_text.render_skill_text` (the header naming the
    skill's folder, placeholders resolved). ``shell`` says whether the model has the shell tool."""
    return render_skill_text(
        plan, _available(plan, skill_id), await load_skill_file(plan, skill_id, path, offset, limit), shell=shell
    )


def _available(plan: TurnPlan, skill_id: str) -> ResolvedSkill:
    """The skill ``plan`` serves under ``skill_id``; :class:`SkillNotFound` listing the others."""
    resolved = plan.find(skill_id)
    if resolved is None:
        raise SkillNotFound(
            f"skill {skill_id!r} is not available in this turn; available: "
            + (", ".join(sorted(s.skill.skill_id for s in plan.available())) or "none")
        )
    return resolved


async def read_skill_bytes(resolved: ResolvedSkill, path: str = "SKILL.md") -> bytes:
    """The bytes of one file of ``resolved`` (``SKILL.md`` is the verbatim main file), read
    through its layer. Raises ``FileNotFoundError`` / ``PermissionError`` for a missing or
    unsafe path, each message listing the real paths. The main file of a skill served on demand
    (an MCP server's) is fetched and verified by its market (``ContentMismatch`` when it is not
    what the listing says)."""
    skill = resolved.skill
    clean = await _clean_path(path, resolved)
    if clean == skill.skill_md_name or (clean == "SKILL.md" and skill.skill_md_name == "skill.md"):
        if resolved.entry.on_demand:
            return (await resolved.source.read_files(resolved.entry, [skill.skill_md_name]))[skill.skill_md_name]
        return skill.raw
    if clean in skill.files or clean in await resolved.list_files():
        return (await resolved.source.read_files(resolved.entry, [clean]))[clean]
    raise FileNotFoundError(f"{skill.skill_id} has no file {clean!r}; {await _listing(resolved)}")


def skill_tools(
    plan: TurnPlan,
    *,
    usage: UsageHooks | None = None,
    on_load: Callable[[str, str], Awaitable[None]] | None = None,
    on_shell: Callable[[str, CommandResult], Awaitable[None]] | None = None,
    on_wait: Callable[[EnvironmentWait], Awaitable[None]] | None = None,
    loaded: set[str] | None = None,
    history: Sequence[Message] | None = None,
    shell_timeout: float = 120.0,
    shell: bool = True,
    hidden: Callable[[], Sequence[str]] = tuple,
) -> list[Tool]:
    """The load tool, plus the shell tool when the user's filesystem has a shell and ``shell``
    is true (``False`` for callers that do not offer it: what the load tool says follows).

    ``loaded`` is the conversation's set of skill ids whose SKILL.md was already served: a
    second full load returns a short note instead of the body again, unless ``reload`` is set.
    With ``history`` (the conversation's messages before this turn), ids whose SKILL.md no
    longer appears in it as a load result — history trimming dropped it, or the file changed
    since — are first removed from ``loaded``, so their next load serves the body again.
    ``shell_timeout`` is the ceiling of the shell tool's ``timeout`` argument (the model may
    lower it, never raise it); the filesystem's own ceiling applies on top. ``hidden`` gives,
    when each command starts, the paths it must not see (see ``AbstractFilesystem.run``).
    A command of skills runs inside the plan's ``running`` (their environments, waited for when
    they are being built); ``on_wait`` hears of each wait. A command whose environments cannot
    be had is not run: the call fails with :class:`~harness.pipeline.plan.EnvironmentNotReady`.
    """
    offered = shell and plan.filesystem.has_shell
    if loaded is not None and history is not None:
        loaded.intersection_update(_shown(plan, loaded, history, shell=offered))

    async def load_skill_through_path(
        skillId: str, path: str = "SKILL.md", offset: int = 1, limit: int | None = None, reload: bool = False
    ) -> str:
        """Read a skill's instructions (SKILL.md) or one of its other files. The result starts
        with the skill's folder and how to run its commands.

        Args:
            skillId: The skill id, <name>_<source> as the catalog shows it (or the skill's name when unique).
            path: A path relative to the skill folder, e.g. "SKILL.md" or "references/guide.md".
            offset: The first line to return (1-based), to continue a long file.
            limit: The most lines to return (at most 2000).
            reload: Return SKILL.md again even if it was already loaded in this conversation.
        """
        resolved = plan.find(skillId)
        main = resolved is not None and await _clean_path(path, resolved) == resolved.skill.skill_md_name
        if main and resolved is not None and loaded is not None and offset == 1:
            if resolved.skill.skill_id in loaded and not reload:
                return (
                    f"{resolved.skill.skill_id}: SKILL.md is already loaded in this conversation "
                    "(see above); call again with reload=true to read it anew."
                )
        text = await render_skill_file(plan, skillId, path, offset, limit, shell=offered)
        if main and resolved is not None and plan.activate is not None:
            await plan.activate(resolved)  # an on-demand skill is staged when first loaded
        if main and resolved is not None and loaded is not None:
            loaded.add(resolved.skill.skill_id)
        if resolved is not None:
            if usage is not None:
                await usage.record_view(resolved.skill.skill_id, plan.context)
            if on_load is not None:
                await on_load(resolved.skill.skill_id, path)
        return text

    tools = [tool_from_function(load_skill_through_path, name=LOAD_TOOL)]
    if not offered:
        return tools

    async def execute_shell_command(
        command: str, cwd: str | None = None, timeout: float | None = None, skill: str | None = None
    ) -> str:
        """Run a shell command and return its exit code and output.

        Without skill it runs in the user's working folder. With skill it runs in that skill's
        folder, so a command runs as the skill's instructions write it ("python scripts/x.py",
        "./tool.sh", "python -m scripts.x"); the folder is read-only and first on PYTHONPATH,
        $SKILL_DIR names it, and $OUTPUT_DIR is the user's working folder: the user's files are
        there and outputs go there.

        Args:
            command: The command line, e.g. 'python scripts/convert.py "$OUTPUT_DIR/in.csv"'.
            cwd: A folder to run in: relative to the skill's folder with skill, else to the user's working folder.
            timeout: Seconds before the command is killed (at most the operator's limit).
            skill: The skill-id (or unique name) of the skill whose folder the command runs in.
        """
        call = current_tool_context()  # a workflow action's commands learn its id
        launch = _launch(plan, command, cwd, skill, call.action_id if call is not None else None)
        if plan.before_run is not None:
            for owner in launch.owners:
                await plan.before_run(owner)
        owners = launch.owners
        running = plan.running(owners) if plan.running is not None else nullcontext(CommandEnvironments.named(owners))
        async with running as environments:
            if on_wait is not None:
                for wait in environments.waits:
                    await on_wait(wait)
            if environments.refused is not None:
                raise EnvironmentNotReady(environments.refused)
            result = await plan.filesystem.run(
                command,
                cwd=launch.cwd,
                env=launch.env,
                timeout=_tool_timeout(timeout, shell_timeout),
                start_roots=launch.start_roots,
                prepend=launch.prepend(environments.folders),
                hidden=hidden(),
            )
        if usage is not None:
            for owner in launch.owners:
                await usage.record_use(owner.skill.skill_id, plan.context)
        if on_shell is not None:
            await on_shell(command, result)
        return format_command_result(result)

    tools.append(tool_from_function(execute_shell_command, name=SHELL_TOOL))
    return tools


@dataclass(frozen=True, kw_only=True)
class _Launch:
    """How one command of the shell tool runs: where, with what, and the skills it belongs to."""

    cwd: str | None
    env: dict[str, str]
    start_roots: tuple[str, ...]
    python_path: tuple[str, ...]
    owners: tuple[ResolvedSkill, ...]

    def prepend(self, environments: Mapping[str, str]) -> dict[str, list[str]]:
        """What goes first on ``PYTHONPATH`` and ``PATH``: the named skill's folder, then the
        owners' ``environments`` (skill id -> folder) in the owners' order."""
        folders = [environments[s.skill.skill_id] for s in self.owners if s.skill.skill_id in environments]
        return {"PYTHONPATH": [*self.python_path, *folders], "PATH": [f"{e}/bin" for e in folders]}


def _launch(plan: TurnPlan, command: str, cwd: str | None, skill: str | None, action_id: str | None) -> _Launch:
    """The launch of ``command``: in the folder of ``skill`` (``cwd`` then relative to it), else
    in the user's folder. The skills it belongs to — ``skill`` and every skill whose files-root
    the command names — get their environment first on ``PYTHONPATH`` and ``PATH`` (and their
    ``before_run`` check, their environments waited for and a recorded use, from the caller)."""
    env = {ACTION_ID_ENV: action_id} if action_id else {}
    named = None if skill is None else _available(plan, skill)
    owners = [s for s in plan.available() if s is not named and _names_folder(command, s.files_root)]
    start_roots: tuple[str, ...] = ()
    python_path: list[str] = []
    if named is not None:
        folder = named.files_root
        if folder is None:
            raise SkillNotFound(
                f"skill {named.skill.skill_id!r} has no folder this shell can see, so its commands cannot run here"
            )
        inside = _inside_skill(cwd or "", named)
        cwd, start_roots = (f"{folder}/{inside}" if inside else folder), (folder,)
        env |= {name: folder for name in SKILL_DIR_ENVS}
        env |= {OUTPUT_DIR_ENV: plan.filesystem.shell_path(""), "PYTHONDONTWRITEBYTECODE": "1"}
        python_path.append(folder)
        owners.insert(0, named)
    return _Launch(cwd=cwd, env=env, start_roots=start_roots, python_path=tuple(python_path), owners=tuple(owners))


def _inside_skill(cwd: str, resolved: ResolvedSkill) -> str:
    """``cwd`` as a folder below the skill's folder; :class:`PathEscapeError` for anything that
    is absolute, climbs out or holds NUL."""
    if loose_path_problem(cwd):
        raise PathEscapeError(
            f"cwd {cwd!r} must be a folder inside the folder of {resolved.skill.skill_id} "
            "(relative, without '..'); leave it out to run in the skill's folder"
        )
    return "/".join(loose_path_parts(cwd))


def _names_folder(command: str, folder: str | None) -> bool:
    """Whether ``command`` names ``folder`` or a path below it (not a longer sibling's name)."""
    if not folder or folder not in command:  # the cheap test first: a turn may serve many skills
        return False
    return re.search(re.escape(folder) + r"(?=/|[\s'\"`;|&)]|\Z)", command) is not None


def _shown(plan: TurnPlan, skill_ids: set[str], history: Sequence[Message], *, shell: bool) -> set[str]:
    """The ``skill_ids`` whose SKILL.md, as the load tool serves it now (``shell``: with the
    shell tool offered), is a tool result in ``history``."""
    results = {message.content for message in history if message.role == "tool"}
    shown = set()
    for skill_id in skill_ids:
        resolved = plan.by_id(skill_id)
        if resolved is None:
            continue
        skill = resolved.skill
        if resolved.entry.on_demand:
            # Its SKILL.md is fetched on use, not held here: a result that starts as a load of it
            # does (its frontmatter was verified against the listed one, so it opens with "---").
            opening = render_skill_text(plan, resolved, "---", shell=shell)
            if any(result.startswith(opening) for result in results):
                shown.add(skill_id)
            continue
        try:
            body = render_skill_text(
                plan, resolved, _page(skill.raw, skill.skill_md_name, resolved, 1, None), shell=shell
            )
        except (UnicodeDecodeError, ValueError):
            continue
        if body in results:
            shown.add(skill_id)
    return shown


def _tool_timeout(requested: float | None, ceiling: float) -> float:
    """The model's timeout lowered to ``ceiling``; anything but a positive number means ``ceiling``."""
    if requested is None or not requested > 0:
        return ceiling
    return min(requested, ceiling)


def format_command_result(result: CommandResult) -> str:
    """A command's outcome as the model reads it."""
    lines = [f"exit code: {result.exit_code}" + (" (timed out)" if result.timed_out else "")]
    if result.stdout:
        lines.append(f"stdout:\n{result.stdout.rstrip()}")
    if result.stderr:
        lines.append(f"stderr:\n{result.stderr.rstrip()}")
    if result.truncated:
        lines.append("(output truncated)")
    return "\n".join(lines)


async def _clean_path(path: str, resolved: ResolvedSkill) -> str:
    problem = loose_path_problem(path)
    if problem in ("nul", "absolute"):
        raise PermissionError(f"path {path!r} must be relative to the skill folder; {await _listing(resolved)}")
    parts = loose_path_parts(path)
    if not parts:
        return resolved.skill.skill_md_name
    if problem == "parent":
        raise PermissionError(f"path {path!r} escapes the skill folder; {await _listing(resolved)}")
    return "/".join(parts)


async def _listing(resolved: ResolvedSkill) -> str:
    """The skill's paths for an error message (listed now when its layer deferred the listing)."""
    try:
        files = await resolved.list_files()
    except RepositoryError as exc:
        return f"available paths: {resolved.skill.skill_md_name} (its other files cannot be listed: {exc})"
    return "available paths: " + ", ".join([resolved.skill.skill_md_name, *files])


def _page(data: bytes, path: str, resolved: ResolvedSkill, offset: int, limit: int | None) -> str:
    if looks_binary(data):
        return _describe_binary(data, path, resolved)
    return page_lines(data.decode("utf-8"), path, offset, limit)


def _describe_binary(data: bytes, path: str, resolved: ResolvedSkill) -> str:
    import mimetypes  # only a binary file loaded by the model needs it

    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    where = f" at {resolved.files_root}/{path}" if resolved.files_root else ""
    return f"{path} is a binary file ({kind}, {len(data)} bytes){where}; it is not shown as text."

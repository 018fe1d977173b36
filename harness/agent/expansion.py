"""``/skill:<name> args``: a message that invokes a skill explicitly becomes the skill's body.

:func:`expand` turns a turn's message into an :class:`Invocation`: plain text stays as it is;
a ``/skill:`` command becomes the skill's body, its placeholders filled in (``$ARGUMENTS``,
named arguments, the spellings of its folder, the session id) in one pass over the body, so
the arguments arrive as typed, wrapped in a ``<skill>`` block.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from harness.errors import SkillNotFound
from harness.pipeline.catalog import LOAD_TOOL, quoteattr
from harness.pipeline.plan import ResolvedSkill, TurnPlan
from harness.skills.arguments import argument_hint, user_invocable
from harness.tools.skill_text import render_invoked_skill
from repositories import RepositoryError

__all__ = ["Invocation", "expand", "fetch_invoked"]

_SKILL_COMMAND = re.compile(r"^/skill:(?P<name>[^\s]+)(?:\s+(?P<args>.*))?$", re.DOTALL)


@dataclass(frozen=True, kw_only=True, slots=True)
class Invocation:
    """A turn's user text, and the skill it invokes explicitly (``None`` for a plain message)."""

    text: str
    skill: ResolvedSkill | None = None


async def fetch_invoked(message: str, plan: TurnPlan) -> None:
    """Before :func:`expand`: the skill a ``/skill:`` command names gets its real instructions
    in ``plan`` (a skill of an MCP server is listed by its frontmatter alone; see
    ``TurnPlan.fetch_instructions``). A fetch the market refuses (content that is not what its
    listing says, a server that does not answer) is :class:`SkillNotFound` saying why."""
    match = _SKILL_COMMAND.match(message.strip())
    if match is None:
        return
    try:
        await plan.fetch_instructions(match["name"])
    except RepositoryError as exc:
        raise SkillNotFound(f"skill {match['name']!r} cannot be loaded: {exc}") from exc


def expand(
    message: str, plan: TurnPlan, *, user: bool, agent: str, skill_names: Collection[str] | None = None
) -> Invocation:
    """The user text of a turn of ``agent``. A ``/skill:`` command names one of ``plan``'s
    skills (one of ``skill_names`` when the agent is restricted to those); ``user`` commands
    cannot invoke ``user-invocable: false`` skills. Raises :class:`SkillNotFound` naming the
    skills that may be invoked."""
    match = _SKILL_COMMAND.match(message.strip())
    if match is None:
        return Invocation(text=message)
    name = match["name"]
    try:
        resolved = plan.invoke(name)
    except SkillNotFound:
        raise SkillNotFound(f"no skill named {name!r}; {_invocable_list(plan, user)}") from None
    if skill_names is not None and resolved.skill.name not in skill_names:
        raise SkillNotFound(f"skill {name!r} is not available to agent {agent!r}")
    skill = resolved.skill
    if user and not user_invocable(skill.metadata):
        raise SkillNotFound(
            f"skill {name!r} is not user-invocable (the model may still use it); {_invocable_list(plan, user)}"
        )
    location = resolved.files_root or skill.skill_id
    text = render_invoked_skill(
        plan,
        resolved,
        (match["args"] or "").strip(),
        skill_dir=resolved.files_root or f"{LOAD_TOOL}:{skill.skill_id}",
        shell=plan.filesystem.has_shell,
    )
    block = f"<skill name={quoteattr(skill.name)} location={quoteattr(location)}>\n{text}\n</skill>"
    return Invocation(text=block, skill=resolved)


def _invocable_list(plan: TurnPlan, user: bool) -> str:
    """The skills a ``/skill:`` command may name, each with its ``argument-hint``."""
    entries = []
    for resolved in sorted(plan.skills.values(), key=lambda s: s.skill.name):
        fields = resolved.skill.metadata
        if user and not user_invocable(fields):
            continue
        hint = argument_hint(fields)
        entries.append(f"{resolved.skill.name} {hint}" if hint else resolved.skill.name)
    if not entries:
        return (
            "no skills are available to this user (check the turn's diagnostics: a missing folder or a failed market)"
        )
    return "available: " + ", ".join(entries)

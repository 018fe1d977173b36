"""Render the ``<available_skills>`` block that goes into the system prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from harness.skills.skill import Skill

__all__ = [
    "LOAD_TOOL",
    "SHELL_TOOL",
    "WORKFLOW_CONTINUE_TOOL",
    "WORKFLOW_START_TOOL",
    "CatalogEntry",
    "entries_for",
    "render_catalog",
]

# The tool names the catalog's header tells the model; the tools are registered under them.
LOAD_TOOL = "load_skill_through_path"
SHELL_TOOL = "execute_shell_command"
WORKFLOW_START_TOOL = "workflow_start"
WORKFLOW_CONTINUE_TOOL = "workflow_continue"

_ELLIPSIS = "…"
_MIN_DESCRIPTION = 40


@dataclass(frozen=True, kw_only=True, slots=True)
class CatalogEntry:
    """One visible skill as the model sees it; ``files_root`` is ``None`` when not rendered."""

    name: str
    description: str
    skill_id: str
    files_root: str | None
    workflow: bool = False


def entries_for(
    skills: Sequence[Skill], files_roots: Mapping[str, str], workflows: frozenset[str] = frozenset()
) -> list[CatalogEntry]:
    """Catalog entries for the visible (not hidden) skills, sorted by name."""
    return [
        CatalogEntry(
            name=skill.name,
            description=skill.description,
            skill_id=skill.skill_id,
            files_root=files_roots.get(skill.skill_id),
            workflow=skill.skill_id in workflows,
        )
        for skill in sorted(skills, key=lambda s: s.name)
        if not skill.hidden
    ]


def render_catalog(
    entries: Sequence[CatalogEntry],
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None = None,
) -> str:
    """The header plus ``<available_skills>``; an empty string when no skill is visible.

    ``load_tool`` / ``shell_tool`` are the names of the tools actually registered. With a
    ``budget`` (characters) the longest descriptions are shortened first; if that is not
    enough, the remaining skills are listed by name only, under a visible "N more" line; if
    even their names do not fit, the line lists what fits and counts the rest — nothing is
    dropped silently.
    """
    if not entries:
        return ""
    header = _header(load_tool, shell_tool, any(e.files_root for e in entries), any(e.workflow for e in entries))
    blocks = [_block(entry, entry.description) for entry in entries]
    text = _assemble(header, blocks, [])
    if budget is None or len(text) <= budget:
        return text
    return _fit(header, list(entries), budget)


def _header(load_tool: str, shell_tool: str | None, has_roots: bool, has_workflows: bool) -> str:
    lines = [
        "You can use skills: folders of instructions, scripts and resources for specific tasks.",
        "When a task matches a skill's description, first read its instructions with "
        f'{load_tool}(skillId="<skill-id>") and follow them; read its other files with '
        f'{load_tool}(skillId="<skill-id>", path="<relative path>").',
    ]
    if shell_tool and has_roots:
        lines.append(
            "Paths in a skill are relative to its <files-root>; run its scripts with "
            f'{shell_tool}("python3 <files-root>/scripts/<script>.py").'
        )
    if has_workflows:
        lines.append(
            "Skills marked <workflow>true</workflow> are multi-step workflows: start one with "
            f'{WORKFLOW_START_TOOL}(skill="<name>"), perform the action it returns, and report each '
            f"outcome with {WORKFLOW_CONTINUE_TOOL}."
        )
    return "\n".join(lines)


def _block(entry: CatalogEntry, description: str) -> str:
    parts = [
        "<skill>",
        f"<name>{escape(entry.name)}</name>",
        f"<description>{escape(description)}</description>",
        f"<skill-id>{escape(entry.skill_id)}</skill-id>",
    ]
    if entry.files_root:
        parts.append(f"<files-root>{escape(entry.files_root)}</files-root>")
    if entry.workflow:
        parts.append("<workflow>true</workflow>")
    parts.append("</skill>")
    return "\n".join(parts)


def _assemble(header: str, blocks: list[str], by_name: list[str], budget: int | None = None) -> str:
    lead = f"{header}\n<available_skills>\n" + "".join(f"{block}\n" for block in blocks)

    def text(listed: int) -> str:
        more = f"{_more(by_name, listed)}\n" if by_name else ""
        return f"{lead}{more}</available_skills>"

    full = text(len(by_name))
    if budget is None or len(full) <= budget:
        return full
    # Even the names do not fit: list as many as fit and count the rest.
    low, high = 0, len(by_name)
    while low < high:
        mid = (low + high + 1) // 2
        if len(text(mid)) <= budget:
            low = mid
        else:
            high = mid - 1
    return text(low)


def _more(names: list[str], listed: int) -> str:
    """The "N more" line: the first ``listed`` names, and a count of any others, so the model
    always sees how many skills exist."""
    text = escape(", ".join(names[:listed]))
    unlisted = len(names) - listed
    if unlisted:
        text += f"{', ' if listed else ''}and {unlisted} more not listed for space"
    return f'<more count="{len(names)}">{text}</more>'


def _fit(header: str, entries: list[CatalogEntry], budget: int) -> str:
    """Cap every description at the largest length that fits (the longest shrink first);
    below the floor, keep as many entries as fit and name the rest."""
    longest = max(len(e.description) for e in entries)
    low, high = _MIN_DESCRIPTION, longest
    while low < high:
        mid = (low + high + 1) // 2
        if len(_capped(header, entries, mid, len(entries))) <= budget:
            low = mid
        else:
            high = mid - 1
    text = _capped(header, entries, low, len(entries))
    if len(text) <= budget:
        return text
    low_k, high_k = 0, len(entries) - 1
    while low_k < high_k:
        mid = (low_k + high_k + 1) // 2
        if len(_capped(header, entries, _MIN_DESCRIPTION, mid)) <= budget:
            low_k = mid
        else:
            high_k = mid - 1
    # Even the names of the rest may not fit: then they are counted, not listed.
    return _capped(header, entries, _MIN_DESCRIPTION, low_k, budget)


def _capped(header: str, entries: list[CatalogEntry], cap: int, kept: int, budget: int | None = None) -> str:
    blocks = [_block(e, _shorten(e.description, cap)) for e in entries[:kept]]
    return _assemble(header, blocks, [e.name for e in entries[kept:]], budget)


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1].rstrip() + _ELLIPSIS

"""Render the ``<available_skills>`` block that goes into the system prompt."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from harness.pipeline.search import when_to_use
from harness.skills.skill import Skill

__all__ = [
    "DEFAULT_CATALOG_BUDGET",
    "LOAD_TOOL",
    "SEARCH_TOOL",
    "SHELL_TOOL",
    "WORKFLOW_CONTINUE_TOOL",
    "WORKFLOW_REPORT_TOOL",
    "WORKFLOW_START_TOOL",
    "Catalog",
    "CatalogEntry",
    "build_catalog",
    "entries_for",
    "entry_for",
    "render_catalog",
    "render_entry",
]

# The tool names the catalog's header tells the model; the tools are registered under them.
LOAD_TOOL = "load_skill_through_path"
SHELL_TOOL = "execute_shell_command"
SEARCH_TOOL = "search_skills"
WORKFLOW_START_TOOL = "workflow_start"
WORKFLOW_CONTINUE_TOOL = "workflow_continue"
#: Offered only inside a workflow step's skill turn: the skill reports its step's outcome.
WORKFLOW_REPORT_TOOL = "workflow_report"

#: Characters of catalog a turn gets by default: roomy for hundreds of skills, and a
#: 10,000-skill market still leaves the model a prompt it can read (the rest is searched).
DEFAULT_CATALOG_BUDGET = 30_000

_ELLIPSIS = "…"
_MIN_DESCRIPTION = 40


@dataclass(frozen=True, kw_only=True, slots=True)
class CatalogEntry:
    """One visible skill as the model sees it; ``files_root`` is ``None`` when not rendered.

    ``rank`` is the skill's layer rank (``Layer.rank``): when the budget cuts, higher ranks
    keep their full entries first."""

    name: str
    description: str
    skill_id: str
    files_root: str | None
    workflow: bool = False
    rank: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class Catalog:
    """A rendered catalog; ``complete`` is false when the budget shortened or left out entries
    (the turn then offers the search tool)."""

    text: str
    complete: bool


def entry_for(skill: Skill, files_root: str | None = None, workflow: bool = False) -> CatalogEntry:
    """The catalog entry of one skill; a ``when_to_use`` field follows the description (and
    counts against the budget with it)."""
    when = " ".join(when_to_use(skill).split())
    return CatalogEntry(
        name=skill.name,
        description=f"{skill.description} When to use: {when}" if when else skill.description,
        skill_id=skill.skill_id,
        files_root=files_root,
        workflow=workflow,
        rank=skill.layer.rank,
    )


def entries_for(
    skills: Sequence[Skill], files_roots: Mapping[str, str], workflows: frozenset[str] = frozenset()
) -> list[CatalogEntry]:
    """Catalog entries for the visible (not hidden) skills, sorted by name."""
    return [
        entry_for(skill, files_roots.get(skill.skill_id), skill.skill_id in workflows)
        for skill in sorted(skills, key=lambda s: s.name)
        if not skill.hidden
    ]


def render_catalog(
    entries: Sequence[CatalogEntry],
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None = None,
    search_tool: str | None = None,
) -> str:
    """The text of :func:`build_catalog`."""
    return build_catalog(
        entries, load_tool=load_tool, shell_tool=shell_tool, budget=budget, search_tool=search_tool
    ).text


def build_catalog(
    entries: Sequence[CatalogEntry],
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None = None,
    search_tool: str | None = None,
) -> Catalog:
    """The header plus ``<available_skills>``; an empty text when no skill is visible.

    ``load_tool`` / ``shell_tool`` / ``search_tool`` are the names of the tools actually
    registered. The whole text, header included, never exceeds ``budget`` (characters). When
    everything does not fit, skills are taken in priority order (user, workspace, market,
    global; by name within a layer): the first keep their full entries and the others get
    evenly shortened descriptions; if not every skill fits even shortened, the first keep full
    entries and the others are named in a ``<more>`` line, in priority order; if not even their
    names fit, the line names what fits and counts the rest. A cut catalog's header names
    ``search_tool``, which finds every skill. ``<skill>`` entries are always sorted by name.
    """
    if not entries:
        return Catalog(text="", complete=True)
    roots, workflows = any(e.files_root for e in entries), any(e.workflow for e in entries)
    text = _assemble(_header(load_tool, shell_tool, roots, workflows, None), [_block(e) for e in entries], [])
    if budget is None or len(text) <= budget:
        return Catalog(text=text, complete=True)
    header = _header(load_tool, shell_tool, roots, workflows, search_tool)
    return Catalog(text=_fit(header, entries, budget, search_tool), complete=False)


def render_entry(entry: CatalogEntry) -> str:
    """One ``<skill>`` block, as the catalog shows a full entry."""
    return _block(entry)


def _header(load_tool: str, shell_tool: str | None, has_roots: bool, has_workflows: bool, search: str | None) -> str:
    lines = [
        "You can use skills: folders of instructions, scripts and resources for specific tasks.",
        "When a task matches a skill's description, first read its instructions with "
        f'{load_tool}(skillId="<skill-id>") and follow them; read its other files with '
        f'{load_tool}(skillId="<skill-id>", path="<relative path>").',
    ]
    if search:
        lines.append(
            "This list is shortened for space: find any skill with "
            f'{search}(query="<keywords>") and load a result by its skill-id.'
        )
    if shell_tool and has_roots:
        lines.append(
            "Paths in a skill are relative to its <files-root>; run its scripts with "
            f'{shell_tool}("python3 <files-root>/scripts/<script>.py"), or run a command as the skill '
            f'writes it with {shell_tool}(command="<command>", skill="<skill-id>"), which starts in its folder.'
        )
    if has_workflows:
        lines.append(
            "Skills marked <workflow>true</workflow> are multi-step workflows: start one with "
            f'{WORKFLOW_START_TOOL}(skill="<name>"), perform the action it returns, and report each '
            f"outcome with {WORKFLOW_CONTINUE_TOOL}."
        )
    return "\n".join(lines)


def _block(entry: CatalogEntry, description: str | None = None) -> str:
    parts = [
        "<skill>",
        f"<name>{escape(entry.name)}</name>",
        f"<description>{escape(entry.description if description is None else description)}</description>",
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

    if budget is None or len(text(len(by_name))) <= budget:
        return text(len(by_name))
    # Even the names do not fit: list as many as fit and count the rest.
    return text(max(0, _largest(0, len(by_name), lambda listed: len(text(listed)) <= budget)))


def _more(names: list[str], listed: int) -> str:
    """The "N more" line: the first ``listed`` names, and a count of any others, so the model
    always sees how many skills exist."""
    text = escape(", ".join(names[:listed]))
    unlisted = len(names) - listed
    if unlisted:
        text += f"{', ' if listed else ''}and {unlisted} more not listed for space"
    return f'<more count="{len(names)}">{text}</more>'


def _largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest value in ``low..high`` that ``fits`` (monotone: true up to a point), or
    ``low - 1`` when none does."""
    if not fits(low):
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _fit(header: str, entries: Sequence[CatalogEntry], budget: int, search_tool: str | None) -> str:
    """Fit the catalog into ``budget``: see :func:`build_catalog` for the order of cuts."""
    order = sorted(entries, key=lambda e: (-e.rank, e.name))
    full = [_block(e) for e in order]
    position = sorted(range(len(order)), key=lambda i: order[i].name)
    count = len(order)

    def compose(kept: int, described: int, cap: int, count_rest: bool = False) -> str:
        """``order[:kept]`` full, ``order[kept:described]`` capped at ``cap``, the rest named."""
        blocks = [
            full[i] if i < kept else _block(order[i], _shorten(order[i].description, cap))
            for i in position
            if i < described
        ]
        return _assemble(header, blocks, [e.name for e in order[described:]], budget if count_rest else None)

    def fits(text: str) -> bool:
        return len(text) <= budget

    kept = _largest(0, count, lambda k: fits(compose(k, count, _MIN_DESCRIPTION)))
    if kept >= 0:  # every skill described: the rest shortened evenly, as long as fits
        longest = max(len(e.description) for e in order[kept:]) if kept < count else _MIN_DESCRIPTION
        cap = _largest(_MIN_DESCRIPTION, max(longest, _MIN_DESCRIPTION), lambda c: fits(compose(kept, count, c)))
        return compose(kept, count, cap)
    kept = _largest(0, count, lambda k: fits(compose(k, k, 0)))
    if kept >= 0:  # every skill named
        return compose(kept, kept, 0)
    kept = _largest(0, count, lambda k: fits(compose(k, k, 0, count_rest=True)))
    if kept >= 0:
        return compose(kept, kept, 0, count_rest=True)
    return _smallest(count, budget, search_tool)


def _smallest(count: int, budget: int, search_tool: str | None) -> str:
    """The catalog of a budget too small for the header: a count (and the search tool), or
    nothing when not even that fits."""
    how = f"; find them with {search_tool}" if search_tool else ""
    text = f'<available_skills>\n<more count="{count}">{count} skills not listed for space{how}</more>\n</available_skills>'
    return text if len(text) <= budget else ""


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1].rstrip() + _ELLIPSIS

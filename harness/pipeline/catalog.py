"""Render the ``<available_skills>`` block that goes into the system prompt.

The catalog has two forms. The **explicit** form gives each skill an entry of its own, with the
id to load it by and the folder its files are in as the shell sees it, so the model copies both
as written::

    <available_skills>
    <skill>
    <name>pdf</name>
    <description>Use when the user works with PDF files.</description>
    <skill-id>pdf_acme</skill-id>
    <files-root>/workspace/.skills-cache/git-acme-skills/pdf</files-root>
    </skill>
    </available_skills>

The **compact** form groups skills by source, so a source and its folder are written once per
group rather than once per skill::

    <available_skills>
    <skills source="acme" root="/workspace/.skills-cache/git-acme-skills">
    <skill name="pdf">Use when the user works with PDF files.</skill>
    <skill name="docx" folder="word-docs" workflow="true">Use for Word documents.</skill>
    <skill-names>xlsx, pptx</skill-names>
    </skills>
    <shadowed>skill-creator_other</shadowed>
    <more count="12">12 more skills are not listed for space</more>
    </available_skills>

There a skill's id is ``<name>_<source of its group>`` and its files-root ``<root>/<folder>``
(the ``folder`` attribute, else its name). :func:`catalog_header` tells the model how to read the
form it gets. The catalog's format (:data:`CATALOG_FORMATS`) chooses the form: ``auto`` gives
the explicit form whenever every skill fits in it whole, else the compact one; ``explicit``
keeps the explicit form as long as every skill can still be described in it (descriptions
shortened); ``compact`` always groups. Past that, the compact form's cuts keep the budget.

Neither form has a ``<location>`` (the SKILL.md path of the Agent Skills reference prompt): the
model reads a skill with the load tool by its id, the file tools never reach a skill's folder, and
a filesystem without a shell has no path to give. ``<files-root>`` is the path, where one exists.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import posixpath
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, overload

from harness.pipeline.labels import SourceLabels
from harness.pipeline.search import when_to_use
from harness.skills.skill import Skill

__all__ = [
    "CATALOG_FORMATS",
    "DEFAULT_CATALOG_BUDGET",
    "LOAD_TOOL",
    "SEARCH_TOOL",
    "SHELL_TOOL",
    "WORKFLOW_CONTINUE_TOOL",
    "WORKFLOW_REPORT_TOOL",
    "WORKFLOW_START_TOOL",
    "Catalog",
    "CatalogEntry",
    "CatalogFormat",
    "CatalogParts",
    "build_catalog",
    "catalog_header",
    "check_catalog_format",
    "entries_for",
    "entry_for",
    "escape",
    "quoteattr",
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

#: Characters of catalog a turn gets by default: every description of a few hundred skills
#: (shortened when needed), and a 10,000-skill market still leaves the model a prompt it can
#: read (the rest is searched).
DEFAULT_CATALOG_BUDGET = 30_000

#: How the catalog shows its skills (see the module docstring).
CatalogFormat = Literal["auto", "explicit", "compact"]
#: The catalog formats, the default first.
CATALOG_FORMATS: tuple[CatalogFormat, ...] = ("auto", "explicit", "compact")

_ELLIPSIS = "…"
#: The shortest a description is cut to while every skill is still described.
_MIN_DESCRIPTION = 40
#: When not even every name fits, the share of the budget the first skills' descriptions may
#: take before the rest are named (then counted).
_DESCRIBED_SHARE = 0.5
_FRAME = ("\n<available_skills>\n", "</available_skills>")
#: What an explicit entry takes at least: its tags (no files-root) around a one-letter name and
#: source and an empty description. A catalog of more skills than the budget holds of these
#: cannot be explicit, so its entries' sizes are never summed (a large market's catalog).
_EXPLICIT_TAGS = len("<skill>\n<name>a</name>\n<description></description>\n<skill-id>a_b</skill-id>\n</skill>\n")
_NAMES = ("<skill-names>", "</skill-names>\n")


@dataclass(frozen=True, kw_only=True, slots=True)
class CatalogEntry:
    """One visible skill as the model sees it.

    ``source`` is the source the catalog shows (a market's short label, see
    :class:`~harness.pipeline.labels.SourceLabels`), so ``<name>_<source>`` is the id the
    model loads it by. ``files_root`` is ``None`` when not rendered. ``rank`` is the skill's
    layer rank (``Layer.rank``): when the budget cuts, higher ranks keep their full entries
    first. ``relevance`` orders skills within a group (higher first, then by name) and decides
    which keep a description when not all can.
    """

    name: str
    description: str
    source: str
    files_root: str | None
    workflow: bool = False
    rank: int = 0
    relevance: float = 0.0

    @property
    def skill_id(self) -> str:
        """The id the catalog gives the skill: ``<name>_<source>``."""
        return f"{self.name}_{self.source}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Catalog:
    """A rendered catalog; ``complete`` is false when the budget shortened or left out entries
    (the turn then offers the search tool)."""

    text: str
    complete: bool


def entry_for(
    skill: Skill,
    files_root: str | None = None,
    workflow: bool = False,
    *,
    source: str | None = None,
    relevance: float = 0.0,
) -> CatalogEntry:
    """The catalog entry of one skill (``source`` defaults to the skill's own); a
    ``when_to_use`` field follows the description (and counts against the budget with it)."""
    when = when_to_use(skill)
    when = " ".join(when.split()) if when else ""
    return CatalogEntry(
        name=skill.name,
        description=f"{skill.description} When to use: {when}" if when else skill.description,
        source=skill.source if source is None else source,
        files_root=files_root,
        workflow=workflow,
        rank=skill.layer.rank,
        relevance=relevance,
    )


def entries_for(
    skills: Sequence[Skill],
    files_roots: Mapping[str, str],
    workflows: frozenset[str] = frozenset(),
    *,
    labels: SourceLabels | None = None,
    relevance: Mapping[str, float] | None = None,
) -> list[CatalogEntry]:
    """Catalog entries for the visible (not hidden) skills, sorted by name. Maps are keyed by
    skill id; ``labels`` shortens market sources."""
    shown = labels or SourceLabels()
    scores = relevance or {}
    return [
        entry_for(
            skill,
            files_roots.get(skill.skill_id),
            skill.skill_id in workflows,
            source=shown.label(skill.source),
            relevance=scores.get(skill.skill_id, 0.0),
        )
        for skill in sorted(skills, key=lambda s: s.name)
        if not skill.hidden
    ]


def check_catalog_format(value: object) -> CatalogFormat:
    """``value`` as a catalog format; ``ValueError`` naming the formats for anything else."""
    for known in CATALOG_FORMATS:
        if isinstance(value, str) and value == known:
            return known
    raise ValueError(f"catalog_format: {value!r} is not one of {', '.join(CATALOG_FORMATS)}")


def render_catalog(
    entries: Sequence[CatalogEntry],
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None = None,
    search_tool: str | None = None,
    shadowed: Sequence[str] = (),
    catalog_format: CatalogFormat = "auto",
) -> str:
    """The text of :func:`build_catalog`."""
    return build_catalog(
        entries,
        load_tool=load_tool,
        shell_tool=shell_tool,
        budget=budget,
        search_tool=search_tool,
        shadowed=shadowed,
        catalog_format=catalog_format,
    ).text


def build_catalog(
    entries: Sequence[CatalogEntry],
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None = None,
    search_tool: str | None = None,
    shadowed: Sequence[str] = (),
    catalog_format: CatalogFormat = "auto",
) -> Catalog:
    """The header plus ``<available_skills>``; an empty text when no skill is visible.

    ``load_tool`` / ``shell_tool`` / ``search_tool`` are the names of the tools actually
    registered; ``shadowed`` the ids of skills hidden by a same-name skill that still load by
    id (one ``<shadowed>`` line). ``catalog_format`` chooses the form (see the module
    docstring): ``auto`` gives every skill an explicit entry (its ``<skill-id>`` and
    ``<files-root>``, in priority order) when all of them fit whole, ``explicit`` also when
    they fit with descriptions shortened as in step 1 below, and otherwise, or with
    ``compact``, the skills are grouped by source. The whole text, header included, never
    exceeds ``budget`` (characters). When everything does not fit:

    1. every skill keeps its name and a description: the layers in priority order (user,
       workspace, market, global) keep their whole descriptions as long as the others can
       still be described in at least 40 characters, and the others' descriptions are cut to
       one common length, as long as fits (the longest are shortened first);
    2. otherwise the first skills in priority order (layer, then ``relevance``, then name) keep
       a 40-character description and the others are named in their group's ``<skill-names>``;
    3. if not even every name fits, the first skills are described within half the budget,
       the next ones named, and a ``<more count="N">`` line counts the rest (the
       ``<shadowed>`` line is left out).

    A cut catalog's header names ``search_tool``, which finds every skill.
    """
    return CatalogParts(entries).build(
        load_tool=load_tool,
        shell_tool=shell_tool,
        budget=budget,
        search_tool=search_tool,
        shadowed=shadowed,
        catalog_format=catalog_format,
    )


def _build(
    layout: _Layout,
    *,
    load_tool: str,
    shell_tool: str | None,
    budget: int | None,
    search_tool: str | None,
    shadowed: Sequence[str],
    catalog_format: CatalogFormat,
) -> Catalog:
    if not layout.count:
        return Catalog(text="", complete=True)
    roots, workflows = layout.roots, layout.workflows

    def header(cut: bool, names: bool = False, with_shadowed: bool = True, explicit: bool = False) -> str:
        return catalog_header(
            load_tool,
            shell_tool if roots else None,
            search_tool=search_tool if cut else None,
            names_only=names,
            shadowed=bool(shadowed) and with_shadowed,
            workflows=workflows,
            explicit=explicit,
        )

    if catalog_format != "compact" and (budget is None or layout.count * _EXPLICIT_TAGS <= budget):
        full = header(False, explicit=True)
        if budget is None or layout.explicit_size(full) <= budget:
            return Catalog(text=layout.render_explicit(full), complete=True)
        if catalog_format == "explicit":
            text = layout.describe_all(budget, header(True, explicit=True), explicit=True)
            if text is not None:
                return Catalog(text=text, complete=False)
    full = header(False)
    if budget is None or layout.whole_size(full) <= budget:
        return Catalog(text=layout.render(full, dict.fromkeys(range(layout.count))), complete=True)
    # Too large whole (a large market): cut it without rendering the whole catalog first.
    return Catalog(text=layout.fit(budget, header, search_tool), complete=False)


def catalog_header(
    load_tool: str,
    shell_tool: str | None,
    *,
    search_tool: str | None = None,
    names_only: bool = False,
    shadowed: bool = False,
    workflows: bool = False,
    explicit: bool = False,
) -> str:
    """The usage header above ``<available_skills>``: how to read the entries and load a skill.

    ``explicit`` for the explicit form (each entry gives its ``<skill-id>`` and
    ``<files-root>``), else the header explains how the groups of the compact form compose them.
    ``shell_tool`` is given when a shell exists and files-roots are rendered; ``search_tool``
    when the list is cut; ``names_only`` / ``shadowed`` / ``workflows`` when the list has
    ``<skill-names>``, a ``<shadowed>`` line or workflow skills."""
    lines = [
        "You can use skills: folders of instructions, scripts and resources for specific tasks.",
        "When a task matches a skill's description, first read its instructions with "
        f'{load_tool}(skillId="<skill-id>") and follow them; read its other files with '
        f'{load_tool}(skillId="<skill-id>", path="<relative path>").',
        "Each <skill> gives its <skill-id>: use it as written; the bare name also works when no other skill has it."
        if explicit
        else 'Skills are grouped by source: a skill\'s <skill-id> is its name, "_" and the source of its '
        '<skills> group (name="pdf" in source="acme" is pdf_acme); the bare name also works when no '
        "other skill has it.",
    ]
    if shell_tool:
        where = (
            "A skill's <files-root> is its folder as the shell sees it"
            if explicit
            else "A skill's <files-root> is its group's root, \"/\" and its folder (the folder attribute, "
            "else its name)"
        )
        lines.append(
            f"{where}; paths in a skill are relative to it. Run its scripts with "
            f'{shell_tool}("python3 <files-root>/scripts/<script>.py"), or run a command as the skill '
            f'writes it with {shell_tool}(command="<command>", skill="<skill-id>"), which starts in its folder.'
        )
    if names_only:
        lines.append("<skill-names> lists more skills of a group by name only: load one to read its description.")
    if shadowed:
        lines.append(
            "<shadowed> lists skills hidden by a listed skill of the same name: load one only by "
            "the skill-id given there."
        )
    if search_tool:
        lines.append(
            "This list is shortened for space: find any skill with "
            f'{search_tool}(query="<keywords>") and load a result by its id.'
        )
    if workflows:
        lines.append(
            'Skills marked workflow="true" are multi-step workflows: start one with '
            f'{WORKFLOW_START_TOOL}(skill="<name>"), perform the action it returns, and report each '
            f"outcome with {WORKFLOW_CONTINUE_TOOL}."
        )
    return "\n".join(lines)


def escape(text: str, entities: Mapping[str, str] | None = None) -> str:
    """``text`` as XML character data: ``&``, ``>`` and ``<`` escaped, then each of ``entities``
    (the same as ``xml.sax.saxutils.escape``, whose import loads ``urllib.request``, ``http`` and
    ``email``: most of a fresh process's first turn)."""
    text = text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    if entities:
        for char, entity in entities.items():
            text = text.replace(char, entity)
    return text


def quoteattr(text: str) -> str:
    """``text`` escaped and quoted as an XML attribute value (as ``xml.sax.saxutils.quoteattr``):
    double quotes unless the text holds one and no single quote."""
    text = escape(text, {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})
    if '"' not in text:
        return f'"{text}"'
    if "'" not in text:
        return f"'{text}'"
    return '"' + text.replace('"', "&quot;") + '"'


def render_entry(entry: CatalogEntry) -> str:
    """One skill on its own, with its id and files-root (what ``search_skills`` returns)."""
    root = f' files-root="{_attr(entry.files_root)}"' if entry.files_root else ""
    workflow = ' workflow="true"' if entry.workflow else ""
    return (
        f'<skill name="{_attr(entry.name)}" id="{_attr(entry.skill_id)}"{root}{workflow}>'
        f"{escape(entry.description)}</skill>"
    )


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted attribute (``escape`` with ``"`` as ``&quot;``)."""
    return escape(text).replace('"', "&quot;")


def _explicit_parts(entry: CatalogEntry) -> tuple[str, str]:
    """The explicit form's entry of ``entry`` around its description: up to ``<description>``,
    and from ``</description>`` on."""
    opening = '<skill workflow="true">\n' if entry.workflow else "<skill>\n"
    root = f"<files-root>{escape(entry.files_root)}</files-root>\n" if entry.files_root else ""
    return (
        f"{opening}<name>{escape(entry.name)}</name>\n<description>",
        f"</description>\n<skill-id>{escape(entry.skill_id)}</skill-id>\n{root}</skill>\n",
    )


class _Piece(NamedTuple):
    """What one entry contributes to any catalog, whatever else it holds."""

    entry: CatalogEntry  # the explicit form's tags are made from it when needed (few skills then)
    skill_id: str
    order: tuple[int, float, str]  # priority: layer rank, relevance, name
    group: tuple[int, str, str]  # its <skills> group: rank, source, root ("" for none)
    open: str  # the opening tag
    description: str  # escaped
    token: str  # a name in <skill-names>, or a whole line when its folder differs
    workflow: bool
    # Sizes: described, its open tag, its description (or cap) and "</skill>\n"; named, its
    # token with ", " (or its line).
    fixed: int
    named: int
    rank: int
    length: int  # of the description
    whole: int  # described whole: fixed + length
    brief: int  # described at the shortest cap: fixed + min(length, _MIN_DESCRIPTION)

    @classmethod
    def of(cls, entry: CatalogEntry) -> _Piece:
        folder = posixpath.basename(entry.files_root) if entry.files_root else entry.name
        named = f'name="{_attr(entry.name)}"' + (f' folder="{_attr(folder)}"' if folder != entry.name else "")
        opening = f"<skill {named}" + (' workflow="true">' if entry.workflow else ">")
        token = escape(entry.name) if folder == entry.name else f"<skill {named}/>\n"
        description = escape(entry.description)
        fixed = len(opening) + len("</skill>\n")
        return cls(
            entry=entry,
            skill_id=entry.skill_id,
            order=(-entry.rank, -entry.relevance, entry.name),
            group=(-entry.rank, entry.source, posixpath.dirname(entry.files_root) if entry.files_root else ""),
            open=opening,
            description=description,
            token=token,
            workflow=entry.workflow,
            fixed=fixed,
            named=len(token) if token.endswith("\n") else len(token) + 2,
            rank=entry.rank,
            length=len(description),
            whole=fixed + len(description),
            brief=fixed + min(len(description), _MIN_DESCRIPTION),
        )


def _order(piece: _Piece) -> tuple[int, float, str]:
    return piece.order


_RANK, _WORKFLOW, _OPEN, _DESCRIPTION, _TOKEN = (
    operator.attrgetter(f) for f in ("rank", "workflow", "open", "description", "token")
)
_SKILL_ID = operator.attrgetter("skill_id")
_FIXED, _LENGTH, _BRIEF, _WHOLE, _NAMED = (
    operator.attrgetter(f) for f in ("fixed", "length", "brief", "whole", "named")
)


class CatalogParts:
    """Catalog entries rendered into pieces once, for many catalogs that share most of them.

    Every user's catalog holds the same shared skills plus a few of the user's own: built from
    the parts of the shared ones (:meth:`build`, leaving out those a user replaces and adding
    the user's), a catalog costs a few sums over the entries, not a sort and a rendering.
    """

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self._pieces = sorted((_Piece.of(entry) for entry in entries), key=_order)
        self._ids = frozenset(map(_SKILL_ID, self._pieces))
        self._layout: tuple[tuple[str, ...], _Layout] | None = None  # of every piece, by shadowed ids

    def _whole_layout(self, shadowed: Sequence[str]) -> _Layout:
        """The layout of every piece, kept for the last ``shadowed`` asked for."""
        key = tuple(shadowed)
        if self._layout is None or self._layout[0] != key:
            self._layout = (key, _Layout(self._pieces, shadowed))
        return self._layout[1]

    def build(
        self,
        *,
        load_tool: str,
        shell_tool: str | None,
        budget: int | None = None,
        search_tool: str | None = None,
        shadowed: Sequence[str] = (),
        catalog_format: CatalogFormat = "auto",
        without: Collection[str] = (),
        extra: Sequence[CatalogEntry] = (),
    ) -> Catalog:
        """The catalog of these entries except those whose id is in ``without``, plus ``extra``
        (see :func:`build_catalog` for the other arguments)."""
        added = sorted((_Piece.of(entry) for entry in extra), key=_order)
        without = self._ids.intersection(without)  # a user's own skills are named here too
        if not without and self._pieces and (not added or min(map(_RANK, added)) > self._pieces[0].rank):
            # A user's own skills, of a layer above all of these: their layout goes before the
            # shared one, which is built once (shifting its sums costs far less than summing them).
            whole = self._whole_layout(shadowed)
            layout = _Layout.joined(_Layout(added, shadowed), whole) if added else whole
        else:
            pieces = [p for p in self._pieces if p.skill_id not in without] if without else list(self._pieces)
            for piece in added:
                bisect.insort(pieces, piece, key=_order)
            layout = _Layout(pieces, shadowed)
        return _build(
            layout,
            load_tool=load_tool,
            shell_tool=shell_tool,
            budget=budget,
            search_tool=search_tool,
            shadowed=shadowed,
            catalog_format=catalog_format,
        )


class _Layout:
    """The entries in priority order with their rendered pieces and sizes, grouped by source
    and root, so that the size of any cut is summed, not rendered."""

    def __init__(self, order: list[_Piece], shadowed: Sequence[str]) -> None:
        # ``order`` is in priority order: layer rank, relevance, name.
        # The per-item lists are read off the pieces with C-level getters: a layout is built for
        # every user's catalog, over every shared skill.
        self.count = len(order)
        self._order: list[_Piece] | None = order
        self._halves: tuple[_Layout, _Layout] | None = None
        ranks = list(map(_RANK, order))
        self.roots = any(p.group[2] for p in order)
        self.workflows = any(map(_WORKFLOW, order))
        groups: dict[tuple[int, str, str], list[int]] = {}
        for index, piece in enumerate(order):
            members = groups.get(piece.group)
            if members is None:
                groups[piece.group] = [index]
            else:
                members.append(index)
        # Within a group (one rank) index order is relevance, then name: the priority order.
        self.groups: list[tuple[str, list[int]]] = []
        for key in sorted(groups):
            _, source, root = key
            shown_root = f' root="{_attr(root)}"' if root else ""
            self.groups.append((f'<skills source="{_attr(source)}"{shown_root}>\n', groups[key]))
        self.opens = list(map(_OPEN, order))
        self.descriptions = list(map(_DESCRIPTION, order))
        self.tokens = list(map(_TOKEN, order))
        self.shadowed = f"<shadowed>{escape(', '.join(shadowed))}</shadowed>\n" if shadowed else ""
        # Sizes (see ``_Piece``); a group its tags, plus <skill-names> (a bound).
        self.fixed = list(map(_FIXED, order))
        self.fixed_total: int = sum(self.fixed)
        self._explicit_total: int | None = None  # see explicit_total()
        self.lengths = list(map(_LENGTH, order))
        self.described_sums: Sequence[int] = [0, *itertools.accumulate(map(_BRIEF, order))]
        self.whole_sums: Sequence[int] = [0, *itertools.accumulate(map(_WHOLE, order))]
        # Where each layer (rank) begins in priority order: the first ``w`` items are whole layers
        # (ranks fall along the order, so each begins where the run of the one before ends).
        self.tiers = [0, *itertools.accumulate(len(list(run)) for _, run in itertools.groupby(ranks))][:-1]
        self.named_sums: Sequence[int] = [0, *itertools.accumulate(map(_NAMED, order))]
        # Groups shown when the first ``m`` items are: their sizes counted at their first item.
        names = len(_NAMES[0]) + len(_NAMES[1])
        first = [0] * self.count
        for opening, members in self.groups:
            first[members[0]] = len(opening) + len("</skills>\n") + names
        self.group_sums: Sequence[int] = [0, *itertools.accumulate(first)]
        # The descriptions' lengths from each tier on, sorted (see ``_DescriptionLengths``), and
        # for a joined layout the shared one after its own items (see ``joined``).
        self._suffixes: dict[int, _DescriptionLengths] = {}
        self._then: tuple[int, _Layout] | None = None

    @classmethod
    def joined(cls, first: _Layout, then: _Layout) -> _Layout:
        """The layout of ``first``'s items followed by ``then``'s, as if built from both, when
        every group of ``first`` sorts before every group of ``then`` (a higher layer's) and both
        have the same shadowed line."""
        layout = cls.__new__(cls)
        shift = first.count
        layout.count = first.count + then.count
        layout._order, layout._halves = None, (first, then)
        layout.roots = first.roots or then.roots
        layout.workflows = first.workflows or then.workflows
        layout.groups = [
            *first.groups,
            *((opening, [*map(shift.__add__, members)]) for opening, members in then.groups),
        ]
        layout.opens = first.opens + then.opens
        layout.descriptions = first.descriptions + then.descriptions
        layout.tokens = first.tokens + then.tokens
        layout.shadowed = first.shadowed
        layout.fixed = first.fixed + then.fixed
        layout.fixed_total = first.fixed_total + then.fixed_total
        layout._explicit_total = None
        layout.lengths = first.lengths + then.lengths
        layout.tiers = [*first.tiers, *map(shift.__add__, then.tiers)]
        layout.described_sums = _Joined(first.described_sums, then.described_sums)
        layout.whole_sums = _Joined(first.whole_sums, then.whole_sums)
        layout.named_sums = _Joined(first.named_sums, then.named_sums)
        layout.group_sums = _Joined(first.group_sums, then.group_sums)
        layout._suffixes = {}
        layout._then = (shift, then)
        return layout

    def suffix(self, start: int) -> _DescriptionLengths:
        """The lengths of the descriptions from item ``start`` on, sorted, with their sums (kept:
        a shared layout answers for every user's catalog built on it)."""
        known = self._suffixes.get(start)
        if known is None:
            if self._then is not None and start >= self._then[0]:
                known = self._then[1].suffix(start - self._then[0])
            else:
                known = _DescriptionLengths(self.lengths[start:])
            self._suffixes[start] = known
        return known

    def explicit_total(self) -> int:
        """The size of the explicit form's entries but for their descriptions, summed on first
        use (a joined layout's from its halves', the shared one's summed once)."""
        if self._explicit_total is None:
            if self._halves is not None:
                first, then = self._halves
                self._explicit_total = first.explicit_total() + then.explicit_total()
            else:
                self._explicit_total = sum(sum(map(len, _explicit_parts(p.entry))) for p in self.pieces())
        return self._explicit_total

    def pieces(self) -> list[_Piece]:
        """The items in priority order (a joined layout's made on first use: only a catalog that
        fits in the explicit form renders them one by one)."""
        if self._order is None:
            assert self._halves is not None
            first, then = self._halves
            self._order = first.pieces() + then.pieces()
        return self._order

    # -- rendering ---------------------------------------------------------------------------

    def render_explicit(self, header: str, caps: Mapping[int, int | None] | None = None) -> str:
        """The explicit form: every item in priority order with its id and files-root, its
        description cut to ``caps[index]`` (``None``, or no ``caps``: whole)."""
        parts = [header, _FRAME[0]]
        for index, piece in enumerate(self.pieces()):
            cap = None if caps is None else caps[index]
            opening, closing = _explicit_parts(piece.entry)
            parts += [opening, piece.description if cap is None else _shorten(piece.description, cap), closing]
        parts += [self.shadowed, _FRAME[1]]
        return "".join(parts)

    def render(self, header: str, caps: Mapping[int, int | None], named: int = 0, more: bool = False) -> str:
        """The catalog: items in ``caps`` described (``None``: whole), the next ``named`` items
        in priority order named; with ``more`` the rest counted and the shadowed line left out."""
        shown = len(caps) + named
        parts = [header, _FRAME[0]]
        for opening, members in self.groups:
            if members[0] >= shown:
                continue  # a group's members are in index order: none of them is shown
            members = members[: bisect.bisect_left(members, shown)]
            described = [i for i in members if i in caps]
            listed = [i for i in members if i not in caps]
            if not described and not listed:
                continue
            parts.append(opening)
            for index in described:
                cap = caps[index]
                text = self.descriptions[index]
                parts += [self.opens[index], text if cap is None else _shorten(text, cap), "</skill>\n"]
            plain = [self.tokens[i] for i in listed if not self.tokens[i].endswith("\n")]
            parts += [self.tokens[i] for i in listed if self.tokens[i].endswith("\n")]
            if plain:
                parts += [_NAMES[0], ", ".join(plain), _NAMES[1]]
            parts.append("</skills>\n")
        if not more:
            parts.append(self.shadowed)
        elif shown < self.count:
            parts.append(_more_line(self.count - shown))
        parts.append(_FRAME[1])
        return "".join(parts)

    # -- fitting -----------------------------------------------------------------------------

    def fit(self, budget: int, header: Callable[..., str], search_tool: str | None) -> str:
        """The catalog cut to ``budget``: see :func:`build_catalog` for the order of cuts."""
        text = self.describe_all(budget, header(True))
        if text is None:
            text = self._name_rest(budget, header(True, True))
        if text is None:
            text = self._count_rest(budget, header(True, False, False), header(True, True, False), search_tool)
        return text

    def _frame(self, header: str) -> int:
        return len(header) + len(_FRAME[0]) + len(_FRAME[1])

    def _described_frame(self, header: str) -> int:
        """The size of a catalog with every item described, but for the items themselves: the
        frame, every group's tags (no ``<skill-names>``) and the shadowed line."""
        names = len(self.groups) * (len(_NAMES[0]) + len(_NAMES[1]))
        return self._frame(header) + self.group_sums[-1] - names + len(self.shadowed)

    def whole_size(self, header: str) -> int:
        """The length of :meth:`render` with every item described whole."""
        return self._described_frame(header) + self.whole_sums[-1]

    def _explicit_frame(self, header: str) -> int:
        """The size of the explicit form but for its items: the frame and the shadowed line."""
        return self._frame(header) + len(self.shadowed)

    def explicit_size(self, header: str) -> int:
        """The length of :meth:`render_explicit` with every item whole."""
        return self._explicit_frame(header) + self.explicit_total() + self.whole_sums[-1] - self.fixed_total

    def describe_all(self, budget: int, header: str, *, explicit: bool = False) -> str | None:
        """Step 1: every item described, in the explicit form or grouped; the top ``kept``
        layers whole, the rest cut to one cap."""
        if explicit:
            base = self._explicit_frame(header) + self.explicit_total()
        else:
            base = self._described_frame(header) + self.fixed_total
        for whole in reversed(self.tiers):
            # ``base`` plus the whole descriptions of the first ``whole`` items.
            size = _CappedSize(base + self.whole_sums[whole] - sum(self.fixed[:whole]), self.suffix(whole))
            if size(_MIN_DESCRIPTION) <= budget:
                break
        else:
            return None
        cap = _largest(_MIN_DESCRIPTION, max(size.longest, _MIN_DESCRIPTION), lambda c: size(c) <= budget)
        caps = self._caps(whole, self.count, cap)
        return self.render_explicit(header, caps) if explicit else self.render(header, caps)

    def _caps(self, whole: int, described: int, cap: int = _MIN_DESCRIPTION) -> dict[int, int | None]:
        """The first ``whole`` items whole, the next ones up to ``described`` cut to ``cap``."""
        caps: dict[int, int | None] = dict.fromkeys(range(whole))
        caps.update(dict.fromkeys(range(whole, described), cap))
        return caps

    def _size(self, header: str, whole: int, described: int, named: int, more: bool) -> int:
        """An upper bound of the text with the first ``whole`` items whole, the next ones up to
        ``described`` at the shortest description, the next ``named`` named and, with ``more``,
        the rest counted (else the shadowed line)."""
        shown = described + named
        size = self._frame(header) + self.group_sums[shown] + self.whole_sums[whole]
        size += self.described_sums[described] - self.described_sums[whole]
        size += self.named_sums[shown] - self.named_sums[described]
        return size + (len(_more_line(self.count - shown)) if more else len(self.shadowed))

    def _name_rest(self, budget: int, header: str) -> str | None:
        """Step 2: the most layers whole that leave room for every name, then as many items
        described briefly as fit, every other one named."""
        for whole in reversed(self.tiers):
            described = self._most_described(header, whole, budget)
            if described >= whole:
                return self.render(header, self._caps(whole, described), self.count - described)
        return None

    def _most_described(self, header: str, whole: int, budget: int) -> int:
        return _largest(whole, self.count, lambda k: self._size(header, whole, k, self.count - k, False) <= budget)

    def _count_rest(self, budget: int, plain: str, header: str, search_tool: str | None) -> str:
        """Step 3: the first items described within a share of the budget (the most layers whole
        that fit), the next named, the rest counted. ``plain`` is the header without names."""
        share = int(budget * _DESCRIBED_SHARE)
        whole = next((w for w in reversed(self.tiers) if self._size(plain, w, w, 0, True) <= share), 0)
        described = max(whole, _largest(whole, self.count, lambda k: self._size(plain, whole, k, 0, True) <= share))
        rest = self.count - described
        named = _largest(1, rest, lambda n: self._size(header, whole, described, n, True) <= budget) if rest else 0
        if named > 0:
            return self.render(header, self._caps(whole, described), named, more=True)
        if self._size(plain, whole, described, 0, True) <= budget:
            return self.render(plain, self._caps(whole, described), more=True)
        return _smallest(self.count, budget, search_tool)


class _Joined(Sequence[int]):
    """The prefix sums of two layouts' items one after the other, read off theirs: ``head``'s,
    then ``tail``'s past its leading 0 shifted by ``head``'s total (none is copied)."""

    def __init__(self, head: Sequence[int], tail: Sequence[int]) -> None:
        self.head, self.tail = head, tail
        self.split, self.shift = len(head) - 1, head[-1]

    def __len__(self) -> int:
        return self.split + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if index <= self.split:
            return self.head[index]
        return self.shift + self.tail[index - self.split]


class _DescriptionLengths:
    """Description lengths sorted, with their prefix sums: what a catalog's size at a cap needs."""

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = sorted(lengths)
        self.sums = [0, *itertools.accumulate(self.lengths)]
        self.longest = self.lengths[-1] if self.lengths else 0


class _CappedSize:
    """The size of a catalog whose descriptions are cut to a cap, plus ``fixed``: a sum over
    sorted lengths, so each cap costs a bisection."""

    def __init__(self, fixed: int, lengths: _DescriptionLengths) -> None:
        self.fixed = fixed
        self.lengths, self.sums, self.longest = lengths.lengths, lengths.sums, lengths.longest

    def __call__(self, cap: int) -> int:
        below = bisect.bisect_right(self.lengths, cap)
        return self.fixed + self.sums[below] + cap * (len(self.lengths) - below)


def _more_line(count: int) -> str:
    return f'<more count="{count}">{count} more skills are not listed for space</more>\n'


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


def _smallest(count: int, budget: int, search_tool: str | None) -> str:
    """The catalog of a budget too small for the header: a count (and the search tool), or
    nothing when not even that fits."""
    how = f"; find them with {search_tool}" if search_tool else ""
    text = f'<available_skills>\n<more count="{count}">{count} skills not listed for space{how}</more>\n</available_skills>'
    return text if len(text) <= budget else ""


def _shorten(text: str, cap: int) -> str:
    """``text`` (escaped) cut to at most ``cap`` characters with an ellipsis, never inside an
    entity such as ``&amp;``."""
    if len(text) <= cap:
        return text
    cut = text[: cap - 1]
    amp = cut.rfind("&", max(0, len(cut) - 5))
    if amp >= 0 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut.rstrip() + _ELLIPSIS

"""The ``Skill`` value and lenient loading from SKILL.md bytes (what the harness does at runtime).

Runtime loading is forgiving where the Agent Skills specification is strict: a spec-style
problem (a name that differs from its folder, upper case, an unknown field, a key given twice)
loads with a warning. Our own documented field ``disable-model-invocation`` never warns. A
name taken from the folder (no usable ``name``) is held to the same rules as a written one.
A skill is skipped, with an error diagnostic, when its SKILL.md is missing or unparseable or has
no description; a name that is unsafe as a path segment is always rejected.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.diagnostics import Diagnostic
from harness.skills.frontmatter import FrontmatterError, frontmatter_body, frontmatter_fields
from harness.skills.rules import check_fields, check_name, unsafe_name_reason

__all__ = ["WORKFLOW_MARKERS", "Layer", "Skill", "load_skill"]


class Layer(enum.Enum):
    """Where a skill comes from; a higher ``rank`` wins a name clash."""

    GLOBAL = "global"
    MARKET = "market"
    WORKSPACE = "workspace"
    USER = "user"

    @property
    def rank(self) -> int:
        """1 (lowest) to 4 (highest), as in the layer table."""
        return _RANKS[self]


_RANKS = {Layer.GLOBAL: 1, Layer.MARKET: 2, Layer.WORKSPACE: 3, Layer.USER: 4}


# A skill folder carrying one of these first files holds a workflow definition (harness.engine).
NATIVE_FILES = ("workflow.yaml", "guardrails.yaml", "checks.yaml")
COMET_FILES = ("comet/skill.yaml", "comet/guardrails.yaml", "comet/checks.yaml")


WORKFLOW_MARKERS = (NATIVE_FILES[0], COMET_FILES[0])
"""The files whose presence makes a skill folder a workflow package (what a lazy listing looks for)."""
_MARKERS = frozenset(WORKFLOW_MARKERS)


def is_workflow_package(paths: Iterable[str]) -> bool:
    """Whether a skill folder with these relative file paths carries a workflow definition."""
    return not _MARKERS.isdisjoint(paths)


@dataclass(frozen=True, kw_only=True, slots=True)
class Skill:
    """A loaded skill.

    ``metadata`` holds every frontmatter field in file order, as parsed (the specification's
    text fields as the text written, see :mod:`harness.skills.frontmatter`). ``location`` is
    the skill's real folder (host path, ``file://`` style URL or store path), ``folder`` its last
    segment; ``files`` the relative paths of its other files as its layer listed them at load
    (a folder layer read in place lists only the folder's top level and its workflow definition
    files then: ``ResolvedSkill.list_files()`` gives the whole listing); ``raw`` the SKILL.md
    bytes exactly as they were read.
    """

    name: str
    description: str
    metadata: Mapping[str, Any]
    disable_model_invocation: bool
    location: str
    folder: str
    source: str
    layer: Layer
    files: tuple[str, ...] = ()
    raw: bytes = field(repr=False)
    skill_md_name: str = "SKILL.md"

    @property
    def body(self) -> str:
        """The instructions after the frontmatter, read off :attr:`raw` on each call (a skill
        keeps only its bytes: a process holding many users' skills would otherwise hold each
        body twice)."""
        return frontmatter_body(self.raw)

    @property
    def skill_id(self) -> str:
        """``<name>_<source>``, e.g. ``code-reviewer_workspace-namespaced``."""
        return f"{self.name}_{self.source}"

    @property
    def hidden(self) -> bool:
        """Left out of the catalog (``disable-model-invocation: true``)."""
        return self.disable_model_invocation


_NAME_CODES = frozenset({"missing-name", "name-not-string"})
_DESCRIPTION_CODES = frozenset({"missing-description", "description-not-string"})
# Handled before the rules run, or our own documented field: never a load-time warning.
_NOT_WARNED = _NAME_CODES | _DESCRIPTION_CODES | {"extension-field"}


def _name(fields: Mapping[str, Any], folder: str, where: str) -> tuple[str, list[Diagnostic]]:
    """The skill's name, and a warning when it falls back to the (unstripped) folder name."""
    name = fields.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip(), []
    problem = next(p for p in check_fields(fields, folder=None) if p.code in _NAME_CODES)
    return folder, [
        Diagnostic.warning(
            code=problem.code,
            message=f"{problem.message} (using the folder name {folder!r})",
            location=where,
        )
    ]


def load_skill(
    data: bytes,
    *,
    folder: str,
    location: str,
    source: str,
    layer: Layer,
    files: tuple[str, ...] = (),
    skill_md_name: str = "SKILL.md",
) -> tuple[Skill | None, list[Diagnostic]]:
    """Parse SKILL.md bytes leniently; returns the skill (or ``None`` when skipped) and findings."""
    where = f"{location}/{skill_md_name}"
    try:
        fields, duplicate_keys = frontmatter_fields(data)
    except FrontmatterError as exc:
        return None, [Diagnostic.error(code=exc.code, message=f"skipped: {exc}", location=where)]
    name, diagnostics = _name(fields, folder, where)
    unsafe = unsafe_name_reason(name)
    if unsafe:
        return None, [
            *diagnostics,
            Diagnostic.error(code="unsafe-name", message=f"skipped: skill name {name!r} {unsafe}", location=where),
        ]
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        problem = next(p for p in check_fields(fields, folder=None) if p.code in _DESCRIPTION_CODES)
        return None, [
            *diagnostics,
            Diagnostic.error(code=problem.code, message=f"skipped: {problem.message}", location=where),
        ]
    problems = check_fields(fields, folder=folder, duplicate_keys=duplicate_keys)
    if diagnostics:  # the name came from the folder: hold it to the same rules
        problems += check_name(name, None)
    diagnostics += [
        Diagnostic.warning(code=p.code, message=p.message, location=where)
        for p in problems
        if p.code not in _NOT_WARNED
    ]
    skill = Skill(
        name=name,
        description=description.strip(),
        metadata=fields,
        disable_model_invocation=fields.get("disable-model-invocation") is True,
        location=location,
        folder=folder,
        source=source,
        layer=layer,
        files=files,
        raw=data,
        skill_md_name=skill_md_name,
    )
    return skill, diagnostics

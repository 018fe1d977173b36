"""The ``Skill`` value and lenient loading from SKILL.md bytes (what the harness does at runtime).

Runtime loading is forgiving where the Agent Skills specification is strict: a spec-style
problem (a name that differs from its folder, upper case, an unknown field) loads with a warning.
A skill is skipped, with an error diagnostic, when its SKILL.md is missing or unparseable or has
no description; a name that is unsafe as a path segment is always rejected.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.diagnostics import Diagnostic
from harness.frontmatter import FrontmatterError, split_frontmatter
from harness.rules import check_fields, unsafe_segment_reason

__all__ = ["Layer", "Skill", "load_skill"]


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


@dataclass(frozen=True, kw_only=True, slots=True)
class Skill:
    """A loaded skill.

    ``metadata`` holds every frontmatter field in file order, as YAML gave it. ``location`` is
    the skill's real folder (host path, ``file://`` style URL or store path), ``folder`` its last
    segment; ``files`` the relative paths of its other files; ``raw`` the SKILL.md bytes exactly
    as they were read.
    """

    name: str
    description: str
    body: str
    metadata: Mapping[str, Any]
    disable_model_invocation: bool
    location: str
    folder: str
    source: str
    layer: Layer
    files: tuple[str, ...] = ()
    raw: bytes = field(default=b"", repr=False)
    skill_md_name: str = "SKILL.md"

    @property
    def skill_id(self) -> str:
        """``<name>_<source>``, e.g. ``code-reviewer_workspace-namespaced``."""
        return f"{self.name}_{self.source}"

    @property
    def hidden(self) -> bool:
        """Left out of the catalog (``disable-model-invocation: true``)."""
        return self.disable_model_invocation


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
        parsed = split_frontmatter(data)
    except FrontmatterError as exc:
        return None, [Diagnostic(severity="error", code=exc.code, message=f"skipped: {exc}", location=where)]
    fields = parsed.fields
    diagnostics: list[Diagnostic] = []
    name = fields.get("name")
    if not isinstance(name, str) or not name.strip():
        name = folder
        diagnostics.append(
            Diagnostic(
                severity="warning",
                code="missing-name",
                message=f"Missing required field in frontmatter: name (using the folder name {folder!r})",
                location=where,
            )
        )
    name = name.strip()
    unsafe = unsafe_segment_reason(name)
    if unsafe:
        return None, [
            Diagnostic(severity="error", code="unsafe-name", message=f"skipped: skill name {name!r} {unsafe}", location=where)
        ]
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        return None, [
            *diagnostics,
            Diagnostic(
                severity="error",
                code="missing-description",
                message="skipped: Field 'description' must be a non-empty string",
                location=where,
            ),
        ]
    for problem in check_fields(fields, folder=folder):
        if problem.code not in {"missing-name", "missing-description"}:
            diagnostics.append(
                Diagnostic(severity="warning", code=problem.code, message=problem.message, location=where)
            )
    skill = Skill(
        name=name,
        description=description.strip(),
        body=parsed.body,
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

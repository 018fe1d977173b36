"""Validate skill folders on disk: strict (the Agent Skills specification) or lenient (runtime)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.frontmatter import FrontmatterError, split_frontmatter
from harness.rules import check_fields
from harness.skill import Layer, load_skill

__all__ = ["SKILL_MD_NAMES", "ValidationReport", "find_skill_dirs", "find_skill_md", "validate_skill_dir"]

SKILL_MD_NAMES = ("SKILL.md", "skill.md")


@dataclass(frozen=True, kw_only=True, slots=True)
class ValidationReport:
    """The outcome for one skill folder."""

    path: str
    name: str | None
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors

    def as_dict(self) -> dict[str, object]:
        """The JSON shape of ``harness skills validate --json``."""
        return {"path": self.path, "name": self.name, "errors": list(self.errors), "warnings": list(self.warnings)}


def find_skill_md(folder: Path) -> Path | None:
    """``SKILL.md`` in ``folder`` (a lowercase ``skill.md`` is accepted), else ``None``."""
    for name in SKILL_MD_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def find_skill_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is a skill folder, else every skill folder below it, sorted.

    Dot-folders and ``node_modules`` are not searched; a skill folder's own subfolders are its
    files, not further skills.
    """
    if find_skill_md(path) is not None or not path.is_dir():
        return [path]
    found: list[Path] = []
    for current, dirs, files in os.walk(path):
        if any(name in files for name in SKILL_MD_NAMES):
            found.append(Path(current))
            dirs.clear()
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
    return sorted(found) or [path]


def validate_skill_dir(path: Path, *, strict: bool = True) -> ValidationReport:
    """Check one skill folder; ``strict`` applies the specification, else runtime leniency."""
    if not path.exists():
        return _failed(path, f"Path does not exist: {path}")
    if not path.is_dir():
        return _failed(path, f"Not a directory: {path}")
    skill_md = find_skill_md(path)
    if skill_md is None:
        return _failed(path, "Missing required file: SKILL.md")
    try:
        data = skill_md.read_bytes()
    except OSError as exc:
        return _failed(path, f"Cannot read {skill_md}: {exc.strerror or exc}")
    return _strict(path, data) if strict else _lenient(path, skill_md, data)


def _strict(path: Path, data: bytes) -> ValidationReport:
    try:
        parsed = split_frontmatter(data)
    except FrontmatterError as exc:
        return _failed(path, str(exc))
    fields = parsed.fields
    problems = check_fields(fields, folder=path.name, duplicate_keys=parsed.duplicate_keys)
    name = fields.get("name")
    return ValidationReport(
        path=str(path),
        name=name if isinstance(name, str) else None,
        errors=tuple(p.message for p in problems if p.error),
        warnings=tuple(p.message for p in problems if not p.error),
    )


def _lenient(path: Path, skill_md: Path, data: bytes) -> ValidationReport:
    skill, diagnostics = load_skill(
        data,
        folder=path.name,
        location=str(path),
        source="local",
        layer=Layer.WORKSPACE,
        skill_md_name=skill_md.name,
    )
    return ValidationReport(
        path=str(path),
        name=skill.name if skill else None,
        errors=tuple(d.message for d in diagnostics if d.severity == "error"),
        warnings=tuple(d.message for d in diagnostics if d.severity == "warning"),
    )


def _failed(path: Path, message: str) -> ValidationReport:
    return ValidationReport(path=str(path), name=None, errors=(message,), warnings=())

"""Validate skill folders on disk: strict (the Agent Skills specification) or lenient (runtime)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.skills.frontmatter import FrontmatterError, split_frontmatter
from harness.skills.rules import check_fields
from harness.skills.skill import Layer, load_skill
from repositories import SKILL_MD_NAMES
from repositories.directory import discover_host

__all__ = [
    "SKILL_MD_NAMES",
    "FoundSkillDirs",
    "ValidationReport",
    "discover_skill_dirs",
    "find_skill_dirs",
    "find_skill_md",
    "validate_skill_dir",
]


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
    """``path`` itself when it is a skill folder, else every skill folder below it, sorted
    (see :func:`discover_skill_dirs`)."""
    return discover_skill_dirs(path).folders


@dataclass(frozen=True, kw_only=True, slots=True)
class FoundSkillDirs:
    """The skill folders below a path and what discovery reported on the way."""

    folders: list[Path]
    problems: tuple[str, ...] = ()
    failures: frozenset[str] = frozenset()  # the problems that cost a skill (unreadable parts)


def discover_skill_dirs(path: Path) -> FoundSkillDirs:
    """The skill folders at or below ``path`` by the runtime's discovery rules (README,
    "Discovery rules"), with links followed as in the operator's layers: ``path`` itself when it
    is one skill folder, ``[path]`` when nothing is found (so it is reported as missing a
    SKILL.md). Unreadable folders, links inside skills and odd names are problems, not errors
    that stop the walk."""
    if not path.is_dir():
        return FoundSkillDirs(folders=[path])
    try:
        found = discover_host(path, follow=True, skip_prefix=".tmp-", by_folder=False)
    except OSError as exc:
        problem = f"cannot read folder {str(path)!r}: {exc.strerror or exc}"
        return FoundSkillDirs(folders=[path], problems=(problem,), failures=frozenset({problem}))
    folders = sorted(path / layout.root if layout.root else path for layout in found.skills)
    return FoundSkillDirs(folders=folders or [path], problems=tuple(found.problems), failures=found.failures)


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
        return _failed(path, f"cannot read {skill_md}: {exc.strerror or exc}")
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

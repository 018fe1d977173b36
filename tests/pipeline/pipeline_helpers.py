"""Helpers to build skill folders and market bundles for pipeline tests."""

from __future__ import annotations

from pathlib import Path

from repositories import FileContents, SkillBundleContents


def skill_text(name: str, description: str | None = None, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description or f'Use for {name} tasks.'}\n{extra}---\n# {name}\nRun scripts/run.sh\n"


def write_skill(root: Path, name: str, *, description: str | None = None, script: str | None = None, extra: str = "") -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_text(name, description, extra))
    if script is not None:
        (folder / "scripts" / "run.sh").write_text(script)
    return folder


def bundle(name: str, *, description: str | None = None, script: str = "#!/bin/sh\necho market-{name}\n", extra: str = "") -> SkillBundleContents:
    return SkillBundleContents(
        folder=name,
        skill_md=skill_text(name, description, extra).encode(),
        files=(FileContents(path="scripts/run.sh", data=script.format(name=name).encode(), mode=0o644),),
    )

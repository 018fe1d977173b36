"""Pipeline-suite helpers: skills with a ``scripts/run.sh``, market bundles, a git remote with
executable skills, a zipped skill package and a MySQL market."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from filesystems import AbstractFilesystem, LocalFilesystem
from harness.pipeline import SkillPipeline
from repositories import MySQLRepository, SkillBundleContents, SkillRepository
from tests.support import git
from tests.support.filesystems import MODES, open_filesystem, shared_dir
from tests.support.mysql import drop_tables, unique_table
from tests.support.packages import zipped_package
from tests.support.skills import make_bundle, make_skill, skill_md

__all__ = [
    "MODES",
    "GitRemote",
    "bundle",
    "echo_script",
    "local_pipeline",
    "mysql_market",
    "open_filesystem",
    "put_skill",
    "shared_dir",
    "skill_text",
    "write_skill",
    "zipped_skill_package",
]


@asynccontextmanager
async def local_pipeline(root: Path, *repositories: SkillRepository, **options: Any) -> AsyncIterator[SkillPipeline]:
    """A :class:`SkillPipeline` over a shell-enabled :class:`LocalFilesystem` at ``root`` with the
    given markets; ``options`` go to the pipeline."""
    async with (
        LocalFilesystem(root, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=list(repositories), **options) as pipeline,
    ):
        yield pipeline


def skill_text(name: str, description: str | None = None, extra: str = "") -> str:
    """SKILL.md text whose body points at ``scripts/run.sh``."""
    return skill_md(name, description, extra=extra, body=f"# {name}\nRun scripts/run.sh\n")


def write_skill(
    root: Path, name: str, *, description: str | None = None, script: str | None = None, extra: str = ""
) -> Path:
    """``root/name`` with :func:`skill_text` and, given ``script``, a ``scripts/run.sh``."""
    folder = make_skill(
        root,
        name,
        text=skill_text(name, description, extra),
        files={"scripts/run.sh": script} if script is not None else None,
    )
    (folder / "scripts").mkdir(exist_ok=True)
    return folder


async def put_skill(
    fs: AbstractFilesystem, name: str, *, description: str | None = None, script: str | None = None
) -> None:
    """A skill folder ``skills/<name>`` written through ``fs`` (any mode, scoped or not)."""
    await fs.write_text(f"skills/{name}/SKILL.md", skill_text(name, description))
    if script is not None:
        await fs.write_text(f"skills/{name}/scripts/run.sh", script, mode=0o755)


def bundle(
    name: str, *, description: str | None = None, script: str = "#!/bin/sh\necho market-{name}\n", extra: str = ""
) -> SkillBundleContents:
    """A market bundle with :func:`skill_text` and a ``scripts/run.sh`` (``{name}`` filled in)."""
    return make_bundle(
        name, text=skill_text(name, description, extra), files={"scripts/run.sh": script.format(name=name)}
    )


def echo_script(tag: str) -> str:
    return f"#!/bin/sh\necho {tag}\n"


class GitRemote(git.GitRemote):
    """The shared git remote, plus skills with an executable ``scripts/run.sh``."""

    def skill(self, name: str, *, description: str | None = None, script: str | None = None) -> None:
        write_skill(self.work / "skills", name, description=description, script=script)
        if script is not None:
            (self.work / "skills" / name / "scripts" / "run.sh").chmod(0o755)

    def remove(self, name: str) -> None:
        shutil.rmtree(self.work / "skills" / name)


def zipped_skill_package(base: Path, skills: dict[str, str]) -> AbstractContextManager[str]:
    """An importable zipped package (see :func:`tests.support.packages.zipped_package`) whose
    ``skills/`` folder holds one skill per ``skills`` item (name -> the tag its executable script echoes)."""
    files: dict[str, str | tuple[str, int]] = {}
    for name, tag in skills.items():
        files[f"skills/{name}/SKILL.md"] = skill_text(name, f"pkg {name}")
        files[f"skills/{name}/scripts/run.sh"] = (echo_script(tag), 0o755)
    return zipped_package(base, files, prefix="pipe_pkg")


@asynccontextmanager
async def mysql_market(dsn: str, bundles: Iterable[SkillBundleContents]) -> AsyncIterator[MySQLRepository]:
    """A writable MySQL market in fresh uniquely named tables, dropped afterwards."""
    table = unique_table("pipe")
    try:
        async with MySQLRepository(dsn, table=table, writable=True, create_if_missing=True) as repo:
            for item in bundles:
                await repo.save(item)
            yield repo
    finally:
        await drop_tables(dsn, table)

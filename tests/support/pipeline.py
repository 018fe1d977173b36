"""Pipeline-suite helpers: skills with a ``scripts/run.sh``, market bundles, a git remote with
executable skills, a zipped skill package and a MySQL market."""

from __future__ import annotations

import importlib
import secrets
import shutil
import stat
import sys
import zipfile
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from filesystems import AbstractFilesystem
from repositories import FileContents, MySQLRepository, SkillBundleContents
from tests.support import git
from tests.support.filesystems import MODES, open_filesystem, shared_dir
from tests.support.mysql import drop_tables, unique_table
from tests.support.skills import make_skill, skill_md

__all__ = [
    "MODES",
    "GitRemote",
    "bundle",
    "echo_script",
    "mysql_market",
    "open_filesystem",
    "put_skill",
    "shared_dir",
    "skill_text",
    "write_skill",
    "zipped_skill_package",
]


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
    return SkillBundleContents(
        folder=name,
        skill_md=skill_text(name, description, extra).encode(),
        files=(FileContents(path="scripts/run.sh", data=script.format(name=name).encode(), mode=0o644),),
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


@contextmanager
def zipped_skill_package(base: Path, skills: dict[str, str]) -> Iterator[str]:
    """An importable package inside a zip on ``sys.path`` (as a wheel would be) whose ``skills/``
    folder holds one skill per ``skills`` item (name -> the tag its executable script echoes)."""
    package = f"pipe_pkg_{secrets.token_hex(4)}"
    archive = base / f"{package}.zip"
    base.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as zipped:

        def add(path: str, text: str, mode: int = 0o644) -> None:
            info = zipfile.ZipInfo(f"{package}/{path}")
            info.external_attr = (stat.S_IFREG | mode) << 16  # a regular file, as wheel builders record it
            zipped.writestr(info, text)

        add("__init__.py", "")
        for name, tag in skills.items():
            add(f"skills/{name}/SKILL.md", skill_text(name, f"pkg {name}"))
            add(f"skills/{name}/scripts/run.sh", echo_script(tag), 0o755)
    sys.path.insert(0, str(archive))
    importlib.invalidate_caches()
    try:
        yield package
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop(package, None)


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

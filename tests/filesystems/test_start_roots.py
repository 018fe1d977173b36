"""``run()``'s policy for commands that start in a read-only folder outside the root (a skill's
folder) and put folders first on path-like variables, in every shell mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem, PathEscapeError, SandboxFilesystem
from tests.support.filesystems import build_filesystem


@pytest.fixture(params=["local-shell", "sandbox"])
async def shell(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[AbstractFilesystem, str, Path]]:
    """Alice's shell, the shell path of a read-only skill folder it may start in, and its host folder."""
    async with build_filesystem(request, request.param, tmp_path) as built:
        assert built.host is not None
        folder = built.host / ".skills-cache" / "acme" / "tool"
        (folder / "scripts").mkdir(parents=True)
        (folder / "scripts" / "hello.sh").write_text("echo hello from $(basename $(pwd))\n")
        async with built.fs as fs:
            yield fs.scoped("alice"), fs.shell_path(".skills-cache/acme/tool"), folder


async def test_a_command_starts_in_an_allowed_folder_and_below_it(shell: tuple[AbstractFilesystem, str, Path]) -> None:
    fs, start, _ = shell
    result = await fs.run("sh scripts/hello.sh", cwd=start, start_roots=[start])
    assert result.stdout == "hello from tool\n"
    below = await fs.run("pwd", cwd=f"{start}/scripts", start_roots=[start])
    assert below.stdout == f"{start}/scripts\n"


@pytest.mark.parametrize("cwd", ["{start}/..", "{start}/../other", "/etc", "{start}x", "/"])
async def test_absolute_folders_outside_the_allowed_ones_are_refused(
    shell: tuple[AbstractFilesystem, str, Path], cwd: str
) -> None:
    fs, start, _ = shell
    with pytest.raises(PathEscapeError, match="outside"):
        await fs.run("true", cwd=cwd.format(start=start), start_roots=[start])


async def test_without_start_roots_an_absolute_cwd_is_refused(shell: tuple[AbstractFilesystem, str, Path]) -> None:
    fs, start, _ = shell
    with pytest.raises(PathEscapeError, match="absolute"):
        await fs.run("true", cwd=start)


async def test_prepended_folders_come_first_for_one_command(shell: tuple[AbstractFilesystem, str, Path]) -> None:
    fs, start, _ = shell
    result = await fs.run('echo "$PATH|$PYTHONPATH"', prepend={"PATH": ["/opt/a/bin"], "PYTHONPATH": [start, "/opt/a"]})
    path, python_path = result.stdout.strip().split("|")
    assert path.startswith("/opt/a/bin:") and path.endswith(":/usr/bin:/bin")
    assert python_path == f"{start}:/opt/a"
    again = await fs.run('echo "$PATH"')
    assert "/opt/a/bin" not in again.stdout


@pytest.mark.parametrize("folders", [["bin"], ["/a:/b"], ["/a\x00"], "/opt/a"])
async def test_prepend_takes_absolute_folders_only(
    shell: tuple[AbstractFilesystem, str, Path], folders: object
) -> None:
    fs, _, _ = shell
    with pytest.raises(ValueError, match="prepend"):
        await fs.run("true", prepend={"PATH": folders})  # type: ignore[dict-item]


async def test_the_skill_folder_stays_read_only_in_the_sandbox(bwrap: str, sandbox_dir: Path) -> None:
    folder = sandbox_dir / ".skills-cache" / "acme" / "tool"
    folder.mkdir(parents=True)
    async with SandboxFilesystem(sandbox_dir, bwrap=bwrap) as fs:
        start = fs.shell_path(".skills-cache/acme/tool")
        result = await fs.scoped("alice").run("touch out.txt", cwd=start, start_roots=[start])
    assert result.exit_code != 0 and "Read-only file system" in result.stderr
    assert not (folder / "out.txt").exists()

"""Scripts of public skills run as written: ``python`` exists in every shell, and a deployment
adds variables and PATH folders without the harness's own environment reaching the shell."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxFilesystem
from harness.config import load_config
from harness.errors import ConfigError
from tests.skills_compat.layouts import public_skill
from tests.support.filesystems import shared_dir


@pytest.fixture(params=["local-shell", "sandbox"])
def make_shell(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, type[AbstractFilesystem]]]:
    """The host root of a user's area and a builder of its shell filesystem (scoped to ``alice``)."""
    if request.param == "sandbox":
        request.getfixturevalue("bwrap")
        yield request.getfixturevalue("sandbox_dir"), SandboxFilesystem
    else:
        yield tmp_path / "ws", LocalFilesystem


def _open(made: tuple[Path, type[AbstractFilesystem]], **options: object) -> AbstractFilesystem:
    root, kind = made
    fs = kind(root, **options) if kind is SandboxFilesystem else kind(root, shell=True, **options)  # type: ignore[call-arg]
    return fs.scoped("alice")


async def test_python_scripts_of_a_public_skill_run(make_shell: tuple[Path, type[AbstractFilesystem]]) -> None:
    root, _ = make_shell
    public_skill(root / "alice" / "skills", "report")
    os.chmod(root / "alice", 0o755)
    fs = _open(make_shell)
    result = await fs.run("python scripts/report.py && sh scripts/run.sh", cwd="skills/report")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "report from report.py 3\nreport from report.py 3\n"


async def test_configured_variables_and_path_reach_the_shell(
    make_shell: tuple[Path, type[AbstractFilesystem]],
) -> None:
    with shared_dir("tools-") as tools:
        (tools / "bin").mkdir()
        fs = _open(make_shell, env={"REPORT_MODE": "brief"}, path=[f"{tools}/bin"])
        result = await fs.run('echo "$REPORT_MODE $PATH"')
    mode, path = result.stdout.split()
    assert mode == "brief"
    assert path.split(":")[0] == f"{tools}/bin" and path.endswith("/usr/local/bin:/usr/bin:/bin")


async def test_python_writes_no_bytecode_next_to_the_scripts_it_runs(
    make_shell: tuple[Path, type[AbstractFilesystem]],
) -> None:
    fs = _open(make_shell)
    result = await fs.run("python3 -c 'import sys; print(sys.dont_write_bytecode)'")
    assert result.stdout == "True\n", result.stderr


async def test_api_keys_of_the_harness_never_reach_the_shell(
    make_shell: tuple[Path, type[AbstractFilesystem]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    fs = _open(make_shell, env={"REPORT_MODE": "brief"})
    result = await fs.run("env")
    assert "REPORT_MODE=brief" in result.stdout
    assert "secret" not in result.stdout and "API_KEY" not in result.stdout


def test_path_cannot_be_set_through_env(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="path option"):
        LocalFilesystem(tmp_path, shell=True, env={"PATH": "/tmp"})


def test_relative_path_entries_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        LocalFilesystem(tmp_path, shell=True, path=["bin"])


async def test_the_python_shim_folder_is_read_only_in_the_sandbox(bwrap: str, sandbox_dir: Path) -> None:
    fs = SandboxFilesystem(sandbox_dir, bwrap=bwrap).scoped("alice")
    result = await fs.run('d=$(dirname "$(command -v python)"); touch "$d/python3" || ln -s /bin/sh "$d/ls"; echo $?')
    assert result.stdout.strip().endswith("1") and "Read-only file system" in result.stderr


def test_harness_yaml_filesystem_env_and_path_reach_the_filesystem(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text(
        "filesystem:\n  mode: local-shell\n  env: {REPORT_MODE: brief, RETRIES: 3}\n  path: [/opt/tools/bin]\n"
    )
    config = load_config(tmp_path / "harness.yaml")
    assert dict(config.shell_env) == {"REPORT_MODE": "brief", "RETRIES": "3"}
    fs = config.open_filesystem()
    result = anyio.run(lambda: fs.run('echo "$RETRIES $PATH"'))
    assert result.stdout.startswith("3 /opt/tools/bin:")


def test_harness_yaml_refuses_path_in_env(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("filesystem:\n  mode: local-shell\n  env: {PATH: /tmp}\n")
    with pytest.raises(ConfigError, match="filesystem.path"):
        load_config(tmp_path / "harness.yaml")

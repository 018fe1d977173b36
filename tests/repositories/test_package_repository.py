"""PackageRepository with the example package built into a wheel and installed into a fresh venv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from harness.pipeline.uv import find_uv
from repositories import InvalidRepositoryConfig, PackageRepository, RepositoryUnavailable

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "skill-package"

PROBE = textwrap.dedent(
    """
    import json, sys, anyio
    from repositories import PackageRepository, open_repository

    async def describe(repo):
        async with repo:
            snap = await repo.snapshot()
            out = []
            for b in snap.bundles:
                data = await repo.read_files(b.folder, [f.path for f in b.files])
                out.append({
                    "folder": b.folder, "source": repo.source, "location": b.location,
                    "skill_md": b.skill_md.decode(), "files": [[f.path, f.size, f.mode] for f in b.files],
                    "data": {k: v.decode() for k, v in data.items()},
                })
            return {"bundles": out, "problems": list(snap.problems), "version": snap.version}

    async def main():
        result = {
            "package": await describe(PackageRepository("acme_skills", "skills")),
            "entrypoints": await describe(open_repository("entrypoints:harness.skills")),
        }
        print(json.dumps(result))

    anyio.run(main)
    """
)


def _run_probe(python: str, env_path: list[str] | None = None) -> dict[str, Any]:
    env = None
    if env_path is not None:
        env = {"PYTHONPATH": ":".join(env_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package built into a wheel by its build backend (PEP 517's ``build_wheel``)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    shutil.copytree(EXAMPLE, source)
    build = f"from setuptools import build_meta; build_meta.build_wheel({str(work / 'dist')!r})"
    subprocess.run([sys.executable, "-c", build], cwd=source, check=True, capture_output=True, timeout=300)
    (built,) = (work / "dist").glob("acme_skills-*.whl")
    return built


@pytest.fixture(scope="module")
def venv_probe(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the probe finds in a fresh venv with the wheel installed by an installer (uv); the
    project itself is reached through a .pth."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [find_uv(), "pip", "install", "-q", "--offline", "--no-index", "--no-deps", "--python", python, str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "harness_project.pth").write_text(f"{ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    return _run_probe(python)


def test_wheel_installed_in_a_venv_serves_its_skill(venv_probe: dict[str, Any]) -> None:
    (bundle,) = venv_probe["package"]["bundles"]
    assert bundle["folder"] == "hello-acme"
    assert bundle["source"] == "pkg-acme_skills"
    assert bundle["skill_md"].startswith("---\nname: hello-acme\n")
    assert bundle["files"] == [
        ["scripts/greet.py", (EXAMPLE / "acme_skills/skills/hello-acme/scripts/greet.py").stat().st_size, 0o755]
    ]
    assert "site-packages" in bundle["location"]
    assert bundle["data"]["scripts/greet.py"].startswith("#!/usr/bin/env python3")


def test_entry_points_advertise_the_installed_package(venv_probe: dict[str, Any]) -> None:
    result = venv_probe
    (bundle,) = result["entrypoints"]["bundles"]
    assert bundle["folder"] == "hello-acme"
    assert bundle["source"] == "pkg-entrypoints"
    assert bundle["data"]["scripts/greet.py"] == result["package"]["bundles"][0]["data"]["scripts/greet.py"]


def test_package_imported_from_a_zip(wheel: Path) -> None:
    purelib = sysconfig.get_paths()["purelib"]
    result = _run_probe(sys.executable, [str(wheel), str(ROOT), purelib])
    (bundle,) = result["package"]["bundles"]
    assert bundle["location"] == "pkg:acme_skills/skills/hello-acme"
    assert bundle["files"][0][0] == "scripts/greet.py"
    assert bundle["files"][0][2] == 0o755
    assert bundle["data"]["scripts/greet.py"].startswith("#!/usr/bin/env python3")
    assert result["entrypoints"]["bundles"][0]["folder"] == "hello-acme"


def test_package_from_a_source_folder_as_editable_installs_serve_it(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "src")
    purelib = sysconfig.get_paths()["purelib"]
    result = _run_probe(sys.executable, [str(tmp_path / "src"), str(ROOT), purelib])
    (bundle,) = result["package"]["bundles"]
    assert bundle["location"] == str(tmp_path / "src/acme_skills/skills/hello-acme")
    assert bundle["files"] == [["scripts/greet.py", bundle["files"][0][1], 0o755]]


async def test_missing_package_or_folder_is_unavailable() -> None:
    async with PackageRepository("no_such_package_here") as repo:
        with pytest.raises(RepositoryUnavailable, match="cannot import"):
            await repo.snapshot()
    async with PackageRepository("repositories", "no-such-folder") as repo:
        with pytest.raises(RepositoryUnavailable, match="no folder"):
            await repo.snapshot()


def test_invalid_package_name_is_refused() -> None:
    with pytest.raises(InvalidRepositoryConfig):
        PackageRepository("not a package")


async def test_zip_entries_without_file_type_bits_are_files(tmp_path: Path) -> None:
    archive = tmp_path / "plain.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("plain_skills/__init__.py", "")
        zf.writestr("plain_skills/skills/tool/SKILL.md", "---\nname: tool\ndescription: d\n---\nx\n")
        zf.writestr("plain_skills/skills/tool/scripts/run.py", "print(1)\n")
    sys.path.insert(0, str(archive))
    try:
        async with PackageRepository("plain_skills", "skills") as repo:
            snapshot = await repo.snapshot()
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop("plain_skills", None)
    assert [b.folder for b in snapshot.bundles] == ["tool"]
    assert [f.path for f in snapshot.bundles[0].files] == ["scripts/run.py"]

"""Build the sdist and the wheel into a temporary folder and check them as a release would be.

``python -m build`` (the wheel is built from the sdist, so a file the sdist lacks fails here;
with the virtualenv's own setuptools and wheel, which the ``dev`` extra installs, instead of a
fresh isolated environment per build),
``twine check --strict`` on both, then their contents: every package ships its ``py.typed``,
and no tests, benchmarks, examples or scripts are packaged. Quiet on success; on failure prints
what went wrong and exits 1. Run by ``scripts/test.sh``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "repositories", "filesystems")
NOT_SHIPPED = ("tests/", "bench/", "examples/", "scripts/")
# Building the sdist writes this next to pyproject.toml; a check must leave the checkout as it was.
EGG_INFO = ROOT / "agent_skill_harness.egg-info"


def _run(*command: str) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"error: {' '.join(command[1:4])} failed (its output is above)")


def _problems(names: list[str], prefix: str) -> list[str]:
    inside = {name.removeprefix(prefix) for name in names if name.startswith(prefix)}
    missing = [f"{package}/py.typed is missing" for package in PACKAGES if f"{package}/py.typed" not in inside]
    shipped = sorted(name for name in inside if name.startswith(NOT_SHIPPED))
    return missing + [f"{name} should not be shipped" for name in shipped]


def main() -> int:
    """Build and check; returns the exit code."""
    had_egg_info = EGG_INFO.exists()
    try:
        problems = _check()
    finally:
        if not had_egg_info:
            shutil.rmtree(EGG_INFO, ignore_errors=True)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _check() -> list[str]:
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="harness-dist-") as out:
        _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, str(ROOT))
        dist = sorted(Path(out).iterdir())
        _run(sys.executable, "-m", "twine", "check", "--strict", *map(str, dist))
        for path in dist:
            if path.suffix == ".whl":
                with zipfile.ZipFile(path) as wheel:
                    names, prefix = wheel.namelist(), ""
            else:
                with tarfile.open(path) as sdist:
                    names = sdist.getnames()
                prefix = names[0].split("/")[0] + "/"
            problems += [f"{path.name}: {problem}" for problem in _problems(names, prefix)]
    return problems


if __name__ == "__main__":
    raise SystemExit(main())

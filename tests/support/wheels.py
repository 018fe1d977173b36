"""Tiny wheels written by hand (a zip with a module, METADATA, WHEEL and RECORD), so
environment builds run with ``--no-index --find-links <folder>`` and never touch a network."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

__all__ = ["WHEELS", "write_wheel", "write_wheelhouse"]

#: The wheels the environment tests install: distribution -> (version, import name). ``PyYAML``
#: stands in for the real one (its module says which it is), so inference can be shown offline.
WHEELS: dict[str, tuple[str, str]] = {
    "hxpdf": ("1.2", "hxpdf"),
    "hxsheet": ("2.0", "hxsheet"),
    "hxprose": ("0.3", "hxprose"),
    "PyYAML": ("6.0", "yaml"),
}


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(folder: Path, name: str, version: str, module: str) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``folder``: ``module/__init__.py`` sets
    ``VALUE = "<name> <version>"``; returns its path."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"VALUE = {f'{name} {version}'!r}\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    target = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(f"{dist}/RECORD", record + f"{dist}/RECORD,,\n")
    return target


def write_wheelhouse(folder: Path) -> Path:
    """A folder holding every wheel of :data:`WHEELS`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (version, module) in WHEELS.items():
        write_wheel(folder, name, version, module)
    return folder

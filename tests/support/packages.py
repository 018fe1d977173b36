"""Importable skill packages inside a zip on ``sys.path``, as an installed wheel would be."""

from __future__ import annotations

import importlib
import secrets
import stat
import sys
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["zipped_package"]


@contextmanager
def zipped_package(
    base: Path, files: Mapping[str, str | bytes | tuple[str | bytes, int]], *, prefix: str = "skills_pkg"
) -> Iterator[str]:
    """A package with a fresh name (yielded) in ``base/<name>.zip`` on ``sys.path``.

    ``files`` maps paths inside the package to their content, or to ``(content, mode)``; each
    entry is recorded as a regular file with its mode in the archive index, as wheel builders do
    (default 0644). An empty ``__init__.py`` is added unless given. The archive leaves
    ``sys.path`` and the package ``sys.modules`` afterwards.
    """
    package = f"{prefix}_{secrets.token_hex(4)}"
    archive = base / f"{package}.zip"
    base.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as zipped:
        for path, given in {"__init__.py": "", **files}.items():
            data, mode = given if isinstance(given, tuple) else (given, 0o644)
            info = zipfile.ZipInfo(f"{package}/{path}")
            info.external_attr = (stat.S_IFREG | mode) << 16
            zipped.writestr(info, data)
    sys.path.insert(0, str(archive))
    importlib.invalidate_caches()
    try:
        yield package
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop(package, None)

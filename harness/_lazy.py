"""Names a package exports without importing the modules that define them until first used.

A package lists those names once, as imports under ``if TYPE_CHECKING:`` (so type checkers and
readers see where each comes from), and hands its module ``__getattr__`` / ``__dir__`` to
:func:`lazy_exports`::

    if TYPE_CHECKING:
        from harness.engine.engine import WorkflowEngine

    __getattr__, __dir__ = lazy_exports(__name__)

The first lookup of a missing name reads that block from the package's source (once) and
imports the one module that defines the name.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports"]


def _type_checking_imports(source: Path, package: str) -> dict[str, tuple[str, str]]:
    """Name -> (defining module, its name there) of every ``from ... import`` under
    ``if TYPE_CHECKING:``."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for inner in node.body:
            if isinstance(inner, ast.ImportFrom) and inner.module is not None:
                base = package.split(".")[: len(package.split(".")) - max(inner.level - 1, 0)]
                module = inner.module if not inner.level else ".".join([*base, inner.module])
                for alias in inner.names:
                    found[alias.asname or alias.name] = (module, alias.name)
    return found


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` that import its ``TYPE_CHECKING``
    names on first use (each is then cached in the package's namespace)."""
    targets: dict[str, tuple[str, str]] | None = None

    def lazy() -> dict[str, tuple[str, str]]:
        nonlocal targets
        if targets is None:
            module = sys.modules[package]
            targets = _type_checking_imports(Path(str(module.__file__)), package)
        return targets

    def __getattr__(name: str) -> Any:
        target = lazy().get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = target
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *lazy()})

    return __getattr__, __dir__

"""Names, rules and mechanisms kept in one place. In the packages' sources (docstrings aside):

- the machine-owned folders are named only through the ``filesystems.paths`` constants;
- ``..`` segments are checked only through its functions;
- background tasks are started only through ``filesystems.BackgroundTasks`` (a task group
  scoped to one ``async with`` block is not a background task and stays allowed).

The sources are parsed, not grepped, so a docstring or comment may still mention what they name.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from filesystems import CACHE_DIR, MACHINE_DIR

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "repositories", "filesystems")
PATHS_MODULE = ROOT / "filesystems" / "paths.py"
TASKS_MODULE = ROOT / "filesystems" / "tasks.py"

# Modules that still check ``..`` their own way, each with the reason (keep it short).
KNOWN_DOT_CHECKS: set[str] = set()

# Modules that still start a background task their own way, each with the reason.
KNOWN_TASK_STARTS: set[str] = set()

# ``.harness`` or ``.skills-cache`` as a name of its own (not ``.harness-demo``).
_FOLDER_NAMES = re.compile(rf"(?<![\w.-])(?:{re.escape(MACHINE_DIR)}|{re.escape(CACHE_DIR)})(?![\w-])")


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once for every test of this module."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _strings(path: Path) -> tuple[tuple[int, str], ...]:
    """Every string or bytes literal of ``path`` that is not a docstring, with its line."""
    tree = _tree(path)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            if isinstance(node.value, str):
                found.append((node.lineno, node.value))
            elif isinstance(node.value, bytes):
                found.append((node.lineno, node.value.decode("latin-1")))
    return tuple(found)


def _sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _spelled(matches: Callable[[str], object]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in _sources()
        if path != PATHS_MODULE
        for line, text in _strings(path)
        if matches(text)
    ]


def test_the_machine_owned_folders_are_named_by_their_constants_only() -> None:
    assert _spelled(_FOLDER_NAMES.search) == []


def test_the_check_catches_a_spelled_folder() -> None:
    assert _FOLDER_NAMES.search("x/.harness/locks") and _FOLDER_NAMES.search(".skills-cache")
    assert not _FOLDER_NAMES.search(".harness-demo") and not _FOLDER_NAMES.search("harness.yaml")


def test_dot_segments_are_checked_by_filesystems_paths_only() -> None:
    spelled = _spelled(lambda text: text == "..")
    assert [where for where in spelled if where.partition(":")[0] not in KNOWN_DOT_CHECKS] == []


def test_every_known_dot_check_is_still_there() -> None:
    spelled = {where.partition(":")[0] for where in _spelled(lambda text: text == "..")}
    assert spelled >= KNOWN_DOT_CHECKS


def _task_starts(path: Path) -> Iterator[int]:
    """Lines of ``path`` that start an unsupervised task: ``create_task`` / ``ensure_future``
    calls, or a task group entered on an exit stack (kept open past the call that made it)."""
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called in {"create_task", "ensure_future"}:
            yield node.lineno
        elif called == "enter_async_context" and "create_task_group" in ast.unparse(node):
            yield node.lineno


def test_background_tasks_are_started_through_one_helper() -> None:
    starts = [
        f"{path.relative_to(ROOT)}:{line}" for path in _sources() if path != TASKS_MODULE for line in _task_starts(path)
    ]
    assert [where for where in starts if where.partition(":")[0] not in KNOWN_TASK_STARTS] == []
    assert {where.partition(":")[0] for where in starts} >= KNOWN_TASK_STARTS

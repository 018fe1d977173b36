"""The harness's error tree: one root, each branch exported where users catch it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import harness
from filesystems import PathEscapeError
from harness.errors import HarnessError, SkillError
from harness.skills.frontmatter import FrontmatterError, split_frontmatter

# Errors that say "this path is not yours" reuse the filesystem's PermissionError instead.
PATH_ERRORS = (PathEscapeError,)
# The roots of each branch and the errors a caller of Harness meets, exported from ``harness``.
CAUGHT_BY_USERS = {
    "HarnessError",
    "ConfigError",
    "SkillError",
    "SkillNotFound",
    "FrontmatterError",
    "StepLimitExceeded",
    "ToolError",
    "ToolArgumentError",
    "ModelError",
    "ModelUnavailable",
    "EngineError",
    "LearningError",
}


def _modules() -> list[str]:
    """Every module of the package, named without importing it (``walk_packages`` imports only
    the packages, which load nothing optional): every test worker collects this file, and the
    adapter modules import whole agent frameworks."""
    return [
        info.name for info in pkgutil.walk_packages(harness.__path__, "harness.") if info.name != "harness.__main__"
    ]


def _errors_of(module: str) -> list[type[BaseException]]:
    """The public exception classes ``module`` defines (importing it)."""
    found = []
    for name, value in vars(importlib.import_module(module)).items():
        if (
            inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module
            and not name.startswith("_")
        ):
            found.append(value)
    return found


MODULES = _modules()


def test_the_tree_has_the_errors_of_every_subpackage() -> None:
    modules = {module.split(".")[1] for module in MODULES if _errors_of(module)}
    assert {"agent", "engine", "errors", "learning", "models", "skills", "tools"} <= modules


@pytest.mark.parametrize("module", MODULES)
def test_every_error_derives_from_harness_error_or_a_path_error(module: str) -> None:
    for error in _errors_of(module):
        assert issubclass(error, (HarnessError, *PATH_ERRORS)), f"{module}.{error.__name__}"


@pytest.mark.parametrize("module", MODULES)
def test_every_error_is_exported_from_its_package(module: str) -> None:
    package = importlib.import_module(".".join(module.split(".")[:2]))
    for error in _errors_of(module):
        assert error.__name__ in package.__all__, f"{module}.{error.__name__}"
        assert getattr(package, error.__name__) is error


def test_the_errors_users_catch_are_exported_from_harness() -> None:
    assert CAUGHT_BY_USERS <= set(harness.__all__)
    assert all(issubclass(getattr(harness, name), HarnessError) for name in CAUGHT_BY_USERS)


def test_a_broken_skill_md_is_a_skill_error_and_a_value_error() -> None:
    with pytest.raises(SkillError) as caught:
        split_frontmatter(b"---\nname: [unclosed\n---\nbody\n")
    assert isinstance(caught.value, FrontmatterError)
    assert isinstance(caught.value, ValueError)

"""The frameworks are optional: the core install names none of them and ``import harness``
(adapters package included) loads none of them; each comes with its own extra."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: extra -> (distribution it installs, top-level modules that distribution and its stack bring).
EXTRAS = {
    "openai-agents": ("openai-agents", ("agents",)),
    "pydantic-ai": ("pydantic-ai-slim", ("pydantic_ai", "pydantic_graph")),
    "deepagents": ("deepagents", ("deepagents", "langchain", "langchain_core", "langgraph")),
}
FRAMEWORK_DISTRIBUTIONS = {"openai-agents", "pydantic-ai", "pydantic-ai-slim", "deepagents", "langchain", "langgraph"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[;\s]", requirement, maxsplit=1)[0].lower()


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return project


def test_the_core_dependencies_name_no_framework() -> None:
    core = _project()["dependencies"]
    assert isinstance(core, list)
    assert not {_name(r) for r in core} & FRAMEWORK_DISTRIBUTIONS


def test_each_framework_has_its_own_extra_and_is_in_dev() -> None:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    for extra, (distribution, _) in EXTRAS.items():
        assert [_name(r) for r in extras[extra]] == [distribution]
        assert distribution in {_name(r) for r in extras["dev"]}


def test_the_installed_metadata_requires_the_frameworks_only_through_extras() -> None:
    unconditional = [r for r in importlib.metadata.requires("agent-skill-harness") or [] if "extra ==" not in r]
    assert not {_name(r) for r in unconditional} & FRAMEWORK_DISTRIBUTIONS


def test_importing_the_harness_and_its_adapters_package_loads_no_framework() -> None:
    modules = sorted({m for _, ms in EXTRAS.values() for m in ms})
    probe = f"import sys, harness, harness.adapters\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"

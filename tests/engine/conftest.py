"""Fixtures for the workflow engine tests: engines over real filesystems and skill packages."""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, MemoryKeyValueStore, RemoteFilesystem
from harness.engine import Outcome, Run, SkillDecl, SkillPackage, ToolDecl, WorkflowEngine

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "workflows"


@pytest.fixture(params=["local", "remote"])
async def filesystem(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[AbstractFilesystem]:
    """The workspace filesystem: a host folder, or a remote key-value store in memory."""
    fs: AbstractFilesystem
    if request.param == "local":
        fs = LocalFilesystem(tmp_path / "workspace")
    else:
        fs = RemoteFilesystem(MemoryKeyValueStore(), agent_id="engine-tests")
    async with fs:
        yield fs


@pytest.fixture
async def local_fs(tmp_path: pathlib.Path) -> AsyncIterator[LocalFilesystem]:
    """A host-folder workspace (for tests that look at the files on disk)."""
    async with LocalFilesystem(tmp_path / "workspace") as fs:
        yield fs


@pytest.fixture
def engine(filesystem: AbstractFilesystem) -> WorkflowEngine:
    """An engine storing runs in user ``alice``'s area."""
    return WorkflowEngine(filesystem).for_user("alice")


@pytest.fixture
def make_skill(tmp_path: pathlib.Path) -> Callable[..., pathlib.Path]:
    """Write a skill folder from ``{relative path: text}`` and return it."""

    def make(name: str, files: Mapping[str, str]) -> pathlib.Path:
        root = tmp_path / "skills" / name
        if root.exists():
            shutil.rmtree(root)
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return root

    return make


async def example(name: str) -> SkillPackage:
    """A package from ``examples/workflows``."""
    return await SkillPackage.from_directory(EXAMPLES / name)


def answer(run: Run, status: str = "succeeded", **fields: Any) -> Outcome:
    """The outcome of the run's pending action, with a deterministic outcome id."""
    assert run.pending is not None, f"run is {run.status}, nothing is pending"
    return Outcome(
        status=status,  # type: ignore[arg-type]
        outcome_id=f"out-{run.pending.id}",
        action_id=run.pending.id,
        **fields,
    )


class ScriptedExecutor:
    """Performs actions from a script: ``{ref: [outcome, ...]}`` consumed in order; records calls."""

    def __init__(self, script: Mapping[str, list[Outcome]]) -> None:
        self.script = {ref: list(outcomes) for ref, outcomes in script.items()}
        self.calls: list[tuple[str, Any]] = []

    def _next(self, ref: str) -> Outcome:
        if not self.script.get(ref):
            raise AssertionError(f"no scripted outcome left for {ref!r}")
        return self.script[ref].pop(0)

    async def call_tool(self, tool: ToolDecl, args: Mapping[str, Any]) -> Outcome:
        self.calls.append((tool.id, dict(args)))
        return self._next(tool.id)

    async def invoke_skill(
        self, skill: SkillDecl, instructions: str, *, allowed_tools: tuple[ToolDecl, ...]
    ) -> Outcome:
        self.calls.append((skill.id, tuple(t.id for t in allowed_tools)))
        return self._next(skill.id)

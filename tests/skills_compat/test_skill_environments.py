"""Skills get their packages end to end: a real git market whose skills declare what their
scripts import in every supported way, environments built in the background by real uv from
hand-made wheels, and a model that loads each skill and runs the command its SKILL.md documents
through the shell tool — with ``skill=`` and by the folder's path — in local-shell mode and in a
real bubblewrap sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxFilesystem
from harness import Harness
from harness.agent import PipelineOptions, TrustOptions
from harness.events import ShellRan, ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from repositories import GitRepository
from tests.skills_compat.runnable import Served, Step, read_load_result
from tests.support.environments import ALICE, market, options, recorded, settled, uv_cache, uv_runs, wheelhouse

__all__ = ["recorded", "uv_cache", "wheelhouse"]  # fixtures

_FRONT = "---\nname: {name}\ndescription: {description}\n---\n"
_RUN = "Run it:\n\n```sh\npython scripts/show.py\n```\n"


def _script(module: str, header: str = "") -> str:
    return f"{header}import {module}\n\nprint('{{}} from {{}}'.format({module}.VALUE, {module}.__name__))\n"


_PDF_HEADER = '# /// script\n# dependencies = ["hxpdf>=1"]\n# ///\n'

#: The market: each skill documents one command in its SKILL.md, and its script imports a package.
SKILLS: dict[str, dict[str, str]] = {
    "pdf-tool": {  # PEP 723
        "SKILL.md": _FRONT.format(name="pdf-tool", description="Shows the pdf package.") + _RUN,
        "scripts/show.py": _script("hxpdf", _PDF_HEADER),
    },
    "sheet-tool": {  # requirements.txt
        "SKILL.md": _FRONT.format(name="sheet-tool", description="Shows the sheet package.") + _RUN,
        "requirements.txt": "hxsheet>=2\n",
        "scripts/show.py": _script("hxsheet"),
    },
    "prose-tool": {  # prose only: the operator declares the package
        "SKILL.md": _FRONT.format(name="prose-tool", description="Shows the prose package.")
        + "First `pip install hxprose`, then run it:\n\n```sh\npython scripts/show.py\n```\n",
        "scripts/show.py": _script("hxprose"),
    },
    "pdf-twin": {  # the requirements of pdf-tool, spelled the same way
        "SKILL.md": _FRONT.format(name="pdf-twin", description="Shows the pdf package too.") + _RUN,
        "scripts/show.py": _script("hxpdf", _PDF_HEADER),
    },
    "broken-tool": {  # a package no index has
        "SKILL.md": _FRONT.format(name="broken-tool", description="Needs a missing package.") + _RUN,
        "requirements.txt": "hxmissing>=1\n",
        "scripts/show.py": _script("hxmissing"),
    },
}
PRINTED = {
    "pdf-tool": "hxpdf 1.2 from hxpdf",
    "sheet-tool": "hxsheet 2.0 from hxsheet",
    "prose-tool": "hxprose 0.3 from hxprose",
    "pdf-twin": "hxpdf 1.2 from hxpdf",
}


@pytest.fixture(params=["local-shell", "sandbox"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _by_path(served: Served, command: str) -> str:
    """``command`` with its script named by the skill's folder, as a model runs it without ``skill=``."""
    return command.replace(" scripts/", f" {served.folder}/scripts/", 1)


def _load_and_run_both_ways(skill: str, seen: list[Served]) -> list[Step | Message | str]:
    """A model script: load ``skill``, run each command of its load result once with ``skill=``
    and once by the folder's path (no ``skill=``), then answer."""

    def run(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message:
        served = read_load_result(messages[-1].content)
        seen.append(served)
        calls = []
        for i, command in enumerate(served.commands):
            calls.append(
                ToolCall(id=f"skill-{i}", name=SHELL_TOOL, arguments={"command": command, "skill": served.skill_id})
            )
            calls.append(ToolCall(id=f"path-{i}", name=SHELL_TOOL, arguments={"command": _by_path(served, command)}))
        return Message.assistant("", calls)

    load = Message.assistant("", [ToolCall(id="load", name=LOAD_TOOL, arguments={"skillId": skill})])
    return [load, run, f"done with {skill}"]


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every entry below ``folder`` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


@asynccontextmanager
async def _agent(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path, wheelhouse: Path, model: ScriptedModel
) -> AsyncIterator[tuple[Harness, Path]]:
    """An agent over the market with environments on (from the wheelhouse only, the market
    trusted, the prose skill's package declared by the operator); yields it and its host root."""
    root: Path
    filesystem: AbstractFilesystem
    if mode == "sandbox":
        root = request.getfixturevalue("sandbox_dir")
        filesystem = SandboxFilesystem(root, bwrap=request.getfixturevalue("bwrap"))
    else:
        root = tmp_path / "ws"
        filesystem = LocalFilesystem(root, shell=True)
    git = GitRepository(market(tmp_path, SKILLS).url, cache_dir=tmp_path / "gitcache")
    environments = options(wheelhouse, trusted_markets=None, skill_packages={"prose-tool": ["hxprose"]})
    async with Harness(
        model=model,
        filesystem=filesystem,
        repositories=[git],
        trust=TrustOptions(trusted_markets=[git.source]),
        pipeline=PipelineOptions(environments=environments),
    ) as agent:
        yield agent, root


async def test_each_skill_runs_its_documented_command_with_its_packages(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    seen: list[Served] = []
    model = ScriptedModel([step for name in SKILLS for step in _load_and_run_both_ways(name, seen)])
    async with _agent(request, mode, tmp_path, wheelhouse, model) as (agent, root):
        plan = await settled(agent.pipeline)
        environments = {s.skill.name: s.environment for s in plan.skills.values()}
        cache = _tree(root / ".skills-cache")
        results = {name: await agent.run(f"use {name}", context=ALICE) for name in SKILLS}
        assert _tree(root / ".skills-cache") == cache  # the scripts wrote nothing there (no bytecode either)

    assert [s.skill_id.partition("_")[0] for s in seen] == list(SKILLS)
    for name, printed in PRINTED.items():
        ran = [e for e in results[name].events if isinstance(e, ToolReturned) and e.name == SHELL_TOOL]
        assert [e.content for e in ran] == [f"exit code: 0\nstdout:\n{printed}"] * 2, name
        assert results[name].reply == f"done with {name}"

    assert environments["pdf-tool"] and environments["pdf-tool"] == environments["pdf-twin"]
    assert len({environments[name] for name in PRINTED}) == 3
    assert [run[-1] for run in uv_runs(recorded) if "hxpdf>=1" in run] == ["hxpdf>=1"]  # one build for both

    assert environments["broken-tool"] is None
    [failed] = [d for d in plan.diagnostics if d.code == "environment-failed"]
    assert failed.location.startswith("broken-tool_") and "hxmissing" in failed.message
    broken = [e for e in results["broken-tool"].events if isinstance(e, ToolReturned) and e.name == SHELL_TOOL]
    assert [e.error_type for e in broken] == ["EnvironmentNotReady"] * 2  # not run without its packages
    assert all("could not be built" in e.content and "hxmissing" in e.content for e in broken)
    assert not [e for e in results["broken-tool"].events if isinstance(e, ShellRan)]
    assert results["broken-tool"].reply == "done with broken-tool"  # the turn still answers

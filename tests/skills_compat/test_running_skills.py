"""Skills run as their SKILL.md says: a model loads a skill, reads its folder and commands from
the load result, and runs them with ``skill=``; or it takes the ``<skill-id>`` and
``<files-root>`` of the skill's catalog entry as written, on its first turn, and runs the
scripts through that folder. The outputs land in the user's area, never in the skill's folder or
the staged cache. Served from a real git market and from the workspace, in local-shell mode and
in a real bubblewrap sandbox."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxFilesystem
from harness import Harness, RuntimeContext
from harness.events import ToolReturned
from harness.models import Model, ScriptedModel
from harness.pipeline.catalog import SHELL_TOOL
from repositories import GitRepository
from tests.skills_compat.runnable import SHAPES, Listed, Served, Shape, catalog_then_run, load_then_run, write_shape
from tests.support.git import GitRemote

ALICE = RuntimeContext(user_id="alice", session_id="compat")


@pytest.fixture(params=["local-shell", "sandbox"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _filesystem(mode: str, root: Path, bwrap: str | None) -> AbstractFilesystem:
    if mode == "sandbox":
        assert bwrap is not None
        return SandboxFilesystem(root, bwrap=bwrap)
    return LocalFilesystem(root, shell=True)


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A git market serving every shape, and a clone cache shared by the module (no test
    changes either: each test stages into a workspace of its own)."""
    base = tmp_path_factory.mktemp("market")
    remote = GitRemote(base / "git")
    for shape in SHAPES.values():
        write_shape(remote.work / "skills", shape)
    remote.commit("skills")
    return remote.url, base / "gitcache"


@asynccontextmanager
async def running(
    request: pytest.FixtureRequest, mode: str, source: str, model: Model, tmp_path: Path
) -> AsyncIterator[tuple[Harness, Path]]:
    """An agent over a workspace serving every shape from ``source`` ("market": a git market,
    "workspace": the workspace's skills folder); yields it and the host workspace."""
    bwrap = request.getfixturevalue("bwrap") if mode == "sandbox" else None
    root: Path = request.getfixturevalue("sandbox_dir") if mode == "sandbox" else tmp_path / "ws"
    async with AsyncExitStack() as stack:
        repositories = []
        if source == "market":
            url, cache_dir = request.getfixturevalue("market")
            git = GitRepository(url, cache_dir=cache_dir)
            repositories.append(await stack.enter_async_context(git))
        else:
            for shape in SHAPES.values():
                write_shape(root / "skills", shape)
        fs = _filesystem(mode, root, bwrap)
        agent = await stack.enter_async_context(Harness(model=model, filesystem=fs, repositories=repositories))
        yield agent, root


def _files_below(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _skill_folder(root: Path, served: Served, mode: str) -> Path:
    """The host folder behind the folder the load header named."""
    if mode == "sandbox":
        return root / served.folder.removeprefix("/workspace/")
    return Path(served.folder)


@pytest.mark.parametrize("source", ["market", "workspace"])
@pytest.mark.parametrize("name", sorted(SHAPES))
async def test_documented_commands_run_as_written_and_write_to_the_users_area(
    request: pytest.FixtureRequest, mode: str, source: str, name: str, tmp_path: Path
) -> None:
    shape: Shape = SHAPES[name]
    seen: list[Served] = []
    model = ScriptedModel(load_then_run(name, seen))
    async with running(request, mode, source, model, tmp_path) as (agent, root):
        alice = agent.filesystem.scoped("alice")
        for path, text in shape.inputs.items():
            await alice.write_text(path, text)
        result = await agent.run("please do it", context=ALICE)
    (served,) = seen
    ran = [e for e in result.events if isinstance(e, ToolReturned) and e.name == SHELL_TOOL]
    assert len(ran) == len(served.commands) > 0
    assert all(e.content.startswith("exit code: 0") and not e.error for e in ran), [e.content for e in ran]
    for path, text in shape.outputs.items():
        assert (root / "alice" / path).read_text() == text
    folder = _skill_folder(root, served, mode)
    expected_place = root / (".skills-cache" if source == "market" else "skills")
    assert folder.is_relative_to(expected_place)
    assert _files_below(folder) == set(shape.files)  # nothing written next to the scripts (no bytecode either)
    assert not set(shape.outputs) & {p.name for p in (root / ".skills-cache").rglob("*")}


@pytest.mark.parametrize("source", ["market", "workspace"])
async def test_the_served_commands_name_the_real_folder_and_staged_files_stay_byte_exact(
    request: pytest.FixtureRequest, mode: str, source: str, tmp_path: Path
) -> None:
    seen: list[Served] = []
    model = ScriptedModel(load_then_run("stamp-three", seen) + load_then_run("word-count", seen))
    async with running(request, mode, source, model, tmp_path) as (agent, root):
        await agent.filesystem.scoped("alice").write_text("text.txt", "a b\n")
        await agent.run("stamp", context=ALICE)
        await agent.run("count", context=ALICE)
    stamps, count = seen
    assert [c.split()[1] for c in stamps.commands] == [f"{stamps.folder}/scripts/stamp.py"] * 3
    assert count.commands[0].split()[1] == f"{count.folder}/scripts/count_words.py"
    for served, shape in ((stamps, SHAPES["stamp-three"]), (count, SHAPES["word-count"])):
        on_disk = _skill_folder(root, served, mode) / "SKILL.md"
        assert on_disk.read_text() == shape.files["SKILL.md"]  # placeholders resolved only where served
    assert os.access(_skill_folder(root, stamps, mode) / "scripts" / "stamp.py", os.R_OK)


@pytest.mark.parametrize("source", ["market", "workspace"])
@pytest.mark.parametrize("name", sorted(SHAPES))
async def test_the_catalogs_id_and_files_root_run_the_skill_on_the_first_turn(
    request: pytest.FixtureRequest, mode: str, source: str, name: str, tmp_path: Path
) -> None:
    shape = SHAPES[name]
    listed: list[Listed] = []
    seen: list[Served] = []
    model = ScriptedModel(catalog_then_run(shape, listed, seen))
    async with running(request, mode, source, model, tmp_path) as (agent, root):
        alice = agent.filesystem.scoped("alice")
        for path, text in shape.inputs.items():
            await alice.write_text(path, text)
        result = await agent.run("please do it", context=ALICE)
        plan = await agent.prepare(ALICE)
    (entry,), (served,) = listed, seen
    # The id as the catalog wrote it names the skill (a market's by its short label), and the
    # files-root is the folder the load result names and the shell runs in.
    found = plan.find(entry.skill_id)
    assert found is not None and found.skill.name == name and found.files_root == entry.files_root
    assert served.skill_id == found.skill.skill_id and served.folder == entry.files_root
    assert entry.files_root.startswith("/workspace/") == (mode == "sandbox")
    ran = [e for e in result.events if isinstance(e, ToolReturned) and e.name == SHELL_TOOL]
    assert len(ran) == len(shape.by_root) + len(served.commands) > 1
    assert all(e.content.startswith("exit code: 0") and not e.error for e in ran), [e.content for e in ran]
    for path, text in shape.outputs.items():
        assert (root / "alice" / path).read_text() == text
    folder = _skill_folder(root, Served(skill_id=entry.skill_id, folder=entry.files_root, commands=()), mode)
    assert folder.is_relative_to(root / (".skills-cache" if source == "market" else "skills"))
    assert _files_below(folder) == set(shape.files)  # nothing written next to the scripts

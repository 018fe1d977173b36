"""What the environment tests share: a git market of skills, a pipeline over it with chosen
environment options, waiting for the background builds, and the uv runs a test started."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from filesystems import AbstractFilesystem, ProgressCallback
from harness.context import RuntimeContext
from harness.pipeline import EnvironmentOptions, SkillPipeline, TurnPlan
from repositories import GitRepository
from tests.support.git import GitRemote
from tests.support.io import started_subprocesses
from tests.support.polling import eventually
from tests.support.skills import make_skill
from tests.support.wheels import write_wheelhouse

__all__ = [
    "ALICE",
    "PEP723",
    "market",
    "options",
    "pipeline_over",
    "recorded",
    "run_python",
    "settled",
    "uv_cache",
    "uv_runs",
    "wheelhouse",
]

ALICE = RuntimeContext(user_id="alice")
PEP723 = '# /// script\n# dependencies = [\n#   "hxpdf>=1",\n# ]\n# ///\nimport hxpdf\nprint(hxpdf.VALUE)\n'


def market(tmp_path: Path, skills: dict[str, dict[str, str]]) -> GitRemote:
    remote = GitRemote(tmp_path / "market")
    for name, files in skills.items():
        make_skill(remote.work / "skills", name, files=files)
    remote.commit("skills")
    return remote


def options(wheelhouse: Path, **changes: object) -> EnvironmentOptions:
    base = EnvironmentOptions(no_index=True, find_links=(str(wheelhouse),), trusted_markets=frozenset())
    return replace(base, **changes)  # type: ignore[arg-type]


@asynccontextmanager
async def pipeline_over(
    fs: AbstractFilesystem,
    remote: GitRemote,
    tmp_path: Path,
    environments: Callable[[str], EnvironmentOptions],
    *,
    progress: ProgressCallback | None = None,
) -> AsyncIterator[SkillPipeline]:
    """A pipeline over the git market with ``environments(<the market's slug>)`` (and ``progress``)."""
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(fs)
        git = await stack.enter_async_context(
            GitRepository(remote.url, cache_dir=tmp_path / "gitcache", check_interval=3600)
        )
        pipeline = SkillPipeline(
            filesystem=fs, repositories=[git], watch=False, environments=environments(git.source), progress=progress
        )
        yield await stack.enter_async_context(pipeline)


async def settled(pipeline: SkillPipeline) -> TurnPlan:
    """Turns until no environment is being built any more (a turn never waits for one)."""

    def done(plan: TurnPlan) -> bool:
        manager = pipeline.environments
        return manager is not None and manager.generation > 0 and manager.idle

    await eventually(lambda: pipeline.prepare(ALICE), done, within=60, what="the builds to finish")
    return await pipeline.prepare(ALICE)  # a plan made after the last build finished


def uv_runs(argv: list[list[str]]) -> list[list[str]]:
    return [a for a in argv if a[1:3] == ["pip", "install"]]


async def run_python(fs: AbstractFilesystem, environment: str, code: str) -> str:
    result = await fs.scoped("alice").run(f"PYTHONPATH={shlex.quote(environment)} python3 -c {shlex.quote(code)}")
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_wheelhouse(tmp_path_factory.mktemp("wheels"))


@pytest.fixture(autouse=True)
def uv_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv's download cache in the test's folder, not the machine's."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))


@pytest.fixture
def recorded() -> Iterator[list[list[str]]]:
    with started_subprocesses() as argv:
        yield argv

"""One harness for every adapter test: a real git market serving ``weather`` (with a script)
and a workspace where bob keeps a private skill holding a secret. Alice must see and load the
market skill through each framework, and never see, load or read bob's."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from repositories import GitRepository
from tests.support.git import GitRemote
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice", session_id="adapters")
BOB = RuntimeContext(user_id="bob", session_id="adapters")
MARKET_SKILL = "weather"
MARKET_BODY = "Run scripts/forecast.py and report its line."
FORECAST = "Forecast from the git market: sunny, 21 C"
BOB_SKILL = "bob-notes"
BOB_SECRET = "BOB-SECRET-5d1e"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """The keyword arguments of a harness over the git market and the two users' workspace."""
    remote = GitRemote(tmp_path / "remote")
    make_skill(
        remote.work,
        MARKET_SKILL,
        description="Use when the user asks about the weather.",
        body=f"# weather\n\n{MARKET_BODY}\n",
        files={"scripts/forecast.py": f"print({FORECAST!r})\n"},
    )
    remote.commit("weather skill")
    workspace = tmp_path / "workspace"
    make_skill(
        workspace / BOB.user_id / "skills",
        BOB_SKILL,
        description="Use for bob's private notes.",
        body=f"# bob-notes\n\n{BOB_SECRET}\n",
        files={"notes.txt": f"{BOB_SECRET}\n"},
    )
    market = GitRepository(remote.url, cache_dir=tmp_path / "cache")
    return {
        "name": "adapters",
        "workspace": workspace,
        "repositories": [market],
        "pipeline": PipelineOptions(watch=False),
    }


@pytest.fixture
async def agent(world: dict[str, Any]) -> AsyncIterator[Harness]:
    """An open harness over :func:`world`."""
    async with Harness(**world) as harness:
        yield harness


def require(package: str, extra: str) -> None:
    """Skip the calling test module when ``package``, the framework of the ``extra``, is not
    installed, without importing it."""
    if find_spec(package) is None:
        pytest.skip(f"the [{extra}] extra is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def kit(request: pytest.FixtureRequest) -> ModuleType:
    """The framework side of the requesting ``test_<name>.py``: ``<name>_kit.py`` beside it,
    imported when its first test runs. Every test worker collects every module; only the one that
    runs these tests pays for importing the framework."""
    name = request.module.__name__.rpartition(".")[2].removeprefix("test_")
    return importlib.import_module(f"tests.adapters.{name}_kit")

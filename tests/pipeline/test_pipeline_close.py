"""A closed pipeline lets go of what it held at once: nothing of it waits for the collector (an
application that builds pipelines again, on a configuration reload, would otherwise keep every
old one's skills until the next full collection)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness import RuntimeContext, SkillPipeline
from repositories import DirectoryRepository
from tests.support.skills import make_skill


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.mark.usefixtures("no_collector")
async def test_a_closed_pipeline_its_layers_and_markets_are_freed_without_the_collector(tmp_path: Path) -> None:
    make_skill(tmp_path / "market", "alpha")
    make_skill(tmp_path / "ws" / "skills", "beta")
    async with LocalFilesystem(tmp_path / "ws") as fs:
        market = DirectoryRepository(tmp_path / "market")
        async with SkillPipeline(filesystem=fs, repositories=[market]) as pipeline:
            plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
            assert {s.skill.name for s in plan.skills.values()} == {"alpha", "beta"}
            assert pipeline._watchers  # watched folders: the watchers hold the pipeline's methods
            held = [weakref.ref(pipeline), weakref.ref(market), *(weakref.ref(layer) for layer in pipeline._layers)]
        del pipeline, plan, market
        assert [ref() for ref in held] == [None] * len(held)

"""A directory market is watched like the folder layers: warm turns don't walk it, edits show."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from filesystems import LocalFilesystem
from harness import RuntimeContext, SkillPipeline
from repositories import DirectoryRepository
from tests.support.pipeline import write_skill

ALICE = RuntimeContext(user_id="alice")


async def test_warm_turns_skip_the_directory_market_until_it_changes(tmp_path: Path) -> None:
    market_dir = tmp_path / "market"
    write_skill(market_dir, "tool", description="first")
    repo = DirectoryRepository(market_dir)
    calls = 0
    original = repo.snapshot

    async def counting_snapshot():  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return await original()

    repo.snapshot = counting_snapshot  # type: ignore[method-assign]
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo]) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        for _ in range(5):
            await pipeline.prepare(ALICE)
        assert calls == 1
        (market_dir / "tool" / "SKILL.md").write_text("---\nname: tool\ndescription: second\n---\nx\n")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            plan = await pipeline.prepare(ALICE)
            if "second" in plan.catalog:
                break
            await anyio.sleep(0.05)
    assert "<description>second</description>" in plan.catalog

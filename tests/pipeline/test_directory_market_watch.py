"""A directory market is watched like the folder layers: warm turns don't walk it, edits show."""

from __future__ import annotations

from pathlib import Path

from filesystems import LocalFilesystem
from harness import RuntimeContext, SkillPipeline
from repositories import DirectoryRepository
from tests.support.pipeline import write_skill
from tests.support.polling import eventually

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
        plan = await eventually(lambda: pipeline.prepare(ALICE), lambda plan: "second" in plan.catalog, within=3)
    assert "<description>second</description>" in plan.catalog

"""Progress of a staging pass: increasing file counts to the total, nothing on a warm turn."""

from __future__ import annotations

from pathlib import Path

from filesystems import LocalFilesystem, Progress
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import MemoryRepository
from tests.support.skills import make_bundle

ALICE = RuntimeContext(user_id="alice")
SKILLS = 20
FILES = SKILLS * 3  # SKILL.md and two files each


def _market() -> MemoryRepository:
    bundles = [
        make_bundle(f"s{i:02d}", files={"scripts/run.py": f"print({i})\n", "ref.md": "notes\n"}) for i in range(SKILLS)
    ]
    return MemoryRepository(bundles, name="acme")


async def _stage(tmp_path: Path, interval: float) -> tuple[list[Progress], list[Progress]]:
    """The reports of a first staging pass and of the warm turn after it."""
    reports: list[Progress] = []
    async with LocalFilesystem(tmp_path, shell=True) as fs:
        async with SkillPipeline(filesystem=fs, repositories=[_market()], progress=reports.append) as pipeline:
            assert pipeline.stager is not None
            pipeline.stager.progress_interval = interval
            await pipeline.prepare(ALICE)
            first = list(reports)
            await pipeline.prepare(ALICE)
    return first, reports[len(first) :]


async def test_a_staging_pass_reports_increasing_counts_up_to_its_files(tmp_path: Path) -> None:
    reports, _ = await _stage(tmp_path, interval=0.0)
    assert {(r.task, r.unit, r.total, r.subject) for r in reports} == {
        ("staging", "files", FILES, str(tmp_path / ".skills-cache"))
    }
    counts = [r.done for r in reports]
    assert counts[0] == 0 and counts[-1] == FILES and len(counts) > 3
    assert counts == sorted(counts) and len(set(counts[:-1])) == len(counts) - 1  # the final may repeat the last
    assert [r.final for r in reports] == [False] * (len(reports) - 1) + [True]


async def test_a_warm_turn_reports_nothing(tmp_path: Path) -> None:
    first, warm = await _stage(tmp_path, interval=0.0)
    assert first and warm == []


async def test_reports_come_at_most_once_per_interval_besides_the_first_and_the_final(tmp_path: Path) -> None:
    reports, _ = await _stage(tmp_path, interval=3600.0)
    assert [(r.done, r.final) for r in reports] == [(0, False), (FILES, True)]

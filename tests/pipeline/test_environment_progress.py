"""Progress of environment builds: a start and a final report per build, none for a ready one."""

from __future__ import annotations

from pathlib import Path

from filesystems import Progress
from tests.support.environments import market, options, pipeline_over, settled, uv_cache, wheelhouse
from tests.support.filesystems import open_filesystem

__all__ = ["uv_cache", "wheelhouse"]  # fixtures


def _installing(reports: list[Progress]) -> list[tuple[str, int, int | None, bool]]:
    return [(r.subject, r.done, r.total, r.final) for r in reports if r.task == "installing"]


async def test_a_build_reports_its_start_and_its_end(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\nhxpdf\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    reports: list[Progress] = []
    chosen = lambda _: options(wheelhouse, untrusted_markets=True)  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen, progress=reports.append) as pipeline:
        plan = await settled(pipeline)
        (skill,) = plan.skills.values()
        assert skill.environment, plan.diagnostics
        skill_id = skill.skill.skill_id
    assert _installing(reports)[0] == (skill_id, 0, 2, False)
    assert _installing(reports)[-1] == (skill_id, 2, 2, True)
    assert {r.unit for r in reports if r.task == "installing"} == {"packages"}


async def test_a_failed_build_still_ends_with_a_final_report(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"broken-tool": {"requirements.txt": "hxmissing>=1\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    reports: list[Progress] = []
    chosen = lambda _: options(wheelhouse, untrusted_markets=True)  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen, progress=reports.append) as pipeline:
        plan = await settled(pipeline)
        assert [d.code for d in plan.diagnostics if d.code == "environment-failed"]
    installing = _installing(reports)
    assert [final for *_, final in installing] == [False, True]
    assert installing[-1][1:3] == (0, 1)  # nothing of the one requirement was installed


async def test_an_environment_already_built_reports_nothing(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    chosen = lambda _: options(wheelhouse, untrusted_markets=True)  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        await settled(pipeline)
    reports: list[Progress] = []
    again = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(again, remote, tmp_path, chosen, progress=reports.append) as pipeline:
        plan = await settled(pipeline)
        assert next(iter(plan.skills.values())).environment
    assert _installing(reports) == []

"""Progress of a git market's fetches: the objects a first clone receives, rising to a final
report; nothing when the clone is current; git's messages unchanged by ``--progress``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from filesystems import Progress
from repositories import GitRepository, RepositoryUnavailable
from tests.support.git import GitRemote
from tests.support.skills import make_skill

FILES = 150


def _big_remote(base: Path) -> GitRemote:
    remote = GitRemote(base)
    for i in range(FILES):
        make_skill(remote.work / "skills", f"s{i:03d}", files={"scripts/run.py": f"print({i})\n"})
    remote.commit("many skills")
    return remote


def _market(remote: GitRemote, cache: Path, reports: list[Progress] | None) -> GitRepository:
    repo = GitRepository(remote.url, cache_dir=cache)
    if reports is not None:
        repo.progress = reports.append
        repo.progress_interval = 0.0
    return repo


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> GitRemote:
    return _big_remote(tmp_path_factory.mktemp("remote"))


async def test_a_first_clone_reports_rising_object_counts_ending_with_a_final_report(
    remote: GitRemote, tmp_path: Path
) -> None:
    reports: list[Progress] = []
    async with _market(remote, tmp_path / "cache", reports) as repo:
        snapshot = await repo.snapshot()
    assert len(snapshot.bundles) == FILES
    assert {(r.task, r.subject, r.unit) for r in reports} == {("cloning", repo.shown_url, "objects")}
    counts = [r.done for r in reports]
    assert counts == sorted(counts) and len(counts) > 3
    assert reports[0].done == 0 and reports[0].total is None
    last = reports[-1]
    assert last.final and last.total is not None and last.done == last.total > FILES
    assert [r.final for r in reports].count(True) == 1


async def test_a_fetch_after_the_remote_moved_reports_fetching(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "remote")
    make_skill(remote.work / "skills", "first")
    remote.commit("one")
    reports: list[Progress] = []
    async with _market(remote, tmp_path / "cache", reports) as repo:
        await repo.snapshot()
        make_skill(remote.work / "skills", "second")
        remote.commit("two")
        cloned = len(reports)
        await repo.snapshot()
    assert {r.task for r in reports[:cloned]} == {"cloning"}
    assert {r.task for r in reports[cloned:]} == {"fetching"} and reports[-1].final


async def test_a_current_clone_reports_nothing(remote: GitRemote, tmp_path: Path) -> None:
    async with _market(remote, tmp_path / "cache", None) as repo:
        await repo.snapshot()
    reports: list[Progress] = []
    async with _market(remote, tmp_path / "cache", reports) as repo:
        await repo.snapshot()
        await repo.snapshot()
    assert reports == []


async def test_a_failed_fetch_ends_the_reports_and_keeps_gits_message(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "remote")
    make_skill(remote.work / "skills", "first")
    remote.commit("one")
    shutil.rmtree(remote.bare / "objects")  # the refs still answer ls-remote; the fetch fails
    (remote.bare / "objects").mkdir()
    messages = []
    reports: list[Progress] = []
    for cache, listening in ((tmp_path / "quiet", None), (tmp_path / "listened", reports)):
        async with _market(remote, cache, listening) as repo:
            with pytest.raises(RepositoryUnavailable) as failure:
                await repo.snapshot()
        messages.append(str(failure.value))
    # The same message with and without progress; git's own fatal lines (its local upload-pack's
    # and the client's) may come in either order from run to run, so compare them as a set.
    assert " failed: fatal: " in messages[0]
    assert _same_lines(*messages)
    assert reports and reports[-1].final and [r.final for r in reports].count(True) == 1


def _same_lines(first: str, second: str) -> bool:
    """Whether two failure messages hold the same git lines, whichever order git wrote them in
    (the first line carries the command before git's first line)."""
    head, _, rest = first.partition(" failed: ")
    other_head, _, other_rest = second.partition(" failed: ")
    return head == other_head and sorted(rest.splitlines()) == sorted(other_rest.splitlines())

"""A market's load lock: concurrent first snapshots load once, and the lock is let go once
nobody holds or waits for it (a process with many users keeps a folder market per user folder)."""

from __future__ import annotations

from pathlib import Path

import anyio

from repositories import DirectoryRepository, Snapshot
from tests.support.skills import make_skill

CALLERS = 8


def counting_loads(repo: DirectoryRepository) -> list[str]:
    """Record each load's version; a load waits a moment so that the other callers queue."""
    versions: list[str] = []
    real = repo._load

    async def load(version: str) -> Snapshot:
        versions.append(version)
        await anyio.sleep(0.05)
        return await real(version)

    repo._load = load  # type: ignore[method-assign]
    return versions


async def test_concurrent_first_snapshots_load_once_and_let_the_lock_go(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "alpha")
    repo = DirectoryRepository(tmp_path / "skills")
    loads = counting_loads(repo)
    async with repo:
        served: list[Snapshot] = []

        async def take() -> None:
            served.append(await repo.snapshot())

        async with anyio.create_task_group() as group:
            for _ in range(CALLERS):
                group.start_soon(take)
        assert len(loads) == 1
        assert len(served) == CALLERS and all(s is served[0] for s in served)
        assert [b.folder for b in served[0].bundles] == ["alpha"]
        assert repo._lock is None

        make_skill(tmp_path / "skills", "beta")  # a change: the next snapshot loads under a new lock
        async with anyio.create_task_group() as group:
            for _ in range(CALLERS):
                group.start_soon(take)
        assert len(loads) == 2
        assert {tuple(b.folder for b in s.bundles) for s in served[CALLERS:]} == {("alpha", "beta")}
        assert repo._lock is None

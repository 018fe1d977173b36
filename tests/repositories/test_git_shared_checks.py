"""Replicas over one store share a git market's checks: a process whose interval elapsed asks
no remote when another checked within the interval and found the commit it serves, and still
sees a push within the interval (a stamp naming another commit is checked for real)."""

from __future__ import annotations

import time
from pathlib import Path

from filesystems import KeyValueStore, MemoryKeyValueStore, MySQLKeyValueStore, RemoteFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import GitRepository
from tests.support.mysql import STORE_TABLES, drop_tables, unique_table
from tests.support.repositories import GitRemote

INTERVAL = 0.5


def _replica(remote: GitRemote, tmp_path: Path, name: str, store: KeyValueStore) -> GitRepository:
    repo = GitRepository(remote.url, cache_dir=tmp_path / name, check_interval=INTERVAL)
    repo.share_checks(store)
    return repo


async def _two_replicas_share(remote: GitRemote, tmp_path: Path, store: KeyValueStore) -> None:
    remote.skill("skills/alpha")
    first = remote.commit()
    async with _replica(remote, tmp_path, "a", store) as a, _replica(remote, tmp_path, "b", store) as b:
        assert await a.version() == first and await b.version() == first
        time.sleep(INTERVAL + 0.1)  # both due again
        checks = b.checks
        assert await a.version() == first  # a asks the remote and writes down what it found
        assert await b.version() == first
        assert b.checks == checks  # b took a's fresh check as its own
        remote.skill("skills/beta")
        pushed = remote.commit()
        time.sleep(INTERVAL + 0.1)
        assert await a.version() == pushed
        assert await b.version() == pushed  # the shared check names another commit: b checks itself


async def test_replicas_over_a_memory_store_share_their_checks(remote: GitRemote, tmp_path: Path) -> None:
    async with MemoryKeyValueStore() as store:
        await _two_replicas_share(remote, tmp_path, store)


async def test_replicas_over_mysql_share_their_checks(remote: GitRemote, tmp_path: Path, mysql_dsn: str) -> None:
    table = unique_table("checks")
    try:
        async with MySQLKeyValueStore(mysql_dsn, table=table, pool_size=2) as store:
            await _two_replicas_share(remote, tmp_path, store)
    finally:
        await drop_tables(mysql_dsn, table, STORE_TABLES)


async def test_a_garbled_stamp_only_costs_the_saving(remote: GitRemote, tmp_path: Path) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    async with MemoryKeyValueStore() as store, _replica(remote, tmp_path, "a", store) as a:
        await a.version()
        await store.put(a._stamp_key, b"not json")
        time.sleep(INTERVAL + 0.1)
        checks = a.checks
        await a.version()
        assert a.checks == checks + 1


async def test_a_pipeline_over_a_remote_store_shares_its_markets_checks(remote: GitRemote, tmp_path: Path) -> None:
    remote.skill("skills/alpha")
    remote.commit()
    repo = GitRepository(remote.url, cache_dir=tmp_path / "cache")
    async with (
        RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent") as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False, market_check_interval=30) as pipeline,
    ):
        await pipeline.prepare(RuntimeContext(user_id="alice"))
        assert await fs.store.get(repo._stamp_key) is not None

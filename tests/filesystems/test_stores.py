"""Key-value stores directly: generation counter, versions, failures, sharing between processes."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import (
    KeyValueStore,
    MemoryKeyValueStore,
    MySQLKeyValueStore,
    RemoteFilesystem,
    SQLiteKeyValueStore,
    StoreUnavailable,
    VersionConflict,
)
from tests.support.cli import python_command
from tests.support.mysql import STORE_TABLES, drop_tables, unique_table


@pytest.fixture(params=["memory", "sqlite", "mysql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KeyValueStore]:
    if request.param == "memory":
        async with MemoryKeyValueStore() as memory:
            yield memory
    elif request.param == "sqlite":
        async with SQLiteKeyValueStore(tmp_path / "kv.db") as sqlite:
            yield sqlite
    else:
        dsn: str = request.getfixturevalue("mysql_dsn")
        table = unique_table("fs_test")
        try:
            async with MySQLKeyValueStore(dsn, table=table, pool_size=2) as mysql:
                yield mysql
        finally:
            await drop_tables(dsn, table, STORE_TABLES)


async def test_generation_grows_with_every_write_and_only_then(store: KeyValueStore) -> None:
    start = await store.generation()
    await store.get("k")
    await store.list_prefix("")
    assert await store.generation() == start
    entry = await store.put("k", b"v")
    assert entry.version == await store.generation() > start
    await store.append("k", b"w")
    await store.delete("k")
    assert await store.generation() == start + 3


async def test_versions_never_repeat_after_delete_and_recreate(store: KeyValueStore) -> None:
    first = await store.put("k", b"same")
    await store.delete("k")
    second = await store.put("k", b"same")
    assert second.version != first.version
    with pytest.raises(VersionConflict):
        await store.put_if_version("k", b"stale", first.version)


async def test_binary_values_and_modes_round_trip(store: KeyValueStore) -> None:
    data = bytes(range(256)) + b"\x00\xff" * 100
    await store.put("bin/ü", data, mode=0o755)
    record = await store.get("bin/ü")
    assert record is not None and record.data == data and record.mode == 0o755
    await store.put("bin/ü", b"again")
    again = await store.get("bin/ü")
    assert again is not None and again.mode == 0o755


async def test_prefix_listing_is_bounded_to_the_prefix(store: KeyValueStore) -> None:
    for key in ("a/1", "a/2", "a0", "ab/3", "b/4"):
        await store.put(key, b"")
    assert [e.key for e in await store.list_prefix("a/")] == ["a/1", "a/2"]
    assert await store.has_prefix("ab/") and not await store.has_prefix("c")
    assert await store.delete_prefix("a/") == 2
    assert [e.key for e in await store.list_prefix("")] == ["a0", "ab/3", "b/4"]


async def test_rename_moves_values_in_one_step(store: KeyValueStore) -> None:
    await store.put("old/1", b"one")
    await store.put("old/2", b"two")
    await store.rename({"old/1": "new/1", "old/2": "new/2", "missing": "nowhere"})
    assert [e.key for e in await store.list_prefix("")] == ["new/1", "new/2"]


async def test_remote_generation_tracks_the_store(store: KeyValueStore) -> None:
    fs = RemoteFilesystem(store, agent_id="agent", owns_store=False)
    before = await fs.generation()
    await fs.scoped("alice").write_text("skills/x/SKILL.md", "x")
    assert (await fs.generation() or 0) > (before or 0)


async def test_an_unreachable_mysql_server_raises_store_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with MySQLKeyValueStore(f"mysql://root@127.0.0.1:{port}/test") as store:
        with pytest.raises(StoreUnavailable):
            await store.generation()


async def test_the_dsn_can_name_the_table(mysql_dsn: str) -> None:
    table = unique_table("fs_test")
    try:
        async with MySQLKeyValueStore(f"{mysql_dsn}?table={table}") as store:
            await store.put("k", b"v")
        async with MySQLKeyValueStore(mysql_dsn, table=table) as same:
            record = await same.get("k")
            assert record is not None and record.data == b"v"
    finally:
        await drop_tables(mysql_dsn, table, STORE_TABLES)


def test_bad_dsn_and_table_names_are_refused() -> None:
    with pytest.raises(ValueError):
        MySQLKeyValueStore("postgres://x/y")
    with pytest.raises(ValueError):
        MySQLKeyValueStore("mysql://root@h/db", table="kv; DROP TABLE users")


async def test_two_sqlite_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    async with (
        SQLiteKeyValueStore(tmp_path / "s.db") as one,
        SQLiteKeyValueStore(tmp_path / "s.db") as two,
    ):
        await one.put("k", b"from one")
        record = await two.get("k")
        assert record is not None and record.data == b"from one"
        assert await one.generation() == await two.generation()


_OPEN_AT_ONCE = """
import pathlib, sys, time
from filesystems.stores.sqlite import open_database
path, start, ready = map(pathlib.Path, sys.argv[1:4])
ready.touch()
while not start.exists():
    time.sleep(0.0005)
connection = open_database(path, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY);")
connection.execute("BEGIN IMMEDIATE")
connection.execute("INSERT INTO t DEFAULT VALUES")
connection.execute("COMMIT")
"""


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Each opener switches a new file to WAL; SQLite refuses all but one of simultaneous
    switches at once (no busy wait), which must not fail the others: every one opens the file
    and writes its row."""
    # Processes of their own, forked from the test session's preloaded one: the race is between
    # processes, not interpreter starts.
    opener = tmp_path / "open_at_once.py"
    opener.write_text(_OPEN_AT_ONCE)
    for round_ in range(5):
        path, start = tmp_path / f"new{round_}.db", tmp_path / f"start{round_}"
        ready = [tmp_path / f"ready{round_}-{i}" for i in range(8)]
        openers = [
            subprocess.Popen(
                [*python_command(opener), str(path), str(start), str(flag)],
                stderr=subprocess.PIPE,
                text=True,
                cwd=Path(__file__).resolve().parents[2],
            )
            for flag in ready
        ]
        while not all(flag.exists() for flag in ready) and all(o.poll() is None for o in openers):
            time.sleep(0.005)
        start.touch()
        errors = [err for opener in openers if (err := opener.communicate(timeout=120)[1]) and opener.returncode]
        assert errors == []
        with sqlite3.connect(path) as check:
            assert check.execute("SELECT count(*) FROM t").fetchone() == (8,)

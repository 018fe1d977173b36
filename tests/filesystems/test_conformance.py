"""One specification, run against every filesystem mode and store (see conftest.MODES)."""

from __future__ import annotations

import anyio
import pytest

from filesystems import (
    FileStat,
    LockTimeout,
    PathEscapeError,
    VersionConflict,
)
from tests.support.fs_cases import Case, peer_result


async def test_bytes_round_trip_exactly(case: Case) -> None:
    data = bytes(range(256)) * 3
    stat = await case.fs.write_bytes("bin/blob.dat", data)
    assert await case.fs.read_bytes("bin/blob.dat") == data
    assert stat.size == len(data) and not stat.is_dir and stat.path == "bin/blob.dat"


async def test_text_round_trips_unicode(case: Case) -> None:
    await case.fs.write_text("notes/ünï.md", "héllo — 世界\n")
    assert await case.fs.read_text("notes/ünï.md") == "héllo — 世界\n"


async def test_write_replaces_content_and_changes_version(case: Case) -> None:
    first = await case.fs.write_bytes("f.txt", b"one")
    second = await case.fs.write_bytes("f.txt", b"two")
    assert await case.fs.read_bytes("f.txt") == b"two"
    assert first.version != second.version


async def test_write_sets_and_keeps_mode(case: Case) -> None:
    await case.fs.write_bytes("run.sh", b"#!/bin/sh\n", mode=0o755)
    assert (await case.fs.stat("run.sh")).mode == 0o755
    await case.fs.write_bytes("run.sh", b"#!/bin/sh\necho\n")
    assert (await case.fs.stat("run.sh")).executable
    assert (await case.fs.write_bytes("plain.txt", b"x")).mode == 0o644


async def test_missing_file_raises_file_not_found(case: Case) -> None:
    with pytest.raises(FileNotFoundError):
        await case.fs.read_bytes("nope.txt")
    with pytest.raises(FileNotFoundError):
        await case.fs.stat("nope/deeper.txt")
    assert not await case.fs.exists("nope.txt")


async def test_reading_a_folder_raises_is_a_directory(case: Case) -> None:
    await case.fs.write_bytes("d/f", b"x")
    with pytest.raises(IsADirectoryError):
        await case.fs.read_bytes("d")


async def test_stat_describes_files_and_folders(case: Case) -> None:
    await case.fs.write_bytes("a/b.txt", b"12345")
    file, folder = await case.fs.stat("a/b.txt"), await case.fs.stat("a")
    assert (file.size, file.is_dir, file.name) == (5, False, "b.txt")
    assert file.version and file.mtime > 0
    assert folder.is_dir and folder.path == "a"
    assert (await case.fs.stat("")).is_dir


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "a/../../outside.txt", "a\x00b"])
async def test_escaping_paths_are_refused_naming_the_path(case: Case, path: str) -> None:
    for attempt in (
        case.fs.read_bytes(path),
        case.fs.write_bytes(path, b"x"),
        case.fs.stat(path),
        case.fs.list(path),
        case.fs.delete(path),
    ):
        with pytest.raises(PermissionError) as raised:
            await attempt
        assert isinstance(raised.value, PathEscapeError)
        assert repr(path) in str(raised.value)


async def test_dot_segments_are_normalised(case: Case) -> None:
    await case.fs.write_bytes("./a/./b/../c.txt", b"x")
    assert await case.fs.read_bytes("a/c.txt") == b"x"


async def test_list_returns_direct_children_sorted_with_full_paths(case: Case) -> None:
    for name in ("b.txt", "a.txt", "sub/deep/x.txt", "sub/y.txt"):
        await case.fs.write_bytes(f"top/{name}", b"x")
    listed = await case.fs.list("top")
    assert [s.path for s in listed] == ["top/a.txt", "top/b.txt", "top/sub"]
    assert [s.is_dir for s in listed] == [False, False, True]


async def test_list_is_complete_beyond_any_page_size(case: Case) -> None:
    names = [f"f{i:04d}" for i in range(1100)]
    await case.fs.mkdir("many")
    async with anyio.create_task_group() as tasks:
        for start in range(0, len(names), 100):
            chunk = names[start : start + 100]

            async def write(chunk: list[str] = chunk) -> None:
                for name in chunk:
                    await case.fs.write_bytes(f"many/{name}", b"")

            tasks.start_soon(write)
    assert [s.name for s in await case.fs.list("many")] == names


async def test_list_of_missing_folder_or_file_raises(case: Case) -> None:
    await case.fs.write_bytes("file", b"x")
    with pytest.raises(FileNotFoundError):
        await case.fs.list("missing")
    with pytest.raises(NotADirectoryError):
        await case.fs.list("file")


async def test_walk_lists_every_file_below_recursively(case: Case) -> None:
    paths = ["w/a.txt", "w/b/c.txt", "w/b/d/e.bin", "other/x"]
    for path in paths:
        await case.fs.write_bytes(path, path.encode())
    await case.fs.mkdir("w/empty")
    walked = await case.fs.walk("w")
    assert [s.path for s in walked] == ["w/a.txt", "w/b/c.txt", "w/b/d/e.bin"]
    assert all(isinstance(s, FileStat) and not s.is_dir for s in walked)
    assert {s.path for s in await case.fs.walk()} >= set(paths)
    assert await case.fs.walk("missing") == []


async def test_read_many_reads_a_batch_and_skips_missing(case: Case) -> None:
    await case.fs.write_bytes("r/1", b"one")
    await case.fs.write_bytes("r/2", b"two")
    found = await case.fs.read_many(["r/1", "./r/2", "r/3"])
    assert found == {"r/1": b"one", "r/2": b"two"}
    assert await case.fs.read_many([]) == {}


async def test_mkdir_creates_parents_and_tolerates_existing(case: Case) -> None:
    await case.fs.mkdir("x/y/z")
    await case.fs.mkdir("x/y/z")
    assert (await case.fs.stat("x/y/z")).is_dir
    assert [s.path for s in await case.fs.list("x/y")] == ["x/y/z"]
    await case.fs.write_bytes("x/file", b"")
    with pytest.raises(FileExistsError):
        await case.fs.mkdir("x/file")


async def test_delete_removes_files_and_trees_idempotently(case: Case) -> None:
    await case.fs.write_bytes("t/a", b"x")
    await case.fs.write_bytes("t/sub/b", b"x")
    await case.fs.write_bytes("keep", b"x")
    await case.fs.delete("t/a")
    assert not await case.fs.exists("t/a")
    await case.fs.delete("t")
    await case.fs.delete("t")
    assert not await case.fs.exists("t")
    assert await case.fs.exists("keep")
    with pytest.raises(PermissionError):
        await case.fs.delete("")


async def test_move_file_and_folder(case: Case) -> None:
    await case.fs.write_bytes("m/a.txt", b"a")
    await case.fs.write_bytes("m/sub/b.txt", b"b")
    await case.fs.move("m/a.txt", "n/a2.txt")
    assert await case.fs.read_bytes("n/a2.txt") == b"a"
    assert not await case.fs.exists("m/a.txt")
    await case.fs.move("m", "moved")
    assert await case.fs.read_bytes("moved/sub/b.txt") == b"b"
    assert not await case.fs.exists("m")
    with pytest.raises(FileNotFoundError):
        await case.fs.move("m", "again")


async def test_move_replaces_an_existing_file(case: Case) -> None:
    await case.fs.write_bytes("src", b"new")
    await case.fs.write_bytes("dst", b"old")
    await case.fs.move("src", "dst")
    assert await case.fs.read_bytes("dst") == b"new"


async def test_create_exclusive_fails_when_present(case: Case) -> None:
    stat = await case.fs.create_exclusive("claims/job-1", b"mine")
    assert stat.version
    with pytest.raises(FileExistsError):
        await case.fs.create_exclusive("claims/job-1", b"theirs")
    assert await case.fs.read_bytes("claims/job-1") == b"mine"


async def test_create_exclusive_has_exactly_one_winner(case: Case) -> None:
    winners: list[int] = []

    async def claim(i: int) -> None:
        try:
            await case.fs.create_exclusive("claims/race", str(i).encode())
            winners.append(i)
        except FileExistsError:
            pass

    async with anyio.create_task_group() as tasks:
        for i in range(10):
            tasks.start_soon(claim, i)
    assert len(winners) == 1
    assert await case.fs.read_bytes("claims/race") == str(winners[0]).encode()


async def test_compare_and_set_writes_only_on_the_expected_version(case: Case) -> None:
    created = await case.fs.compare_and_set("state.json", b"1", None)
    with pytest.raises(VersionConflict):
        await case.fs.compare_and_set("state.json", b"x", None)
    updated = await case.fs.compare_and_set("state.json", b"2", created.version)
    with pytest.raises(VersionConflict):
        await case.fs.compare_and_set("state.json", b"3", created.version)
    assert await case.fs.read_bytes("state.json") == b"2"
    assert (await case.fs.stat("state.json")).version == updated.version


async def test_compare_and_set_under_concurrent_writers_loses_nothing(case: Case) -> None:
    await case.fs.write_bytes("counter", b"0")

    async def increment(times: int) -> None:
        for _ in range(times):
            while True:
                stat = await case.fs.stat("counter")
                value = int(await case.fs.read_bytes("counter"))
                try:
                    await case.fs.compare_and_set("counter", str(value + 1).encode(), stat.version)
                    break
                except VersionConflict:
                    await anyio.sleep(0)

    async with anyio.create_task_group() as tasks:
        for _ in range(6):
            tasks.start_soon(increment, 8)
    assert await case.fs.read_bytes("counter") == b"48"


async def test_append_creates_and_extends(case: Case) -> None:
    await case.fs.append("logs/a.log", b"one\n")
    await case.fs.append("logs/a.log", b"two\n")
    assert await case.fs.read_bytes("logs/a.log") == b"one\ntwo\n"


async def test_concurrent_appends_are_neither_lost_nor_torn(case: Case) -> None:
    record = b"%02d:" + b"y" * 5000 + b"\n"

    async def appender(i: int) -> None:
        for _ in range(5):
            await case.fs.append("logs/many.log", record % i)

    async with anyio.create_task_group() as tasks:
        for i in range(8):
            tasks.start_soon(appender, i)
    lines = (await case.fs.read_bytes("logs/many.log")).splitlines()
    assert len(lines) == 40
    assert all(line[3:] == b"y" * 5000 for line in lines)


async def test_lock_excludes_a_second_holder_until_released(case: Case) -> None:
    async with case.fs.lock("job"):
        with pytest.raises(LockTimeout):
            async with case.fs.lock("job", timeout=0.1):
                pass
        async with case.fs.lock("other-job", timeout=1):
            pass
    async with case.fs.lock("job", timeout=1):
        pass


async def test_lock_serialises_critical_sections(case: Case) -> None:
    inside = 0
    seen_max = 0

    async def worker() -> None:
        nonlocal inside, seen_max
        async with case.fs.lock("section", timeout=10):
            inside += 1
            seen_max = max(seen_max, inside)
            await anyio.sleep(0.01)
            inside -= 1

    async with anyio.create_task_group() as tasks:
        for _ in range(5):
            tasks.start_soon(worker)
    assert seen_max == 1


async def test_scoped_views_are_disjoint(case: Case) -> None:
    alice, bob = case.fs.scoped("alice"), case.fs.scoped("bob")
    await alice.write_bytes("secret.txt", b"alice's")
    assert not await bob.exists("secret.txt")
    assert await bob.walk() == []
    with pytest.raises(PermissionError):
        await bob.read_bytes("../alice/secret.txt")
    assert await alice.read_bytes("secret.txt") == b"alice's"


async def test_aclose_is_idempotent(case: Case) -> None:
    await case.fs.aclose()
    await case.fs.aclose()


async def test_lock_is_held_against_another_process(shared_case: Case) -> None:
    async with shared_case.fs.lock("cross"):
        assert peer_result(shared_case.peer("lock", "cross", "0.3")) == "timeout"
    assert peer_result(shared_case.peer("lock", "cross", "10")) == "acquired"


async def test_compare_and_set_across_processes_loses_nothing(shared_case: Case) -> None:
    await shared_case.fs.write_bytes("shared-counter", b"0")
    peers = [shared_case.peer("increment", "shared-counter", "15") for _ in range(3)]
    assert [peer_result(p) for p in peers] == ["done"] * 3
    assert await shared_case.fs.read_bytes("shared-counter") == b"45"


async def test_appends_across_processes_are_whole(shared_case: Case) -> None:
    peers = [shared_case.peer("append", "shared.log", f"p{i}", "30") for i in range(3)]
    assert [peer_result(p) for p in peers] == ["done"] * 3
    lines = (await shared_case.fs.read_text("shared.log")).splitlines()
    assert len(lines) == 90
    assert all(line.split(":")[2] == "x" * 200 for line in lines)


async def test_a_write_in_one_process_is_read_by_another(shared_case: Case) -> None:
    await shared_case.fs.write_text("visible.txt", "from parent")
    assert peer_result(shared_case.peer("read", "visible.txt")) == "from parent"
    assert peer_result(shared_case.peer("write", "visible.txt", "from peer")) == "done"
    assert await shared_case.fs.read_text("visible.txt") == "from peer"

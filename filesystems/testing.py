"""The filesystem conformance suite: the contract of :class:`~filesystems.AbstractFilesystem` as
pytest tests, for anyone writing a filesystem.

Subclass :class:`FilesystemConformance` in a test module and give the subclass a fixture named
``filesystem_case`` that yields a :class:`FilesystemCase` around a fresh, entered filesystem
(and closes it afterwards)::

    import pytest_asyncio
    from filesystems.testing import FilesystemCase, FilesystemConformance

    class TestMyFilesystem(FilesystemConformance):
        @pytest_asyncio.fixture
        async def filesystem_case(self, tmp_path):
            async with MyFilesystem(tmp_path) as fs:
                yield FilesystemCase(fs=fs)

Parametrise the fixture to run the suite over several configurations. The shell tests run when
the filesystem has a shell (``has_shell``), the cross-process tests when the case says how a
second process opens the same filesystem (:class:`PeerSpec`); the others are skipped.

This module needs pytest and pytest-asyncio, which are test dependencies, not the package's; the
suite's tests carry the ``asyncio`` mark, so they run in pytest-asyncio's strict and auto modes
(in strict mode, declare the async fixture with ``pytest_asyncio.fixture``). Nothing else in the
package imports this module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import pytest

from filesystems.base import AbstractFilesystem, FileStat
from filesystems.errors import LockTimeout, PathEscapeError, ShellUnavailable, VersionConflict

__all__ = ["FilesystemCase", "FilesystemConformance", "PeerSpec"]


@dataclass(frozen=True, kw_only=True)
class PeerSpec:
    """How a second process opens the same filesystem, for the cross-process tests.

    ``opener`` names a function as ``"package.module:function"``: the peer process imports it
    (it sees the test process's ``sys.path``), calls it with ``arguments`` as keyword arguments
    and enters the filesystem it returns; with ``user`` set it works in ``scoped(user)`` of it.
    """

    opener: str
    arguments: Mapping[str, str] = field(default_factory=dict)
    user: str = ""

    def __post_init__(self) -> None:
        module, _, function = self.opener.partition(":")
        if not module or not function.isidentifier():
            raise ValueError(f"opener {self.opener!r} must name a function as 'package.module:function'")


@dataclass(frozen=True, kw_only=True)
class FilesystemCase:
    """A filesystem under test and what the suite needs to know about it.

    - ``fs``: the filesystem, entered; the fixture closes it after the test.
    - ``output_limit``: the output cap (bytes per stream) the filesystem's shell was built with;
      required when it has a shell.
    - ``shell_sees_root``: whether the shell's working folder is the filesystem's root, so files
      written through the API are where commands look. ``False`` for a shell whose root holds
      only read-only projections (an unscoped sandbox).
    - ``peer``: how another process opens the same filesystem, for backends shared across
      processes; ``None`` skips the cross-process tests.
    """

    fs: AbstractFilesystem
    output_limit: int | None = None
    shell_sees_root: bool = True
    peer: PeerSpec | None = None

    def start_peer(self, action: str, *args: str) -> subprocess.Popen[str]:
        """Start a second process that opens the same filesystem (see :class:`PeerSpec`) and
        does ``action`` (``lock``, ``increment``, ``append``, ``read`` or ``write``)."""
        assert self.peer is not None, "the case has no PeerSpec"
        spec = {"opener": self.peer.opener, "arguments": dict(self.peer.arguments), "user": self.peer.user}
        return subprocess.Popen(
            [sys.executable, "-m", "filesystems._peer", json.dumps(spec), action, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if entry)},
        )


def _peer_result(process: subprocess.Popen[str], timeout: float = 60) -> str:
    """The one line a peer printed; fails the test when the peer failed."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out.strip()


@pytest.mark.asyncio
class FilesystemConformance:
    """The contract every filesystem keeps. Subclass it and provide the ``filesystem_case``
    fixture (see the module docstring)."""

    @pytest.fixture
    def case(self, filesystem_case: FilesystemCase) -> FilesystemCase:
        """The case under test (what the subclass's ``filesystem_case`` yields)."""
        return filesystem_case

    @pytest.fixture
    def shell_case(self, case: FilesystemCase) -> FilesystemCase:
        """The case, when its filesystem has a shell."""
        if not case.fs.has_shell:
            pytest.skip(f"{type(case.fs).__name__} has no shell")
        return case

    @pytest.fixture
    def area_case(self, shell_case: FilesystemCase) -> FilesystemCase:
        """Shells whose working folder is the filesystem's root."""
        if not shell_case.shell_sees_root:
            pytest.skip("the shell's root holds only read-only projections")
        return shell_case

    @pytest.fixture
    def shared_case(self, case: FilesystemCase) -> FilesystemCase:
        """The case, when a second process can open its filesystem."""
        if case.peer is None:
            pytest.skip(f"{type(case.fs).__name__} is not shared across processes")
        return case

    # -- reading and writing ----------------------------------------------------------------

    async def test_bytes_round_trip_exactly(self, case: FilesystemCase) -> None:
        data = bytes(range(256)) * 3
        stat = await case.fs.write_bytes("bin/blob.dat", data)
        assert await case.fs.read_bytes("bin/blob.dat") == data
        assert stat.size == len(data) and not stat.is_dir and stat.path == "bin/blob.dat"

    async def test_text_round_trips_unicode(self, case: FilesystemCase) -> None:
        await case.fs.write_text("notes/ünï.md", "héllo — 世界\n")
        assert await case.fs.read_text("notes/ünï.md") == "héllo — 世界\n"

    async def test_write_replaces_content_and_changes_version(self, case: FilesystemCase) -> None:
        first = await case.fs.write_bytes("f.txt", b"one")
        second = await case.fs.write_bytes("f.txt", b"two")
        assert await case.fs.read_bytes("f.txt") == b"two"
        assert first.version != second.version

    async def test_write_sets_and_keeps_mode(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("run.sh", b"#!/bin/sh\n", mode=0o755)
        assert (await case.fs.stat("run.sh")).mode == 0o755
        await case.fs.write_bytes("run.sh", b"#!/bin/sh\necho\n")
        assert (await case.fs.stat("run.sh")).executable
        assert (await case.fs.write_bytes("plain.txt", b"x")).mode == 0o644

    async def test_missing_file_raises_file_not_found(self, case: FilesystemCase) -> None:
        with pytest.raises(FileNotFoundError):
            await case.fs.read_bytes("nope.txt")
        with pytest.raises(FileNotFoundError):
            await case.fs.stat("nope/deeper.txt")
        assert not await case.fs.exists("nope.txt")

    async def test_reading_a_folder_raises_is_a_directory(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("d/f", b"x")
        with pytest.raises(IsADirectoryError):
            await case.fs.read_bytes("d")

    async def test_stat_describes_files_and_folders(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("a/b.txt", b"12345")
        file, folder = await case.fs.stat("a/b.txt"), await case.fs.stat("a")
        assert (file.size, file.is_dir, file.name) == (5, False, "b.txt")
        assert file.version and file.mtime > 0
        assert folder.is_dir and folder.path == "a"
        assert (await case.fs.stat("")).is_dir

    @pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "a/../../outside.txt", "a\x00b"])
    async def test_escaping_paths_are_refused_naming_the_path(self, case: FilesystemCase, path: str) -> None:
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

    async def test_dot_segments_are_normalised(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("./a/./b/../c.txt", b"x")
        assert await case.fs.read_bytes("a/c.txt") == b"x"

    # -- listing ----------------------------------------------------------------------------

    async def test_list_returns_direct_children_sorted_with_full_paths(self, case: FilesystemCase) -> None:
        for name in ("b.txt", "a.txt", "sub/deep/x.txt", "sub/y.txt"):
            await case.fs.write_bytes(f"top/{name}", b"x")
        listed = await case.fs.list("top")
        assert [s.path for s in listed] == ["top/a.txt", "top/b.txt", "top/sub"]
        assert [s.is_dir for s in listed] == [False, False, True]

    async def test_list_is_complete_beyond_any_page_size(self, case: FilesystemCase) -> None:
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

    async def test_list_of_missing_folder_or_file_raises(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("file", b"x")
        with pytest.raises(FileNotFoundError):
            await case.fs.list("missing")
        with pytest.raises(NotADirectoryError):
            await case.fs.list("file")

    async def test_walk_lists_every_file_below_recursively(self, case: FilesystemCase) -> None:
        paths = ["w/a.txt", "w/b/c.txt", "w/b/d/e.bin", "other/x"]
        for path in paths:
            await case.fs.write_bytes(path, path.encode())
        await case.fs.mkdir("w/empty")
        walked = await case.fs.walk("w")
        assert [s.path for s in walked] == ["w/a.txt", "w/b/c.txt", "w/b/d/e.bin"]
        assert all(isinstance(s, FileStat) and not s.is_dir for s in walked)
        assert {s.path for s in await case.fs.walk()} >= set(paths)
        assert await case.fs.walk("missing") == []

    async def test_read_many_reads_a_batch_and_skips_missing(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("r/1", b"one")
        await case.fs.write_bytes("r/2", b"two")
        found = await case.fs.read_many(["r/1", "./r/2", "r/3"])
        assert found == {"r/1": b"one", "r/2": b"two"}
        assert await case.fs.read_many([]) == {}

    # -- folders, deleting, moving ----------------------------------------------------------

    async def test_mkdir_creates_parents_and_tolerates_existing(self, case: FilesystemCase) -> None:
        await case.fs.mkdir("x/y/z")
        await case.fs.mkdir("x/y/z")
        assert (await case.fs.stat("x/y/z")).is_dir
        assert [s.path for s in await case.fs.list("x/y")] == ["x/y/z"]
        await case.fs.write_bytes("x/file", b"")
        with pytest.raises(FileExistsError):
            await case.fs.mkdir("x/file")

    async def test_delete_removes_files_and_trees_idempotently(self, case: FilesystemCase) -> None:
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

    async def test_move_file_and_folder(self, case: FilesystemCase) -> None:
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

    async def test_move_replaces_an_existing_file(self, case: FilesystemCase) -> None:
        await case.fs.write_bytes("src", b"new")
        await case.fs.write_bytes("dst", b"old")
        await case.fs.move("src", "dst")
        assert await case.fs.read_bytes("dst") == b"new"

    # -- the crash-safe primitives ----------------------------------------------------------

    async def test_create_exclusive_fails_when_present(self, case: FilesystemCase) -> None:
        stat = await case.fs.create_exclusive("claims/job-1", b"mine")
        assert stat.version
        with pytest.raises(FileExistsError):
            await case.fs.create_exclusive("claims/job-1", b"theirs")
        assert await case.fs.read_bytes("claims/job-1") == b"mine"

    async def test_create_exclusive_has_exactly_one_winner(self, case: FilesystemCase) -> None:
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

    async def test_compare_and_set_writes_only_on_the_expected_version(self, case: FilesystemCase) -> None:
        created = await case.fs.compare_and_set("state.json", b"1", None)
        with pytest.raises(VersionConflict):
            await case.fs.compare_and_set("state.json", b"x", None)
        updated = await case.fs.compare_and_set("state.json", b"2", created.version)
        with pytest.raises(VersionConflict):
            await case.fs.compare_and_set("state.json", b"3", created.version)
        assert await case.fs.read_bytes("state.json") == b"2"
        assert (await case.fs.stat("state.json")).version == updated.version

    async def test_compare_and_set_under_concurrent_writers_loses_nothing(self, case: FilesystemCase) -> None:
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

    async def test_append_creates_and_extends(self, case: FilesystemCase) -> None:
        await case.fs.append("logs/a.log", b"one\n")
        await case.fs.append("logs/a.log", b"two\n")
        assert await case.fs.read_bytes("logs/a.log") == b"one\ntwo\n"

    async def test_concurrent_appends_are_neither_lost_nor_torn(self, case: FilesystemCase) -> None:
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

    async def test_lock_excludes_a_second_holder_until_released(self, case: FilesystemCase) -> None:
        async with case.fs.lock("job"):
            with pytest.raises(LockTimeout):
                async with case.fs.lock("job", timeout=0.1):
                    pass
            async with case.fs.lock("other-job", timeout=1):
                pass
        async with case.fs.lock("job", timeout=1):
            pass

    async def test_lock_serialises_critical_sections(self, case: FilesystemCase) -> None:
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

    # -- scoping and closing ----------------------------------------------------------------

    async def test_scoped_views_are_disjoint(self, case: FilesystemCase) -> None:
        alice, bob = case.fs.scoped("alice"), case.fs.scoped("bob")
        await alice.write_bytes("secret.txt", b"alice's")
        assert not await bob.exists("secret.txt")
        assert await bob.walk() == []
        with pytest.raises(PermissionError):
            await bob.read_bytes("../alice/secret.txt")
        assert await alice.read_bytes("secret.txt") == b"alice's"

    async def test_aclose_is_idempotent(self, case: FilesystemCase) -> None:
        await case.fs.aclose()
        await case.fs.aclose()

    # -- across processes -------------------------------------------------------------------

    async def test_lock_is_held_against_another_process(self, shared_case: FilesystemCase) -> None:
        async with shared_case.fs.lock("cross"):
            assert _peer_result(shared_case.start_peer("lock", "cross", "0.3")) == "timeout"
        assert _peer_result(shared_case.start_peer("lock", "cross", "10")) == "acquired"

    async def test_compare_and_set_across_processes_loses_nothing(self, shared_case: FilesystemCase) -> None:
        await shared_case.fs.write_bytes("shared-counter", b"0")
        peers = [shared_case.start_peer("increment", "shared-counter", "15") for _ in range(3)]
        assert [_peer_result(p) for p in peers] == ["done"] * 3
        assert await shared_case.fs.read_bytes("shared-counter") == b"45"

    async def test_appends_across_processes_are_whole(self, shared_case: FilesystemCase) -> None:
        peers = [shared_case.start_peer("append", "shared.log", f"p{i}", "30") for i in range(3)]
        assert [_peer_result(p) for p in peers] == ["done"] * 3
        lines = (await shared_case.fs.read_text("shared.log")).splitlines()
        assert len(lines) == 90
        assert all(line.split(":")[2] == "x" * 200 for line in lines)

    async def test_a_write_in_one_process_is_read_by_another(self, shared_case: FilesystemCase) -> None:
        await shared_case.fs.write_text("visible.txt", "from parent")
        assert _peer_result(shared_case.start_peer("read", "visible.txt")) == "from parent"
        assert _peer_result(shared_case.start_peer("write", "visible.txt", "from peer")) == "done"
        assert await shared_case.fs.read_text("visible.txt") == "from peer"

    # -- the shell --------------------------------------------------------------------------

    async def test_stdout_stderr_and_exit_code_are_returned(self, shell_case: FilesystemCase) -> None:
        result = await shell_case.fs.run("echo out; echo err >&2; exit 3")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert not result.ok and not result.timed_out and not result.truncated
        assert result.duration > 0

    async def test_commands_run_in_the_root_or_the_given_folder(self, area_case: FilesystemCase) -> None:
        shell_case = area_case
        await shell_case.fs.write_text("sub/here.txt", "found")
        assert (await shell_case.fs.run("cat sub/here.txt")).stdout == "found"
        assert (await shell_case.fs.run("cat here.txt", cwd="sub")).stdout == "found"

    async def test_shell_path_is_where_the_shell_sees_the_file(self, shell_case: FilesystemCase) -> None:
        await shell_case.fs.write_text("skills/demo/SKILL.md", "hello")
        where = shell_case.fs.shell_path("skills/demo")
        assert os.path.isabs(where)
        result = await shell_case.fs.run(f"cat {where}/SKILL.md", cwd="skills")
        assert result.stdout == "hello", result.stderr

    async def test_files_written_by_commands_persist(self, area_case: FilesystemCase) -> None:
        shell_case = area_case
        result = await shell_case.fs.run("mkdir -p out && printf data > out/result.txt")
        assert result.ok, result.stderr
        assert await shell_case.fs.read_text("out/result.txt") == "data"

    async def test_environment_is_minimal_plus_what_the_caller_adds(self, shell_case: FilesystemCase) -> None:
        os.environ["FS_TEST_SECRET"] = "leak"
        try:
            result = await shell_case.fs.run('echo "[$FS_TEST_SECRET][$EXTRA]"', env={"EXTRA": "yes"})
        finally:
            del os.environ["FS_TEST_SECRET"]
        assert result.stdout == "[][yes]\n"

    async def test_output_beyond_the_cap_is_dropped_and_flagged(self, shell_case: FilesystemCase) -> None:
        limit = shell_case.output_limit
        assert limit is not None, "a filesystem with a shell needs FilesystemCase.output_limit"
        size = max(100000, 2 * limit)
        result = await shell_case.fs.run(f"head -c {size} /dev/zero | tr '\\0' a; echo done >&2")
        assert result.truncated
        assert result.stdout == "a" * limit
        assert result.stderr == "done\n"
        assert result.exit_code == 0

    async def test_timeout_kills_the_whole_process_group(self, shell_case: FilesystemCase) -> None:
        marker = f"fs-timeout-{os.getpid()}-{time.monotonic_ns()}"
        started = time.monotonic()
        result = await shell_case.fs.run(
            f"sh -c 'sleep 30; echo {marker}' & sleep 30 & echo started; wait", timeout=0.5
        )
        assert result.timed_out and not result.ok
        assert result.stdout == "started\n"
        assert time.monotonic() - started < 5

        # Nothing the command started survives it (sandbox helpers get a moment to exit).
        deadline = time.monotonic() + 3
        while left := _processes_mentioning(marker):
            assert time.monotonic() < deadline, f"the command's processes did not exit within 3s (left: {left!r})"
            await anyio.sleep(0.05)

    async def test_background_leftovers_do_not_hold_the_result(self, shell_case: FilesystemCase) -> None:
        started = time.monotonic()
        result = await shell_case.fs.run("sleep 30 & echo quick", timeout=20)
        assert result.stdout == "quick\n" and not result.timed_out
        assert time.monotonic() - started < 5

    async def test_escaping_cwd_is_refused(self, shell_case: FilesystemCase) -> None:
        with pytest.raises(PermissionError):
            await shell_case.fs.run("true", cwd="../..")

    async def test_filesystems_without_shell_say_so(self, case: FilesystemCase) -> None:
        if case.fs.has_shell:
            pytest.skip("has a shell")
        with pytest.raises(ShellUnavailable):
            await case.fs.run("true")
        with pytest.raises(ShellUnavailable):
            case.fs.shell_path("skills/x")


def _processes_mentioning(text: str) -> list[str]:
    """Ids of the host's processes whose command line contains ``text``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if text.encode() in cmdline.read():
                    found.append(pid)
        except OSError:
            continue
    return found

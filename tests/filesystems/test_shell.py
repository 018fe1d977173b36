"""The shell capability, for every filesystem that has one (local+shell, sandboxes)."""

from __future__ import annotations

import os
import time

import pytest

from filesystems import ShellUnavailable
from tests.support.fs_cases import Case
from tests.support.polling import eventually


async def test_stdout_stderr_and_exit_code_are_returned(shell_case: Case) -> None:
    result = await shell_case.fs.run("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok and not result.timed_out and not result.truncated
    assert result.duration > 0


@pytest.fixture
def area_case(shell_case: Case) -> Case:
    """Shells whose root is a writable area (the unscoped sandbox only sees projections)."""
    if shell_case.name == "sandbox":
        pytest.skip("the unscoped sandbox holds only the read-only projected roots")
    return shell_case


async def test_commands_run_in_the_root_or_the_given_folder(area_case: Case) -> None:
    shell_case = area_case
    await shell_case.fs.write_text("sub/here.txt", "found")
    assert (await shell_case.fs.run("cat sub/here.txt")).stdout == "found"
    assert (await shell_case.fs.run("cat here.txt", cwd="sub")).stdout == "found"


async def test_shell_path_is_where_the_shell_sees_the_file(shell_case: Case) -> None:
    await shell_case.fs.write_text("skills/demo/SKILL.md", "hello")
    where = shell_case.fs.shell_path("skills/demo")
    assert os.path.isabs(where)
    result = await shell_case.fs.run(f"cat {where}/SKILL.md", cwd="skills")
    assert result.stdout == "hello", result.stderr


async def test_files_written_by_commands_persist(area_case: Case) -> None:
    shell_case = area_case
    result = await shell_case.fs.run("mkdir -p out && printf data > out/result.txt")
    assert result.ok, result.stderr
    assert await shell_case.fs.read_text("out/result.txt") == "data"


async def test_environment_is_minimal_plus_what_the_caller_adds(shell_case: Case) -> None:
    os.environ["FS_TEST_SECRET"] = "leak"
    try:
        result = await shell_case.fs.run('echo "[$FS_TEST_SECRET][$EXTRA]"', env={"EXTRA": "yes"})
    finally:
        del os.environ["FS_TEST_SECRET"]
    assert result.stdout == "[][yes]\n"


async def test_output_beyond_the_cap_is_dropped_and_flagged(shell_case: Case) -> None:
    result = await shell_case.fs.run("head -c 100000 /dev/zero | tr '\\0' a; echo done >&2")
    assert result.truncated
    assert result.stdout == "a" * 4096
    assert result.stderr == "done\n"
    assert result.exit_code == 0


async def test_timeout_kills_the_whole_process_group(shell_case: Case) -> None:
    marker = f"fs-timeout-{os.getpid()}-{time.monotonic_ns()}"
    started = time.monotonic()
    result = await shell_case.fs.run(f"sh -c 'sleep 30; echo {marker}' & sleep 30 & echo started; wait", timeout=0.5)
    assert result.timed_out and not result.ok
    assert result.stdout == "started\n"
    assert time.monotonic() - started < 5

    # Nothing the command started survives it (sandbox helpers get a moment to exit).
    async def survivors() -> list[str]:
        return _processes_mentioning(marker)

    assert (
        await eventually(
            survivors, lambda left: left == [], within=3, every=0.05, what="the command's processes exiting"
        )
        == []
    )


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if text.encode() in cmdline.read():
                    found.append(pid)
        except OSError:
            continue
    return found


async def test_background_leftovers_do_not_hold_the_result(shell_case: Case) -> None:
    started = time.monotonic()
    result = await shell_case.fs.run("sleep 30 & echo quick", timeout=20)
    assert result.stdout == "quick\n" and not result.timed_out
    assert time.monotonic() - started < 5


async def test_escaping_cwd_is_refused(shell_case: Case) -> None:
    with pytest.raises(PermissionError):
        await shell_case.fs.run("true", cwd="../..")


async def test_filesystems_without_shell_say_so(case: Case) -> None:
    if case.fs.has_shell:
        pytest.skip("has a shell")
    with pytest.raises(ShellUnavailable):
        await case.fs.run("true")
    with pytest.raises(ShellUnavailable):
        case.fs.shell_path("skills/x")

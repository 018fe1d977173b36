"""Environments no skill needs any more are reclaimed — by ``harness skills env --gc`` and by the
pipeline's upkeep after the retention — never while a command of another process runs with
one, never through a link or outside ``.skills-cache/.envs``, and a reclamation killed halfway
leaves whole environments that the next one finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from filesystems import LocalFilesystem
from harness.pipeline import SkillPipeline
from harness.pipeline.environments import ENVS_DIR
from repositories import DirectoryRepository
from tests.support.cli import HARNESS, python_command, run_harness
from tests.support.environments import options, settled, uv_cache, wheelhouse
from tests.support.polling import eventually
from tests.support.skills import make_skill

__all__ = ["uv_cache", "wheelhouse"]  # fixtures

DRIVER = Path(__file__).with_name("env_command_driver.py")
DAY = 86400.0


def _config(tmp_path: Path, wheels: Path) -> Path:
    (tmp_path / "market").mkdir(exist_ok=True)
    config = tmp_path / "harness.yaml"
    config.write_text(
        f"workspace: ws\nrepositories: [dir:{tmp_path / 'market'}]\n"
        f"environments:\n  no_index: true\n  find_links: [{wheels}]\n  untrusted_markets: true\n"
    )
    return config


def _env(tmp_path: Path, *args: str) -> dict[str, Any]:
    """``harness skills env ARGS --json`` over the test's configuration, as a command of its own."""
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    result = run_harness(
        "skills", "env", *args, "--json", "--config", str(tmp_path / "harness.yaml"), env=env, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, Any] | list[dict[str, Any]] = json.loads(result.stdout)
    return found if isinstance(found, dict) else {row["skill_id"]: row for row in found}


def _entries(envs: Path) -> list[str]:
    """What ``envs`` holds besides the leases' folder."""
    return sorted(p.name for p in envs.iterdir() if p.name != ".leases")


def _age(folder: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(folder, (then, then))


def _requirements(tmp_path: Path, text: str) -> None:
    make_skill(tmp_path / "market", "sheet-tool", files={"requirements.txt": text})


def test_an_environment_no_skill_needs_is_removed_once_older_than_the_retention(
    tmp_path: Path, wheelhouse: Path
) -> None:
    _config(tmp_path, wheelhouse)
    _requirements(tmp_path, "hxsheet\n")
    old = _env(tmp_path, "--build")["sheet-tool_dir-market"]["hash"]
    _requirements(tmp_path, "hxprose\n")
    needed = _env(tmp_path, "--build")["sheet-tool_dir-market"]["hash"]
    envs = tmp_path / "ws" / ENVS_DIR
    young = envs / ("a" * 64)
    young.mkdir()
    _age(envs / old, 8)
    _age(envs / needed, 30)  # needed: its age does not matter
    result = _env(tmp_path, "--gc")  # the default retention: 7 days
    assert result["removed"] == [old] and result["freed"] > 0
    assert result["needed"] == [needed] and result["kept"] == [young.name]
    assert sorted(p.name for p in envs.iterdir() if not p.name.startswith(".")) == sorted([needed, young.name])
    assert (envs / needed / "hxprose" / "__init__.py").is_file()
    assert time.time() - (envs / needed).stat().st_mtime < DAY  # found needed: its age starts again
    assert _env(tmp_path, "--gc", "--retention", "0")["removed"] == [young.name]


def test_reclaiming_removes_leftovers_and_links_but_never_follows_a_link_out(tmp_path: Path, wheelhouse: Path) -> None:
    _config(tmp_path, wheelhouse)
    outside = tmp_path / "outside"
    (outside / ("b" * 64)).mkdir(parents=True)
    (outside / "keep.txt").write_text("mine\n")
    envs = tmp_path / "ws" / ENVS_DIR
    envs.mkdir(parents=True)
    (envs / ("b" * 64)).symlink_to(outside)  # where an environment belongs: removed as a link
    for leftover in (f".trash-{'c' * 64}-0a1b2c3d", f".build-{'d' * 64}-0a1b2c3d"):
        (envs / leftover / "pkg").mkdir(parents=True)
        (envs / leftover / "pkg" / "mod.py").write_text("x = 1\n")
        (envs / leftover / "pkg" / "out").symlink_to(outside)
    result = _env(tmp_path, "--gc", "--retention", "0")
    assert result["removed"] == []
    assert _entries(envs) == []
    assert sorted(p.name for p in outside.iterdir()) == ["b" * 64, "keep.txt"]
    assert (outside / "keep.txt").read_text() == "mine\n"


async def test_a_linked_environments_folder_is_left_alone(tmp_path: Path, wheelhouse: Path) -> None:
    outside = tmp_path / "outside"
    (outside / ("e" * 64)).mkdir(parents=True)
    _age(outside / ("e" * 64), 30)
    cache = tmp_path / "ws" / ".skills-cache"
    cache.mkdir(parents=True)
    (cache / ".envs").symlink_to(outside)
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, environments=options(wheelhouse, retention=0)) as pipeline,
    ):
        assert pipeline.environments is not None
        result = await pipeline.environments.reclaim(retention=0)
    assert result.removed == () and (outside / ("e" * 64)).is_dir()


async def test_the_upkeep_renews_the_lease_and_reclaims_what_is_no_longer_needed(
    tmp_path: Path, wheelhouse: Path
) -> None:
    _requirements(tmp_path, "hxsheet\n")
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        DirectoryRepository(tmp_path / "market") as market,
        SkillPipeline(
            filesystem=fs,
            repositories=[market],
            watch=False,
            environments=options(wheelhouse, untrusted_markets=True, retention=0),
            upkeep_interval=0.05,
        ) as pipeline,
    ):
        [first] = [s.environment for s in (await settled(pipeline)).skills.values()]
        leases = tmp_path / "ws" / ENVS_DIR / ".leases"
        [lease] = list(leases.glob("*.json"))
        written = json.loads(lease.read_text())["time"]
        await eventually(lambda: _read_time(lease), lambda t: t > written, within=30, what="the lease renewed")
        assert first is not None and Path(first).is_dir()  # needed: kept whatever the retention
        _requirements(tmp_path, "hxprose\n")
        await pipeline.refresh()
        [second] = [s.environment for s in (await settled(pipeline)).skills.values()]
        assert second is not None and second != first
        await eventually(lambda: _exists(first), lambda there: not there, within=30, what="the old one reclaimed")
        assert Path(second).is_dir()


async def _read_time(lease: Path) -> float:
    return float(json.loads(lease.read_text())["time"])


async def _exists(folder: str) -> bool:
    return Path(folder).exists()


@pytest.fixture
def driver(tmp_path: Path, wheelhouse: Path) -> Iterator[subprocess.Popen[str]]:
    """The second process (see ``env_command_driver.py``), killed if the test leaves it running."""
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    argv = [*python_command(DRIVER), str(tmp_path / "ws"), str(tmp_path / "market"), str(wheelhouse)]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env) as child:
        watchdog = threading.Timer(300, child.kill)  # bounds a hang; nothing here is timed
        watchdog.start()
        try:
            yield child
        finally:
            watchdog.cancel()
            if child.poll() is None:
                child.kill()


def _said(child: subprocess.Popen[str], word: str) -> str:
    assert child.stdout is not None
    said, _, rest = child.stdout.readline().strip().partition(" ")
    assert said == word, (said, rest)
    return rest


def test_a_command_running_with_an_environment_keeps_it_while_another_process_reclaims(
    tmp_path: Path, wheelhouse: Path, driver: subprocess.Popen[str]
) -> None:
    _config(tmp_path, wheelhouse)
    _requirements(tmp_path, "hxsheet\n")
    in_use = Path(_said(driver, "ready"))
    assert _said(driver, "running") == ""
    _requirements(tmp_path, "hxprose\n")  # from now on no skill needs the environment in use
    assert driver.stdin is not None
    driver.stdin.write("retrack\n")
    driver.stdin.flush()
    needed = Path(_said(driver, "retracked"))
    result = _env(tmp_path, "--gc", "--retention", "0")
    assert result["removed"] == [] and sorted(result["needed"]) == sorted([in_use.name, needed.name])
    (tmp_path / "ws" / "alice" / "go").touch()
    assert json.loads(_said(driver, "result")) == "exit code: 0\nstdout:\nhxsheet 2.0"
    assert driver.wait() == 0
    assert _env(tmp_path, "--gc", "--retention", "0")["removed"] == [in_use.name]  # its process is gone
    assert not in_use.exists() and needed.is_dir()


@pytest.mark.slow
def test_a_reclamation_killed_halfway_leaves_whole_environments_and_the_next_one_finishes(
    tmp_path: Path, wheelhouse: Path
) -> None:
    _config(tmp_path, wheelhouse)
    envs = tmp_path / "ws" / ENVS_DIR
    for number in range(120):
        folder = envs / f"{number:064x}"
        (folder / "pkg").mkdir(parents=True)
        for part in range(40):
            (folder / "pkg" / f"m{part}.py").write_text("x = 1\n" * 50)
        _age(folder, 30)
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    argv = [HARNESS, "skills", "env", "--gc", "--config", str(tmp_path / "harness.yaml")]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as child:
        deadline = time.monotonic() + 120  # bounds a hang
        while child.poll() is None and not any(name.startswith(".trash-") for name in _entries(envs)):
            assert time.monotonic() < deadline, "the reclamation never started"
            time.sleep(0.001)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL, "the reclamation ended before it could be killed"
    assert any(name.startswith(".trash-") for name in _entries(envs)), "nothing left to finish"
    left = [envs / name for name in _entries(envs) if not name.startswith(".")]
    assert all(sum(1 for _ in (p / "pkg").iterdir()) == 40 for p in left)  # each one whole, or gone
    assert _env(tmp_path, "--gc")["removed"] == [p.name for p in left]
    assert _entries(envs) == []

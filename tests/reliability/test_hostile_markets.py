"""Crafted markets: git trees with submodules and ``..`` entries, markets that raise anything,
huge files and odd modes. Every turn is served, the diagnostic names the source, and nothing
outside ``.skills-cache`` changes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from harness.tools.skills import load_skill_file
from repositories import (
    DirectoryRepository,
    FileContents,
    GitRepository,
    MemoryRepository,
    PackageRepository,
    SkillBundleContents,
    SkillRepository,
    Snapshot,
)
from tests.support.git import GitRemote as PlainGitRemote
from tests.support.nobody import run_as_nobody
from tests.support.packages import zipped_package
from tests.support.reliability import CACHE, skill_md, tree_state, write_skill

ALICE = RuntimeContext(user_id="alice")
BIG = 3 * 1024 * 1024  # above the size staging streams rather than reads in one batch


def _git(bare: Path, *args: str, data: bytes | None = None) -> str:
    env = {**os.environ, "GIT_DIR": str(bare)}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(["git", *args], input=data, env=env, capture_output=True, check=True).stdout.decode().strip()


def _blob(bare: Path, data: bytes) -> str:
    return _git(bare, "hash-object", "-w", "--stdin", data=data)


def _tree(bare: Path, entries: list[tuple[str, str, str, str]]) -> str:
    """``git mktree --missing`` over (mode, type, sha, name): it accepts names like ``..``."""
    text = "".join(f"{mode} {kind} {sha}\t{name}\n" for mode, kind, sha, name in entries)
    return _git(bare, "mktree", "--missing", data=text.encode())


def crafted_remote(base: Path, *, files: dict[str, tuple[str, bytes]] | None = None) -> str:
    """A bare repo served over file:// whose ``skills/`` holds a good skill, a submodule, a
    ``..`` tree, and a skill with a submodule and a ``..`` blob of its own; returns the URL."""
    bare = base / "crafted.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    md = _blob(bare, skill_md("good"))
    evil_md = _blob(bare, skill_md("evil"))
    script = _blob(bare, b"#!/bin/sh\necho good\n")
    good_entries = [("100644", "blob", md, "SKILL.md"), ("100755", "blob", script, "run.sh")]
    for name, (mode, data) in (files or {}).items():
        good_entries.append((mode, "blob", _blob(bare, data), name))
    good = _tree(bare, good_entries)
    evil = _tree(
        bare,
        [
            ("100644", "blob", evil_md, "SKILL.md"),
            ("160000", "commit", "1" * 40, "vendor"),
            ("100644", "blob", script, ".."),
        ],
    )
    skills = _tree(
        bare,
        [
            ("040000", "tree", good, "good"),
            ("040000", "tree", evil, "evil"),
            ("160000", "commit", "2" * 40, "module"),
            ("040000", "tree", good, ".."),
        ],
    )
    root = _tree(bare, [("040000", "tree", skills, "skills")])
    commit = _git(bare, "commit-tree", root, "-m", "crafted")
    _git(bare, "update-ref", "refs/heads/main", commit)
    return bare.as_uri()


@asynccontextmanager
async def turn(ws: Path, *repositories: SkillRepository, **options: int) -> AsyncIterator[TurnPlan]:
    async with AsyncExitStack() as stack:
        fs = await stack.enter_async_context(LocalFilesystem(ws, shell=True))
        for repository in repositories:
            await stack.enter_async_context(repository)
        pipeline = await stack.enter_async_context(
            SkillPipeline(filesystem=fs, repositories=repositories, watch=False, **options)  # type: ignore[arg-type]
        )
        yield await pipeline.prepare(ALICE)


def _messages(plan: TurnPlan) -> str:
    return "\n".join(f"{d.severity} {d.location} {d.message}" for d in plan.diagnostics)


async def test_git_submodules_and_dot_dot_entries_are_skipped_and_the_rest_serves(tmp_path: Path) -> None:
    url = crafted_remote(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    repo = GitRepository(url, cache_dir=tmp_path / "cache")
    async with turn(ws, repo) as plan:
        text = _messages(plan)
        assert {s.skill.name for s in plan.skills.values()} == {"good", "evil"}
        assert "submodule skipped: module" in text and "submodule skipped: evil/vendor" in text
        assert "unsafe tree entry refused: '..'" in text and "unsafe tree entry refused: 'evil/..'" in text
        assert all(d.location == repo.source for d in plan.diagnostics if "submodule" in d.message)
    staged = ws / CACHE / repo.source
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()) == [
        "evil/SKILL.md",
        "good/SKILL.md",
        "good/run.sh",
    ]


async def test_git_files_are_staged_read_only_executable_when_given_or_a_script(tmp_path: Path) -> None:
    url = crafted_remote(
        tmp_path,
        files={
            "notes.txt": ("100664", b"notes\n"),
            "tool.bin": ("100755", b"\x7fELF"),
            "not-run.sh": ("100644", b"#!/bin/sh\necho the publisher did not mark me executable\n"),
        },
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    repo = GitRepository(url, cache_dir=tmp_path / "cache")
    async with turn(ws, repo):
        pass
    good = ws / CACHE / repo.source / "good"
    assert stat.S_IMODE((good / "tool.bin").stat().st_mode) == 0o555
    assert stat.S_IMODE((good / "notes.txt").stat().st_mode) == 0o444
    assert stat.S_IMODE((good / "not-run.sh").stat().st_mode) == 0o555  # a script, whatever git stored


class RaisingRepository(SkillRepository):
    """A custom market that serves once, then raises whatever it is told to."""

    def __init__(self, failure: BaseException | None) -> None:
        super().__init__(source="raising")
        self.failure = failure
        self._inner = MemoryRepository([SkillBundleContents(folder="steady", skill_md=skill_md("steady"))])
        self.calls = 0
        self.read_failure: Exception | None = None

    async def _version(self) -> str:
        self.calls += 1
        if self.failure is not None and self.calls > 1:
            if isinstance(self.failure, ExceptionGroup):
                async with anyio.create_task_group() as group:  # a real group, as a task group raises it
                    group.start_soon(self._raise, self.failure.exceptions[0])
                    group.start_soon(self._raise, self.failure.exceptions[1])
            raise self.failure
        return "1"

    @staticmethod
    async def _raise(exc: BaseException) -> None:
        raise exc

    async def _load(self, version: str) -> Snapshot:
        return await self._inner.snapshot()

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        if self.read_failure is not None:
            raise self.read_failure
        return await self._inner.read_files(folder, paths)


@pytest.mark.parametrize(
    "failure",
    [
        AttributeError("no attribute 'name'"),
        ValueError("Invalid repository path 'tree/..'"),
        ExceptionGroup("group", [OSError("first"), TypeError("second")]),
    ],
    ids=["AttributeError", "ValueError", "ExceptionGroup"],
)
async def test_a_market_that_raises_anything_keeps_serving_its_last_good_skills(
    tmp_path: Path, failure: Exception
) -> None:
    repo = RaisingRepository(failure)
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        first = await pipeline.prepare(ALICE)
        second = await pipeline.prepare(ALICE)
    assert [s.skill.name for s in first.skills.values()] == ["steady"]
    assert [s.skill.name for s in second.skills.values()] == ["steady"]
    errors = [d for d in second.diagnostics if d.severity == "error"]
    assert len(errors) == 1 and errors[0].location == "raising"
    assert type(failure.exceptions[0] if isinstance(failure, ExceptionGroup) else failure).__name__ in errors[0].message
    assert (tmp_path / CACHE / "raising" / "steady" / "SKILL.md").is_file()


async def test_a_market_raising_on_its_first_read_gives_a_turn_without_its_skills(tmp_path: Path) -> None:
    repo = RaisingRepository(RuntimeError("boom"))
    repo.calls = 1
    async with turn(tmp_path, repo) as plan:
        assert plan.skills == {}
        assert "market 'raising' is unavailable and has no skills yet: RuntimeError: boom" in _messages(plan)


async def test_a_load_from_a_market_whose_read_raises_names_the_market(tmp_path: Path) -> None:
    repo = RaisingRepository(None)
    repo.read_failure = KeyError("crafted failure reading steady")
    repo._inner = MemoryRepository(
        [
            SkillBundleContents(
                folder="steady", skill_md=skill_md("steady"), files=(FileContents(path="a.txt", data=b"a"),)
            )
        ]
    )
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        assert any(d.code == "stage-read-failed" and "raising" in d.message for d in plan.diagnostics)
        with pytest.raises(Exception, match="market 'raising' failed to read steady: KeyError"):
            await load_skill_file(plan, "steady", "a.txt")


def _directory_market(root: Path, files: dict[str, tuple[bytes, int]]) -> DirectoryRepository:
    folder = write_skill(root, "big")
    for name, (data, mode) in files.items():
        (folder / name).write_bytes(data)
        os.chmod(folder / name, mode)
    return DirectoryRepository(root)


async def _git_market(base: Path, files: dict[str, tuple[bytes, int]]) -> GitRepository:
    remote = PlainGitRemote(base / "remote")
    write_skill(remote.work / "skills", "big")
    for name, (data, mode) in files.items():
        (remote.work / "skills" / "big" / name).write_bytes(data)
        os.chmod(remote.work / "skills" / "big" / name, mode)
    remote.commit()
    return GitRepository(remote.url, cache_dir=base / "cache")


async def _mysql_market(base: Path, files: dict[str, tuple[bytes, int]]) -> SkillRepository:
    dsn = os.environ.get("HARNESS_TEST_MYSQL_DSN", "")
    if not dsn:
        pytest.skip("MariaDB (HARNESS_TEST_MYSQL_DSN) not configured")
    table = f"hostile_{os.urandom(4).hex()}"
    from repositories import MySQLRepository

    repo = MySQLRepository(dsn, table=table, writable=True, create_if_missing=True)
    await repo.save(
        SkillBundleContents(
            folder="big",
            skill_md=skill_md("big"),
            files=tuple(FileContents(path=n, data=d, mode=m & 0o7777) for n, (d, m) in files.items()),
        )
    )
    return repo


async def _package_market(base: Path, files: dict[str, tuple[bytes, int]]) -> SkillRepository:
    """A package inside a zip on ``sys.path`` (as a wheel would be), modes in the archive index."""
    layout = {"skills/big/SKILL.md": (skill_md("big"), 0o644), **{f"skills/big/{n}": v for n, v in files.items()}}
    package = _PACKAGES.enter_context(zipped_package(base, layout, prefix="hostile_pkg"))
    return PackageRepository(package, "skills")


_PACKAGES = ExitStack()


@pytest.fixture(autouse=True)
def _remove_packages() -> Iterator[None]:
    yield
    _PACKAGES.close()


MARKETS = {
    "directory": lambda base, files: _as_async(_directory_market(base / "market", files)),
    "git": _git_market,
    "mysql": _mysql_market,
    "package": _package_market,
}


async def _as_async(value: SkillRepository) -> SkillRepository:
    return value


@pytest.mark.parametrize("kind", sorted(MARKETS))
async def test_a_file_over_the_size_cap_is_not_staged_and_a_load_says_why(tmp_path: Path, kind: str) -> None:
    repo = await MARKETS[kind](tmp_path, {"huge.txt": (b"x" * 5000, 0o644), "small.txt": (b"ok\n", 0o644)})
    ws = tmp_path / "ws"
    ws.mkdir()
    async with turn(ws, repo, max_file_size=4096) as plan:
        too_large = [d for d in plan.diagnostics if d.code == "file-too-large"]
        assert len(too_large) == 1 and f"{repo.source}/big/huge.txt is 5000 bytes" in too_large[0].message
        with pytest.raises(OSError, match="huge.txt is 5000 bytes, over the 4096-byte limit"):
            await load_skill_file(plan, "big", "huge.txt")
        assert await load_skill_file(plan, "big", "small.txt") == "ok\n"
    staged = ws / CACHE / repo.source / "big"
    assert (staged / "small.txt").read_bytes() == b"ok\n"
    assert not (staged / "huge.txt").exists()
    assert tree_state(ws, skip=(CACHE,)) == {}


@pytest.mark.parametrize("kind", sorted(MARKETS))
async def test_large_files_stream_to_the_cache_whole_and_leave_no_temporary_copy(tmp_path: Path, kind: str) -> None:
    data = os.urandom(BIG)
    repo = await MARKETS[kind](tmp_path, {"blob.bin": (data, 0o644)})
    ws = tmp_path / "ws"
    ws.mkdir()
    async with turn(ws, repo) as plan:
        assert not [d for d in plan.diagnostics if d.severity == "error"], _messages(plan)
    assert (ws / CACHE / repo.source / "big" / "blob.bin").read_bytes() == data
    assert list((ws / CACHE / ".incoming").iterdir()) == []


@pytest.mark.parametrize("kind", sorted(MARKETS))
async def test_setuid_and_world_writable_market_files_are_staged_without_those_bits(tmp_path: Path, kind: str) -> None:
    repo = await MARKETS[kind](tmp_path, {"run.sh": (b"#!/bin/sh\necho hi\n", 0o6777), "data.txt": (b"d\n", 0o666)})
    ws = tmp_path / "ws"
    ws.mkdir()
    async with turn(ws, repo):
        pass
    staged = ws / CACHE / repo.source / "big"
    assert stat.S_IMODE((staged / "run.sh").stat().st_mode) == 0o555
    assert stat.S_IMODE((staged / "data.txt").stat().st_mode) == 0o444


async def test_every_kind_of_market_stages_the_same_files_with_the_same_modes(tmp_path: Path) -> None:
    files = {
        "run": (b"#!/bin/sh\necho run\n", 0o644),  # a #! line, stored without exec bits
        "tool.py": (b"print('tool')\n", 0o644),  # a script suffix
        "tool.bin": (b"\x7fELF", 0o755),  # an exec bit the publisher set
        "data.txt": (b"data\n", 0o644),
    }
    repos = [await MARKETS[kind](tmp_path / kind, files) for kind in sorted(MARKETS)]
    ws = tmp_path / "ws"
    ws.mkdir()
    async with turn(ws, *repos):
        pass
    staged = {
        repo.source: {p.name: stat.S_IMODE(p.stat().st_mode) for p in (ws / CACHE / repo.source / "big").iterdir()}
        for repo in repos
    }
    expected = {"SKILL.md": 0o444, "run": 0o555, "tool.py": 0o555, "tool.bin": 0o555, "data.txt": 0o444}
    assert len(staged) == len(MARKETS) and all(modes == expected for modes in staged.values()), staged


def test_unreadable_market_files_give_diagnostics_for_a_non_root_user(tmp_path: Path) -> None:
    """Run as ``nobody``: a market file it cannot read fails that read, never the turn."""
    base = Path(tempfile.mkdtemp(prefix="hostile-perm-"))
    try:
        base.chmod(0o755)
        market, ws = base / "market", base / "ws"
        write_skill(market, "good", files={"notes.txt": b"secret notes\n", "ok.txt": b"ok\n"})
        write_skill(market, "locked")
        (market / "good" / "notes.txt").chmod(0o000)
        (market / "locked" / "SKILL.md").chmod(0o000)
        ws.mkdir()
        ws.chmod(0o777)
        before = tree_state(market)
        done = run_as_nobody(
            sys.executable,
            str(Path(__file__).with_name("market_driver.py")),
            str(ws),
            str(market),
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        for user in ("alice", "bob"):
            got = report[user]
            assert "good" in got["skills"]
            assert "Permission denied" in got["loaded"]
            assert any(
                d["severity"] == "error" and report["source"] in d["message"] + d["location"]
                for d in got["diagnostics"]
            )
            assert any("cannot read locked/SKILL.md, skill skipped" in d["message"] for d in got["diagnostics"])
        assert tree_state(market) == before
        # A skill is staged whole or not at all: no half-staged folder for the shell to run.
        assert not (ws / CACHE / report["source"] / "good").exists()
        assert tree_state(ws, skip=(CACHE,)) == {}
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


class OmittingRepository(RaisingRepository):
    """A custom market whose ``read_files`` silently leaves out what it was asked for."""

    async def read_files(self, folder: str, paths: Sequence[str]) -> dict[str, bytes]:
        return {}


async def test_a_market_that_omits_requested_files_is_reported_and_stages_nothing_half(tmp_path: Path) -> None:
    repo = OmittingRepository(None)
    async with turn(tmp_path, repo) as plan:
        failed = [d for d in plan.diagnostics if d.code == "stage-read-failed"]
        assert (
            len(failed) == 1 and "raising/steady" in failed[0].message and "returned no SKILL.md" in failed[0].message
        )
        assert [s.skill.name for s in plan.skills.values()] == ["steady"]
    assert not (tmp_path / CACHE / "raising" / "steady").exists()

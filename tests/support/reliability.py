"""Shared helpers of the reliability tests: skill files, hostile markets, tree snapshots,
the staging-cache consistency check and a private MariaDB server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from repositories import BundleFile, SkillBundle, SkillRepository, Snapshot
from tests.support import git, skills

CACHE = ".skills-cache"


def skill_md(name: str, description: str | None = None, extra: str = "", body: str = "") -> bytes:
    """:func:`tests.support.skills.skill_md` as bytes, ``body`` after the heading."""
    return skills.skill_md(name, description, extra=extra, body=f"# {name}\n{body}").encode()


def write_skill(root: Path, folder: str, data: bytes | None = None, files: dict[str, bytes] | None = None) -> Path:
    """``root/folder/SKILL.md`` (``data`` or a valid skill named ``folder``) plus ``files``."""
    return skills.make_skill(root, folder, text=skill_md(folder) if data is None else data, files=files)


@dataclass(frozen=True, kw_only=True)
class HostileSkill:
    """A bundle a custom market offers as given, unchecked: folder names and file paths included."""

    folder: str
    skill_md: bytes
    files: dict[str, bytes]


class HostileRepository(SkillRepository):
    """A custom market returning whatever folders and file paths it is told to, and (with
    ``extra``) answering ``read_files`` with additional unrequested, hostile paths."""

    def __init__(
        self, skills: Sequence[HostileSkill], *, source: str = "hostile", extra: dict[str, bytes] | None = None
    ) -> None:
        super().__init__(source=source)
        self._skills = {s.folder: s for s in skills}
        self._extra = dict(extra or {})

    async def _version(self) -> str:
        return "1"

    async def _load(self, version: str) -> Snapshot:
        bundles = tuple(
            SkillBundle(
                folder=s.folder,
                skill_md=s.skill_md,
                skill_md_name="SKILL.md",
                files=tuple(BundleFile(path=p, size=len(d), mode=0o644) for p, d in sorted(s.files.items())),
                location=f"hostile:{s.folder}",
                digest=hashlib.sha256(repr((s.folder, s.skill_md, sorted(s.files.items()))).encode()).hexdigest(),
            )
            for s in self._skills.values()
        )
        return Snapshot(version=version, bundles=bundles)

    async def read_files(self, folder: str, paths: Sequence[str]) -> dict[str, bytes]:
        # Deliberately bypasses the base class's path checks: the harness must not trust them.
        skill = self._skills[folder]
        found = {p: skill.skill_md if p == "SKILL.md" else skill.files[p] for p in paths}
        return {**found, **self._extra}

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        raise AssertionError("read_files is overridden")


def tree_state(root: Path, *, skip: Iterable[str] = ()) -> dict[str, str]:
    """Every entry below ``root`` (path -> content hash, ``dir`` or ``link:<target>``),
    leaving out the relative prefixes in ``skip``."""
    skipped = tuple(skip)
    state: dict[str, str] = {}
    if not root.exists():
        return state
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if rel.startswith(skipped):
                continue
            if path.is_symlink():
                state[rel] = f"link:{os.readlink(path)}"
            elif path.is_dir():
                state[rel] = "dir"
            else:
                state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def cache_problems(workspace: Path) -> list[str]:
    """Why ``<workspace>/.skills-cache`` does not match its manifest (empty when consistent):
    every manifest file present with its hash and mode, no unlisted or temporary files."""
    cache = workspace / CACHE
    manifest = json.loads((cache / ".manifest.json").read_bytes())
    problems: list[str] = []
    listed: set[str] = set()
    for key, entry in manifest.items():
        for path, meta in entry["files"].items():
            target = cache / key / path
            listed.add(f"{key}/{path}")
            if not target.is_file() or target.is_symlink():
                problems.append(f"missing {key}/{path}")
                continue
            if hashlib.sha256(target.read_bytes()).hexdigest() != meta["sha256"]:
                problems.append(f"content of {key}/{path} differs from the manifest")
            if target.stat().st_mode & 0o777 != meta["mode"]:
                problems.append(f"mode of {key}/{path} differs from the manifest")
    for path in cache.rglob("*"):
        rel = path.relative_to(cache).as_posix()
        if (
            rel.startswith((".leases", ".lock", ".manifest.json", ".manifest.boot", ".scan-verdicts.json", ".scan.key"))
            or path.is_dir()
        ):
            continue
        if rel not in listed:
            problems.append(f"unlisted file {rel}")
    return problems


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateMariaDB:
    """A throw-away ``mariadbd`` with its own data dir, port and socket: the only server a
    fault test may stop. Never the shared one."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.datadir = base / "data"
        self.port = free_port()
        self.socket = base / "mysqld.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.dsn = f"mysql://root@127.0.0.1:{self.port}/test"

    def install(self) -> None:
        """Create the data dir; one retry on a fresh one (bootstrapping fails now and then on a
        machine under heavy load). A failure carries the tool's own output."""
        self.base.mkdir(parents=True, exist_ok=True)
        for _attempt in (1, 2):
            shutil.rmtree(self.datadir, ignore_errors=True)
            done = subprocess.run(
                [
                    "mariadb-install-db", "--no-defaults", "--auth-root-authentication-method=normal",
                    f"--datadir={self.datadir}", "--user=root",
                ],
                capture_output=True,
            )  # fmt: skip
            if done.returncode == 0:
                return
        output = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()[-8:]
        raise RuntimeError(f"mariadb-install-db failed twice (exit {done.returncode}): " + " | ".join(output))

    def start(self) -> None:
        log = open(self.base / "server.log", "ab")  # noqa: SIM115 - handed to the child
        self.process = subprocess.Popen(
            [
                "mariadbd", "--no-defaults", f"--datadir={self.datadir}", f"--port={self.port}",
                f"--socket={self.socket}", "--user=root", "--bind-address=127.0.0.1",
                "--innodb-buffer-pool-size=16M", "--skip-log-bin", f"--pid-file={self.base / 'pid'}",
            ],
            stdout=log,
            stderr=log,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = subprocess.run(
                [
                    "mariadb",
                    "--no-defaults",
                    "-h127.0.0.1",
                    f"-P{self.port}",
                    "-uroot",
                    "-e",
                    "CREATE DATABASE IF NOT EXISTS test",
                ],
                capture_output=True,
            )
            if probe.returncode == 0:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"private mariadbd did not start: {(self.base / 'server.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None


@contextmanager
def private_mariadb() -> Iterator[PrivateMariaDB]:
    if shutil.which("mariadbd") is None or shutil.which("mariadb-install-db") is None:
        raise RuntimeError("mariadbd / mariadb-install-db are not installed")
    base = Path(tempfile.mkdtemp(prefix="reliability-mariadb-"))
    server = PrivateMariaDB(base)
    try:
        server.install()
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


class GitRemote(git.GitRemote):
    """The shared git remote, plus hostile or ordinary skills in its work tree."""

    def skill(self, name: str, *, description: str | None = None, files: dict[str, bytes] | None = None) -> None:
        write_skill(self.work / "skills", name, skill_md(name, description), files)

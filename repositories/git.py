"""Skills served from a git repository, through a shared persistent clone."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Self, TypeVar

import anyio

from filesystems import has_dot_segment, redact_secrets, redact_url, url_credentials
from repositories._futures import wait_for
from repositories._urls import flag, no_more, number, split_fragment
from repositories.base import BundleFile, SkillBundle, SkillRepository, Snapshot
from repositories.bulk import collections_paused
from repositories.discovery import DIR, FILE, OTHER, SYMLINK, Child, SkillLayout, find_skills, normalise_file_path
from repositories.errors import (
    BundleNotFound,
    InvalidRepositoryConfig,
    RepositoryError,
    RepositoryUnavailable,
    UnsafePath,
)
from repositories.sources import make_source

if TYPE_CHECKING:
    import git

    from filesystems import KeyValueStore, ProgressReporter

__all__ = ["GitRepository", "default_cache_dir"]

_SERVED_REF = "refs/harness/served"
_PINNED_REFS = "refs/harness/pinned/"  # one ref per pinned commit, so no fetch or gc drops it
_TREE_MODE = 0o040000
_GITLINK_MODE = 0o160000
_T = TypeVar("_T")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/agent-skill-harness/git`` (``~/.cache/...`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent-skill-harness" / "git"


def _import_git() -> Any:
    try:
        import git
    except ImportError as exc:  # gitpython raises ImportError when no git binary is found
        raise RepositoryUnavailable(f"git repositories need gitpython and a git binary: {exc}") from exc
    return git


def _owner_and_name(url: str) -> tuple[str, str]:
    # Never read the user part: it may hold a token, and the slug is shown everywhere.
    if "://" in url:
        path = url.split("://", 1)[1].partition("/")[2].partition("?")[0].partition("#")[0]
    else:
        path = url.rpartition("@")[2].split(":", 1)[-1]
    parts = [p for p in path.rstrip("/").split("/") if p]
    name = parts[-1].removesuffix(".git") if parts else "repo"
    return (parts[-2] if len(parts) > 1 else ""), name


def _unsafe_name(name: bytes) -> str | None:
    """Why a tree entry name is not one safe path segment (git's ``mktree`` accepts them all)."""
    if b"/" in name or b"\0" in name:
        return "contains '/' or NUL"
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8"
    return "is empty, '.' or '..'" if has_dot_segment(text) else None


class _Node(NamedTuple):
    """A git tree entry: object id, git mode and path inside the commit's tree."""

    sha: str
    mode: int
    path: str


@dataclass(frozen=True, slots=True)
class _Remote:
    """What ``ls-remote`` said: the ref to fetch and the commit it points at."""

    ref: str
    commit: str


class GitRepository(SkillRepository):
    """Skills from a git repository (gitpython, imported lazily; needs a ``git`` binary).

    The repository is cloned once (``depth=1`` unless ``shallow=False``) into a persistent cache
    folder under ``cache_dir`` (default :func:`default_cache_dir`), keyed by URL and branch and
    guarded by a file lock, so several processes share one clone. Files are served from the git
    objects of the served commit (no checkout): modes come from the tree and symlinks are
    reported, never followed.

    ``version()`` is the served commit. Before it is returned, when ``check_interval`` seconds
    have elapsed since the last check (default 0: every call, unless the pipeline's
    ``market_check_interval`` says otherwise), one ``git ls-remote`` compares the
    remote's HEAD (its symref target) or ``branch`` with the served commit; only when it moved is
    the new commit fetched (``--force``, so force-pushes are handled). An unchanged remote costs
    exactly one subprocess, and none within ``check_interval``. Checks are single-flight: callers
    that arrive while a check is running share it instead of starting another. With
    ``check_budget`` (seconds) a call waits at most that long for a due check once a commit has
    been served, then serves the last known commit; the check finishes in the background and the
    next call serves what it found (``None``, the default, waits for the check;
    ``background_refresh=True`` is a budget of 0). ``refresh()`` and ``sync()`` check now,
    whatever the interval, and wait for the answer (read-your-push); :attr:`change_hints` are
    folders a watcher may follow to have the next call check at once (:meth:`hint_changed`).
    With ``auto_sync=False`` nothing touches the network until ``await sync()``.

    Skills are read from ``subdir`` when given, else from a ``skills/`` folder when the commit has
    one, else from the root. When the remote cannot be reached the last good commit keeps being
    served (also across restarts, from the cache) and the failure is reported in
    ``Snapshot.error``.

    Credentials are git's own: credential helpers for HTTPS, the SSH agent and ``~/.ssh/config``
    for SSH. Git never prompts (``GIT_TERMINAL_PROMPT=0``); a missing credential is a failure.
    Slug: ``git-<owner>-<repo>[-<branch>]``.

    With a ``progress`` callback a fetch runs with ``--progress`` and reports the objects received
    (``task="cloning"`` for the first one, ``"fetching"`` after; ``subject`` is ``shown_url``), at
    most every ``progress_interval`` seconds (``None``: the reporter's default), and a final
    report however it ended.
    """

    batch_reads = True

    def __init__(
        self,
        url: str,
        *,
        branch: str | None = None,
        subdir: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        check_interval: float | None = None,
        background_refresh: bool = False,
        check_budget: float | None = None,
        auto_sync: bool = True,
        shallow: bool = True,
        timeout: float = 120.0,
        source: str | None = None,
    ) -> None:
        if not url:
            raise InvalidRepositoryConfig("a git repository needs a URL")
        if check_interval is not None and check_interval < 0:
            raise InvalidRepositoryConfig(f"check_interval must be >= 0, not {check_interval}")
        if check_budget is not None and check_budget < 0:
            raise InvalidRepositoryConfig(f"check_budget must be >= 0, not {check_budget}")
        owner, self._name = _owner_and_name(url)
        super().__init__(source=source or make_source("git", owner, self._name, branch or ""))
        self.url = url
        self.shown_url = redact_url(url)
        """``url`` with its credentials masked: what messages, locations and logs show."""
        self._secrets = url_credentials(url)
        self.branch = branch
        self.subdir = subdir.strip("/") if subdir else None
        self._own_interval = check_interval is not None
        self.check_interval = check_interval or 0.0
        """Seconds between two checks of the remote (0: before every read)."""
        self.background_refresh = background_refresh
        self.check_budget = 0.0 if background_refresh else check_budget
        self.checks = 0  # ``git ls-remote`` runs so far (how many checks concurrent callers shared)
        self.auto_sync = auto_sync
        self.shallow = shallow
        self.timeout = timeout
        self.progress_interval: float | None = None
        key = hashlib.sha256(f"{url}#{branch or ''}".encode()).hexdigest()[:16]
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.clone_path = root / f"{self.source}-{key}"
        self._lock_path = root / f"{self.source}-{key}.lock"
        self._repo: git.Repo | None = None
        self._served: str | None = None
        self._last_check = -float("inf")
        self._forced = False  # ``refresh()`` asked for a check now: wait for it, whatever the budget
        self._shared: KeyValueStore | None = None  # where replicas share this market's checks
        self._stamp_key = f"harness/market-checks/{self.source}-{key}"
        self._checker: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: concurrent.futures.Future[str] | None = None
        self._roots: dict[str, str] = {}
        # Each served skill's files by path (SKILL.md included) → blob id, from the listing, so
        # reads go by id in one batched stream instead of walking the trees again per path.
        self._blobs: dict[str, dict[str, str]] = {}
        self._blobs_of = ""  # the commit ``_blobs`` describes
        self._sizes: dict[str, int] = {}
        self._texts: dict[str, bytes] = {}
        self._problems: list[str] = []
        self._thread_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self.pinned: str | None = None
        """The commit served whatever the remote says (:meth:`pin`), or ``None``."""

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a ``git+<transport>://`` URL names (``https``, ``http``, ``ssh``, ``file``),
        the constructor's options in the fragment. Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        remote = base[4:]
        if not remote.split("://", 1)[-1]:
            raise InvalidRepositoryConfig(f"no repository in {redact_url(url)!r}")
        repo = cls(
            remote,
            branch=options.pop("branch", None) or None,
            subdir=options.pop("subdir", None) or None,
            cache_dir=options.pop("cache_dir", None) or None,
            check_interval=number(options, "check_interval", 0.0) if "check_interval" in options else None,
            background_refresh=flag(options, "background_refresh", False),
            check_budget=number(options, "check_budget", 0.0) if "check_budget" in options else None,
            auto_sync=flag(options, "auto_sync", True),
            shallow=flag(options, "shallow", True),
            source=options.pop("source", None),
        )
        no_more(url, options)
        return repo

    async def sync(self) -> str:
        """Check the remote now and fetch if it moved; returns the served commit."""
        self._check_open()
        self._served = await anyio.to_thread.run_sync(self._check_remote)
        self._stale = True
        return self._served

    async def read_path(self, path: str) -> bytes:
        """The bytes of one file of the served commit, ``path`` relative to the repository root
        (``subdir`` does not apply): for files next to the skills, such as a marketplace
        manifest. Links are refused (``UnsafePath``); a missing file is ``BundleNotFound``."""
        self._check_open()
        clean = normalise_file_path(path)
        commit = await self._version()
        data = await anyio.to_thread.run_sync(self._read_blobs, commit, "", (clean,))
        return data[clean]

    def pin(self, commit: str | None) -> None:
        """Serve ``commit`` (a full object id) from now on, however the remote moves (even when
        force-pushed); ``None`` follows the remote again. A pinned commit missing from the clone
        is fetched by its id; it is kept under its own ref so later fetches never drop it."""
        self._check_open()
        if commit is not None and not (len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)):
            raise InvalidRepositoryConfig(f"a pinned commit is a full lowercase object id, not {commit!r}")
        self.pinned = commit
        self._stale = True

    def _keep_pinned(self, commit: str) -> str:
        """Make ``commit`` available in the clone under its pin ref (in a worker thread)."""
        ref = _PINNED_REFS + commit
        if (self.clone_path / ref).exists():
            return commit
        with self._cache_lock():
            if not (self.clone_path / "HEAD").exists():
                self._git("init", "--bare", "--quiet", str(self.clone_path))
                self._git("-C", str(self.clone_path), "config", "gc.auto", "0")
            try:
                self._git("-C", str(self.clone_path), "update-ref", ref, commit)
            except RepositoryUnavailable:  # not in the clone: ask the remote for it by id
                depth = ["--depth=1"] if self.shallow else []
                self._git(
                    "-C",
                    str(self.clone_path),
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    *depth,
                    "--",
                    self.url,
                    f"+{commit}:{ref}",
                )
        return commit

    @property
    def change_hints(self) -> tuple[Path, ...]:
        """The shared clone's ref folder (another process's fetch, ``harness market refresh``)
        and, for a ``file://`` remote, the remote's ``refs`` folder (a push). The clone's folder
        is created when missing, so it can be watched before the first clone."""
        hints = []
        served = self.clone_path / "refs" / "harness"
        with contextlib.suppress(OSError):
            served.mkdir(parents=True, exist_ok=True)
            hints.append(served)
        if self.url.startswith("file://"):
            local = Path(urllib.parse.unquote(urllib.parse.urlsplit(self.url).path))
            for refs in (local / "refs", local / ".git" / "refs"):
                if refs.is_dir():
                    hints.append(refs)
                    break
        return tuple(hints)

    def share_checks(self, store: KeyValueStore) -> None:
        """Share this market's checks with every process that opens ``store`` (replicas over
        one MySQL store): a process whose ``check_interval`` elapsed first reads the last check
        any of them made, and when that check is younger than the interval and found the commit
        this process serves, it asks no remote. Each check made here is written back (a few
        dozen bytes under ``harness/market-checks/``). A store that fails costs only the saving."""
        self._shared = store

    def default_check_interval(self, seconds: float) -> None:
        """Check the remote at most every ``seconds`` unless ``check_interval`` was given."""
        if seconds < 0:
            raise InvalidRepositoryConfig(f"check_interval must be >= 0, not {seconds}")
        if not self._own_interval:
            self.check_interval = seconds

    # Change detection.

    def answers_from_cache(self, version: str) -> bool:
        """True between two checks of the remote: no check is due, in flight or asked for
        (``refresh()``, a hint), and ``version`` is the commit served."""
        current = self._last_good.value
        return (
            not self._closed
            and self.pinned is None
            and self.auto_sync
            and not self._stale
            and not self._forced
            and self._pending is None
            and current is not None
            and current.error is None
            and current.version == version == self._served
            and time.monotonic() - self._last_check < self.check_interval
        )

    async def _version(self) -> str:
        if self.pinned is not None:
            return await anyio.to_thread.run_sync(self._keep_pinned, self.pinned)
        if self._pending is not None and self._pending.done():
            finished, self._pending = self._pending, None
            self._served = finished.result()  # raises the check's failure, reported by snapshot()
        if not self.auto_sync:
            return self._require_local()
        due = time.monotonic() - self._last_check >= self.check_interval or self._served is None
        if due and self._pending is None and not self._forced and await self._checked_elsewhere():
            return self._require_served()
        if due and self._pending is None:
            self._last_check = time.monotonic()
            if self._checker is None:
                # One thread per repository: checks of different markets run side by side.
                self._checker = concurrent.futures.ThreadPoolExecutor(1, "git-check")
            self._pending = self._checker.submit(self._check_remote)
        pending = self._pending
        if pending is None:
            return self._require_served()
        budget = self.check_budget if self._served is not None and not self._forced else None
        if budget is None or budget > 0:
            # Wait for the check in flight (ours or another caller's), at most ``budget``.
            with anyio.move_on_after(budget):
                await wait_for(pending)
        if pending.done():
            if self._pending is pending:
                self._pending = None
            self._forced = False
            self._served = pending.result()
            await self._stamp(self._served)
        return self._require_served()

    async def _checked_elsewhere(self) -> bool:
        """Whether a process sharing :meth:`share_checks`'s store checked the remote within the
        interval and found the commit served here; this process then counts it as its own check."""
        if self._shared is None or self._served is None or self.check_interval <= 0:
            return False
        try:
            record = await self._shared.get(self._stamp_key)
            if record is None:
                return False
            stamp = json.loads(record.data)
            age = time.time() - float(stamp["checked"])
            same = stamp["commit"] == self._served
        except Exception:  # no stamp, a garbled one, a store that is down: check as usual
            return False
        if not (same and 0 <= age < self.check_interval):
            return False
        self._last_check = time.monotonic() - age
        return True

    async def _stamp(self, commit: str) -> None:
        if self._shared is None or self.check_interval <= 0:
            return  # checked on every call: nobody could use the stamp, so none is written
        stamp = json.dumps({"checked": time.time(), "commit": commit}).encode()
        with contextlib.suppress(Exception):  # the next check simply asks the remote again
            await self._shared.put(self._stamp_key, stamp)

    def _require_served(self) -> str:
        if self._served is None:  # only before the first check finished, which is waited for
            raise RepositoryUnavailable(f"{self.shown_url}: no commit checked yet")
        return self._served

    def _require_local(self) -> str:
        if self._served is None:
            self._served = self._local_commit()
        if self._served is None:
            raise RepositoryUnavailable(
                f"{self.shown_url}: not synced yet (auto_sync=False): call `await repo.sync()` first"
            )
        return self._served

    async def _fallback_version(self) -> str | None:
        return await anyio.to_thread.run_sync(self._local_commit)

    def _invalidate(self) -> None:
        self._last_check = -float("inf")
        self._forced = True

    def _check_remote(self) -> str:
        """One ``ls-remote``; a fetch under the cache lock only when the remote moved."""
        remote = self._ls_remote()
        if self._local_commit() == remote.commit:
            return remote.commit
        try:
            with self._cache_lock():
                if self._local_commit() != remote.commit:
                    self._fetch(remote.ref)
                commit = self._local_commit()
        except OSError as exc:
            raise RepositoryUnavailable(
                f"cannot update the clone of {self.shown_url} in {self.clone_path}: {exc}"
            ) from exc
        if commit is None:
            raise RepositoryUnavailable(f"{self.shown_url}: fetching {remote.ref} gave no commit")
        return commit

    def _git(self, *args: str, reporter: ProgressReporter | None = None) -> str:
        """Run git and return its stdout. A plain subprocess (no watchdog thread per call): the
        check runs on every turn for every market, beside other users' turns. With ``reporter``
        (a ``fetch --progress``), its received objects are reported as they come and its stdout
        is not kept."""
        argv = ["git", *args]
        env = {**os.environ, **_GIT_ENV}
        try:
            if reporter is None:
                done = subprocess.run(
                    argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout, check=False
                )
            else:
                from repositories._git_progress import run_reporting  # loaded only by programs that listen

                done = run_reporting(argv, env=env, timeout=self.timeout, reporter=reporter)
        except subprocess.TimeoutExpired:
            raise RepositoryUnavailable(f"git {args[0]} {self.shown_url} timed out after {self.timeout:g}s") from None
        except OSError as exc:
            # The message of a failed start names the command line, URL and token included; the
            # original is not chained so no traceback can print it.
            detail = redact_secrets(str(exc), *self._secrets)
            raise RepositoryUnavailable(f"git {args[0]} {self.shown_url} failed: {detail}") from None
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
            detail = redact_secrets(stderr, *self._secrets)
            raise RepositoryUnavailable(f"git {args[0]} {self.shown_url} failed: {detail}")
        return done.stdout.decode("utf-8", "replace").rstrip("\n")

    def _ls_remote(self) -> _Remote:
        self.checks += 1
        if self.branch:
            ref = f"refs/heads/{self.branch}"
            lines = self._git("ls-remote", "--", self.url, ref).splitlines()
        else:
            ref = "HEAD"
            lines = self._git("ls-remote", "--symref", "--", self.url, "HEAD").splitlines()
        commit = None
        for line in lines:
            left, _, name = line.partition("\t")
            if left.startswith("ref: ") and name == "HEAD":
                ref = left[5:]
            elif name == ref or name == "HEAD":
                commit = left
        if commit is None:
            what = f"branch {self.branch!r}" if self.branch else "a HEAD"
            raise RepositoryUnavailable(f"{self.shown_url} has no {what}")
        return _Remote(ref=ref, commit=commit)

    def _fetch(self, ref: str) -> None:
        first = self._local_commit() is None
        if not (self.clone_path / "HEAD").exists():
            self._git("init", "--bare", "--quiet", str(self.clone_path))
            self._git("-C", str(self.clone_path), "config", "gc.auto", "0")
        depth = ["--depth=1"] if self.shallow else []
        reporter = self._reporter("cloning" if first else "fetching")
        try:
            self._git(
                "-C",
                str(self.clone_path),
                "fetch",
                "--quiet" if reporter is None else "--progress",  # --quiet silences the progress too
                "--force",
                "--no-tags",
                *depth,
                "--",
                self.url,
                f"+{ref}:{_SERVED_REF}",
                reporter=reporter,
            )
        finally:
            if reporter is not None:
                reporter.finish()

    def _reporter(self, task: str) -> ProgressReporter | None:
        """A reporter of the objects a fetch receives, when someone listens."""
        if self.progress is None:
            return None
        from filesystems import ProgressReporter  # loaded only by programs that listen

        return ProgressReporter(
            self.progress,
            task=task,
            total=None,
            unit="objects",
            subject=self.shown_url,
            interval=self.progress_interval,
        )

    @contextmanager
    def _cache_lock(self) -> Iterator[None]:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _local_commit(self) -> str | None:
        """The commit the shared clone serves, read from the ref files (no subprocess)."""
        ref_file = self.clone_path / _SERVED_REF
        try:
            return ref_file.read_text().strip() or None
        except FileNotFoundError:
            pass
        try:
            packed = (self.clone_path / "packed-refs").read_text()
        except FileNotFoundError:
            return None
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == _SERVED_REF:
                return sha
        return None

    # Reading the served commit.

    def _open_repo(self) -> git.Repo:
        with self._thread_lock:
            if self._repo is None:
                git = _import_git()
                try:
                    self._repo = git.Repo(self.clone_path)
                except (git.exc.GitError, OSError) as exc:
                    raise RepositoryUnavailable(f"cannot open the clone of {self.shown_url}: {exc}") from exc
            return self._repo

    def _tree(self, commit: str) -> tuple[_Node, str]:
        """The tree skills are read from, and its path inside the commit."""
        repo = self._open_repo()
        git = _import_git()
        try:
            root = _Node(repo.commit(commit).tree.hexsha, _TREE_MODE, "")
            if self.subdir:
                return self._lookup(root, self.subdir, commit)._replace(path=""), self.subdir
            skills = self._entries(root).get("skills")
            if skills is not None and skills.mode == _TREE_MODE:
                return skills._replace(path=""), "skills"
            return root, ""
        except BundleNotFound as exc:
            raise RepositoryUnavailable(f"{self.shown_url}@{commit}: no folder {self.subdir!r}") from exc
        except (git.exc.GitError, git.exc.ODBError, ValueError, OSError) as exc:
            raise RepositoryUnavailable(f"{self.shown_url}@{commit}: cannot read the commit: {exc}") from exc

    def _entries(self, tree: _Node) -> dict[str, _Node]:
        """The entries of a tree object, parsed here rather than by gitpython, which raises on
        names such as ``..`` and cannot represent submodules without a ``.gitmodules``. Names
        that are not one safe path segment are left out and reported in ``self._problems``."""
        data = self._open_repo().odb.stream(bytes.fromhex(tree.sha)).read()
        entries: dict[str, _Node] = {}
        index = 0
        while index < len(data):
            space = data.index(b" ", index)
            nul = data.index(b"\0", space)
            mode = int(data[index:space], 8)
            raw_name = data[space + 1 : nul]
            sha = data[nul + 1 : nul + 21].hex()
            index = nul + 21
            name = raw_name.decode("utf-8", "backslashreplace")
            where = "/".join(p for p in (tree.path, name) if p)
            problem = _unsafe_name(raw_name)
            if problem:
                self._problems.append(f"unsafe tree entry refused: {where!r} {problem}")
            else:
                entries[name] = _Node(sha, mode, where)
        return entries

    def _lookup(self, tree: _Node, path: str, commit: str) -> _Node:
        node = tree
        for segment in path.split("/"):
            found = self._entries(node).get(segment) if node.mode == _TREE_MODE else None
            if found is None:
                raise BundleNotFound(f"{self.shown_url}@{commit}: {path} does not exist")
            node = found
        return node

    def _list_tree(self, tree: _Node) -> list[Child[_Node]]:
        children: list[Child[_Node]] = []
        for name, node in self._entries(tree).items():
            kind = stat.S_IFMT(node.mode)
            if node.mode == _TREE_MODE:
                children.append(Child(name, DIR, node))
            elif node.mode == _GITLINK_MODE:
                if not name.startswith("."):
                    self._problems.append(f"submodule skipped: {node.path}")
            elif kind == stat.S_IFLNK:
                children.append(Child(name, SYMLINK, node))
            elif kind != stat.S_IFREG:
                children.append(Child(name, OTHER, node))
            else:
                size = self._sizes.get(node.sha)
                if size is None:
                    size = self._sizes[node.sha] = int(self._open_repo().odb.info(bytes.fromhex(node.sha)).size)
                children.append(Child(name, FILE, node, size, node.mode & 0o777, node.sha))
        return children

    def _read_snapshot(self, commit: str) -> Snapshot:
        self._problems = []
        tree, prefix = self._tree(commit)
        from repositories._git_blobs import BlobReadError, blob_sizes  # loaded by the first read

        try:  # every blob's size from one ``ls-tree``, not one object lookup per file
            sizes = blob_sizes(self.clone_path, tree.sha, env=self._env(), timeout=self.timeout)
        except BlobReadError:
            sizes = {}  # looked up one by one instead
        self._sizes.update(sizes)
        repo_name = prefix.rsplit("/", 1)[-1] if prefix else self._name
        with collections_paused(len(sizes)):  # this tree's files: a listing of thousands is all kept
            layouts, problems = find_skills(
                tree,
                self._list_tree,
                root_name=repo_name,
                read=lambda blob: self._open_repo().odb.stream(bytes.fromhex(blob.sha)).read(),
            )
            problems = sorted({*problems, *self._problems})
            texts: dict[str, bytes] = {}
            bundles = tuple(self._bundle(commit, prefix, layout, texts) for layout in layouts)
        self._texts = texts
        self._roots = {layout.folder: "/".join(p for p in (prefix, layout.root) if p) for layout in layouts}
        self._blobs = {
            layout.folder: {layout.relative(e): e.token for e in (layout.main, *layout.files)} for layout in layouts
        }
        self._blobs_of = commit
        return Snapshot(version=commit, bundles=bundles, problems=tuple(problems))

    def _bundle(self, commit: str, prefix: str, layout: SkillLayout[_Node], texts: dict[str, bytes]) -> SkillBundle:
        blob_id = layout.main.token
        text = self._texts.get(blob_id)
        if text is None:
            text = self._open_repo().odb.stream(bytes.fromhex(blob_id)).read()
        texts[blob_id] = text
        path = "/".join(p for p in (prefix, layout.root) if p)
        return SkillBundle(
            folder=layout.folder,
            skill_md=text,
            skill_md_name=layout.skill_md_name,
            files=tuple(BundleFile(path=layout.relative(e), size=e.size, mode=e.mode) for e in layout.files),
            location=f"{self.shown_url}@{commit}:{path}",
            digest=layout.digest(),
        )

    async def _load(self, version: str) -> Snapshot:
        return await anyio.to_thread.run_sync(self._guarded, version, lambda: self._read_snapshot(version))

    def _blob(self, commit: str, root: str, path: str) -> _Node:
        """The blob of ``path`` below ``root`` of ``commit``; caller holds ``_read_lock``."""
        full = f"{root}/{path}" if root else path
        top = _Node(self._open_repo().commit(commit).tree.hexsha, _TREE_MODE, "")
        blob = self._lookup(top, full, commit)
        if stat.S_ISLNK(blob.mode):
            raise UnsafePath(f"unsafe path refused: {full} is a symlink")
        if not stat.S_ISREG(blob.mode) or blob.mode == _GITLINK_MODE:
            raise BundleNotFound(f"{self.shown_url}@{commit}: {full} is not a file")
        return blob

    def _read_blobs(self, commit: str, root: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        def read() -> dict[str, bytes]:
            odb = self._open_repo().odb
            return {path: odb.stream(bytes.fromhex(self._blob(commit, root, path).sha)).read() for path in paths}

        return self._guarded(commit, read)

    def _guarded(self, commit: str, read: Callable[[], _T]) -> _T:
        git = _import_git()
        try:
            # gitpython talks to one persistent ``git cat-file`` process per Repo, which is not
            # safe to share between threads: callers may read several skills concurrently.
            with self._read_lock:
                self._problems = []
                return read()
        except RepositoryError:  # BundleNotFound and UnsafePath are OSErrors too
            raise
        except (git.exc.GitError, git.exc.ODBError, ValueError, OSError) as exc:
            raise RepositoryUnavailable(f"{self.shown_url}@{commit}: cannot read the commit's objects: {exc}") from exc

    async def _read_chunks(self, folder: str, path: str, chunk_size: int) -> AsyncIterator[bytes]:
        snapshot = await self._served_snapshot()
        root = self._root_of(folder, snapshot)
        known = self._blobs.get(folder, {}).get(path) if self._blobs_of == snapshot.version else None
        blob = (
            _Node(known, 0o100644, path)
            if known is not None
            else await anyio.to_thread.run_sync(
                self._guarded, snapshot.version, lambda: self._blob(snapshot.version, root, path)
            )
        )
        # A separate ``cat-file`` per streamed blob: the shared one cannot be held across awaits.
        process = subprocess.Popen(
            ["git", "-C", str(self.clone_path), "cat-file", "blob", blob.sha],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV},
        )
        assert process.stdout is not None
        try:
            while chunk := await anyio.to_thread.run_sync(process.stdout.read, chunk_size):
                yield chunk
        finally:
            process.kill()
            process.stdout.close()
            await anyio.to_thread.run_sync(process.wait)
        if process.returncode not in (0, -9):
            raise RepositoryUnavailable(f"{self.shown_url}@{snapshot.version}: cannot read {folder}/{path}")

    def _root_of(self, folder: str, snapshot: Snapshot) -> str:
        root = self._roots.get(folder)
        if root is None or snapshot.bundle(folder) is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r} at {snapshot.version}")
        return root

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        snapshot = await self._served_snapshot()
        root = self._root_of(folder, snapshot)
        (answer,) = await anyio.to_thread.run_sync(self._read_by_id, snapshot.version, [(folder, root, paths)])
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def _read_files_batch(
        self, requests: list[tuple[str, tuple[str, ...]]]
    ) -> list[dict[str, bytes] | Exception]:
        snapshot = await self._served_snapshot()
        asks: list[tuple[str, str, tuple[str, ...]]] = []
        answers: list[dict[str, bytes] | Exception | None] = []
        for folder, paths in requests:
            try:
                asks.append((folder, self._root_of(folder, snapshot), paths))
                answers.append(None)
            except RepositoryError as exc:
                answers.append(exc)
        read = iter(await anyio.to_thread.run_sync(self._read_by_id, snapshot.version, asks))
        return [answer if answer is not None else next(read) for answer in answers]

    def _read_by_id(
        self, commit: str, asks: list[tuple[str, str, tuple[str, ...]]]
    ) -> list[dict[str, bytes] | Exception]:
        """The files of several skills (``(folder, root, paths)`` each), every blob the listing
        named read in one ``cat-file --batch`` stream; a path it did not name (a link, a folder,
        a file outside the skills) is looked up in the trees, which says why it cannot be read.
        One result per ask: its bytes by path, or the error it met."""
        from repositories._git_blobs import BlobReadError, read_blobs  # loaded by the first read

        known = self._blobs if self._blobs_of == commit else {}
        # Every skill's own ids: the same path (``SKILL.md``, ``scripts/run.sh``) names another
        # blob in each skill.
        ids = [blob for folder, _, paths in asks for path in paths if (blob := known.get(folder, {}).get(path))]
        try:
            data = read_blobs(self.clone_path, ids, env=self._env(), timeout=self.timeout)
        except BlobReadError as exc:
            error = RepositoryUnavailable(f"{self.shown_url}@{commit}: cannot read the commit's objects: {exc}")
            return [error] * len(asks)
        results: list[dict[str, bytes] | Exception] = []
        for folder, root, paths in asks:
            files = {}
            for path in paths:
                blob = known.get(folder, {}).get(path)
                if blob is not None and blob in data:
                    files[path] = data[blob]
            rest = tuple(path for path in paths if path not in files)
            try:
                if rest:
                    files.update(self._read_blobs(commit, root, rest))
                results.append(files)
            except RepositoryError as exc:
                results.append(exc)
        return results

    def _env(self) -> dict[str, str]:
        return {**os.environ, **_GIT_ENV}

    async def _aclose(self) -> None:
        checker, self._checker = self._checker, None
        if checker is not None:
            await anyio.to_thread.run_sync(checker.shutdown)
        if self._repo is not None:
            self._repo.close()
            self._repo = None

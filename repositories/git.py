"""Skills served from a git repository, through a shared persistent clone."""

from __future__ import annotations

import concurrent.futures
import fcntl
import hashlib
import os
import stat
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from repositories._layout import DIR, FILE, OTHER, SYMLINK, Child, SkillLayout, find_skills
from repositories.base import BundleFile, SkillBundle, SkillRepository, Snapshot
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

__all__ = ["GitRepository", "default_cache_dir"]

_SERVED_REF = "refs/harness/served"
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
    path = urllib.parse.urlsplit(url).path if "://" in url else url.split(":", 1)[-1]
    parts = [p for p in path.rstrip("/").split("/") if p]
    name = parts[-1].removesuffix(".git") if parts else "repo"
    return (parts[-2] if len(parts) > 1 else ""), name


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
    have elapsed since the last check (default 0: every call), one ``git ls-remote`` compares the
    remote's HEAD (its symref target) or ``branch`` with the served commit; only when it moved is
    the new commit fetched (``--force``, so force-pushes are handled). An unchanged remote costs
    exactly one subprocess, and none within ``check_interval``. With ``background_refresh=True``
    the check runs in a worker thread while the current commit keeps being served; the new commit
    is picked up by a later call. With ``auto_sync=False`` nothing touches the network until
    ``await sync()``.

    Skills are read from ``subdir`` when given, else from a ``skills/`` folder when the commit has
    one, else from the root. When the remote cannot be reached the last good commit keeps being
    served (also across restarts, from the cache) and the failure is reported in
    ``Snapshot.error``.

    Credentials are git's own: credential helpers for HTTPS, the SSH agent and ``~/.ssh/config``
    for SSH. Git never prompts (``GIT_TERMINAL_PROMPT=0``); a missing credential is a failure.
    Slug: ``git-<owner>-<repo>[-<branch>]``.
    """

    def __init__(
        self,
        url: str,
        *,
        branch: str | None = None,
        subdir: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        check_interval: float = 0.0,
        background_refresh: bool = False,
        auto_sync: bool = True,
        shallow: bool = True,
        timeout: float = 120.0,
        source: str | None = None,
    ) -> None:
        if not url:
            raise InvalidRepositoryConfig("a git repository needs a URL")
        if check_interval < 0:
            raise InvalidRepositoryConfig(f"check_interval must be >= 0, not {check_interval}")
        owner, self._name = _owner_and_name(url)
        super().__init__(source=source or make_source("git", owner, self._name, branch or ""))
        self.url = url
        self.branch = branch
        self.subdir = subdir.strip("/") if subdir else None
        self.check_interval = check_interval
        self.background_refresh = background_refresh
        self.auto_sync = auto_sync
        self.shallow = shallow
        self.timeout = timeout
        key = hashlib.sha256(f"{url}#{branch or ''}".encode()).hexdigest()[:16]
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.clone_path = root / f"{self.source}-{key}"
        self._lock_path = root / f"{self.source}-{key}.lock"
        self._repo: git.Repo | None = None
        self._served: str | None = None
        self._last_check = -float("inf")
        self._checker: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: concurrent.futures.Future[str] | None = None
        self._roots: dict[str, str] = {}
        self._sizes: dict[str, int] = {}
        self._texts: dict[str, bytes] = {}
        self._thread_lock = threading.Lock()
        self._read_lock = threading.Lock()

    async def sync(self) -> str:
        """Check the remote now and fetch if it moved; returns the served commit."""
        self._check_open()
        self._served = await anyio.to_thread.run_sync(self._check_remote)
        self._stale = True
        return self._served

    # Change detection.

    async def _version(self) -> str:
        if self._pending is not None and self._pending.done():
            pending, self._pending = self._pending, None
            self._served = pending.result()  # raises the check's failure, reported by snapshot()
        if not self.auto_sync:
            return self._require_local()
        due = time.monotonic() - self._last_check >= self.check_interval
        if due and self.background_refresh and self._served is not None:
            if self._pending is None:
                self._last_check = time.monotonic()
                if self._checker is None:
                    self._checker = concurrent.futures.ThreadPoolExecutor(1, "git-check")
                self._pending = self._checker.submit(self._check_remote)
            return self._served
        if due or self._served is None:
            self._last_check = time.monotonic()
            self._served = await anyio.to_thread.run_sync(self._check_remote)
        return self._served

    def _require_local(self) -> str:
        if self._served is None:
            self._served = self._local_commit()
        if self._served is None:
            raise RepositoryUnavailable(
                f"{self.url}: not synced yet (auto_sync=False): call `await repo.sync()` first"
            )
        return self._served

    async def _fallback_version(self) -> str | None:
        return await anyio.to_thread.run_sync(self._local_commit)

    def _invalidate(self) -> None:
        self._last_check = -float("inf")

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
            raise RepositoryUnavailable(f"cannot update the clone of {self.url} in {self.clone_path}: {exc}") from exc
        if commit is None:
            raise RepositoryUnavailable(f"{self.url}: fetching {remote.ref} gave no commit")
        return commit

    def _git(self, *args: str) -> str:
        git = _import_git()
        try:
            out: str = git.Git().execute(
                ["git", *args], env={**os.environ, **_GIT_ENV}, kill_after_timeout=self.timeout
            )
        except git.GitCommandError as exc:
            detail = (exc.stderr or "").strip() or str(exc)
            raise RepositoryUnavailable(f"git {args[0]} {self.url} failed: {detail}") from exc
        except OSError as exc:
            raise RepositoryUnavailable(f"git {args[0]} {self.url} failed: {exc}") from exc
        return out

    def _ls_remote(self) -> _Remote:
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
            raise RepositoryUnavailable(f"{self.url} has no {what}")
        return _Remote(ref=ref, commit=commit)

    def _fetch(self, ref: str) -> None:
        if not (self.clone_path / "HEAD").exists():
            self._git("init", "--bare", "--quiet", str(self.clone_path))
            self._git("-C", str(self.clone_path), "config", "gc.auto", "0")
        depth = ["--depth=1"] if self.shallow else []
        self._git(
            "-C", str(self.clone_path), "fetch", "--quiet", "--force", "--no-tags", *depth,
            "--", self.url, f"+{ref}:{_SERVED_REF}",
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
                    raise RepositoryUnavailable(f"cannot open the clone of {self.url}: {exc}") from exc
            return self._repo

    def _tree(self, commit: str) -> tuple[Any, str]:
        """The tree skills are read from, and its path inside the commit."""
        repo = self._open_repo()
        git = _import_git()
        try:
            tree = repo.commit(commit).tree
            if self.subdir:
                return tree / self.subdir, self.subdir
            names = {item.name: item for item in tree.trees}
            if "skills" in names:
                return names["skills"], "skills"
            return tree, ""
        except KeyError as exc:
            raise RepositoryUnavailable(f"{self.url}@{commit}: no folder {self.subdir!r}") from exc
        except (git.exc.GitError, git.exc.ODBError, ValueError, OSError) as exc:
            raise RepositoryUnavailable(f"{self.url}@{commit}: cannot read the commit: {exc}") from exc

    def _list_tree(self, tree: Any) -> list[Child[Any]]:
        children: list[Child[Any]] = []
        for item in tree:
            if item.type == "tree":
                children.append(Child(item.name, DIR, item))
            elif item.type != "blob":
                children.append(Child(item.name, OTHER, item))
            elif stat.S_ISLNK(item.mode):
                children.append(Child(item.name, SYMLINK, item))
            else:
                size = self._sizes.get(item.hexsha)
                if size is None:
                    size = self._sizes[item.hexsha] = item.size
                children.append(Child(item.name, FILE, item, size, item.mode & 0o777, item.hexsha))
        return children

    def _read_snapshot(self, commit: str) -> Snapshot:
        tree, prefix = self._tree(commit)
        repo_name = prefix.rsplit("/", 1)[-1] if prefix else self._name
        layouts, problems = find_skills(
            tree, self._list_tree, root_name=repo_name, read=lambda blob: blob.data_stream.read()
        )
        texts: dict[str, bytes] = {}
        bundles = tuple(self._bundle(commit, prefix, layout, texts) for layout in layouts)
        self._texts = texts
        self._roots = {layout.folder: "/".join(p for p in (prefix, layout.root) if p) for layout in layouts}
        return Snapshot(version=commit, bundles=bundles, problems=tuple(problems))

    def _bundle(self, commit: str, prefix: str, layout: SkillLayout[Any], texts: dict[str, bytes]) -> SkillBundle:
        blob_id = layout.main.token
        text = self._texts.get(blob_id)
        if text is None:
            text = layout.main.node.data_stream.read()
        texts[blob_id] = text
        path = "/".join(p for p in (prefix, layout.root) if p)
        return SkillBundle(
            folder=layout.folder,
            skill_md=text,
            skill_md_name=layout.skill_md_name,
            files=tuple(BundleFile(path=layout.relative(e), size=e.size, mode=e.mode) for e in layout.files),
            location=f"{self.url}@{commit}:{path}",
            digest=layout.digest(),
        )

    async def _load(self, version: str) -> Snapshot:
        def read() -> Snapshot:
            with self._read_lock:
                return self._read_snapshot(version)

        return await anyio.to_thread.run_sync(read)

    def _read_blobs(self, commit: str, root: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        git = _import_git()
        repo = self._open_repo()
        try:
            # gitpython talks to one persistent ``git cat-file`` process per Repo, which is not
            # safe to share between threads: callers may read several skills concurrently.
            with self._read_lock:
                return self._read_from_tree(repo.commit(commit).tree, commit, root, paths)
        except RepositoryError:  # BundleNotFound and UnsafePath are OSErrors too
            raise
        except (git.exc.GitError, git.exc.ODBError, ValueError, OSError) as exc:
            raise RepositoryUnavailable(f"{self.url}@{commit}: cannot read files: {exc}") from exc

    def _read_from_tree(self, tree: Any, commit: str, root: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        data: dict[str, bytes] = {}
        for path in paths:
            full = f"{root}/{path}" if root else path
            try:
                blob = tree / full
            except KeyError as exc:
                raise BundleNotFound(f"{self.url}@{commit}: {full} does not exist") from exc
            if blob.type != "blob":
                raise BundleNotFound(f"{self.url}@{commit}: {full} is not a file")
            if stat.S_ISLNK(blob.mode):
                raise UnsafePath(f"unsafe path refused: {full} is a symlink")
            data[path] = blob.data_stream.read()
        return data

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        snapshot = self._snapshot if self._snapshot is not None else await self.snapshot()
        root = self._roots.get(folder)
        if root is None or snapshot.bundle(folder) is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r} at {snapshot.version}")
        return await anyio.to_thread.run_sync(self._read_blobs, snapshot.version, root, paths)

    async def _aclose(self) -> None:
        checker, self._checker = self._checker, None
        if checker is not None:
            await anyio.to_thread.run_sync(checker.shutdown)
        if self._repo is not None:
            self._repo.close()
            self._repo = None

"""A folder of skill folders on the host."""

from __future__ import annotations

import errno
import functools
import hashlib
import logging
import os
import shutil
import stat
import urllib.parse
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Self

import anyio

from filesystems import AbstractFilesystem, FilesystemError, has_dot_segment, redact_url
from filesystems.base import normalize_path
from repositories._urls import flag, no_more, split_fragment
from repositories.base import (
    BundleFile,
    FileContents,
    FileListing,
    SkillBundle,
    SkillBundleContents,
    SkillRepository,
    Snapshot,
)
from repositories.discovery import (
    DIR,
    FILE,
    IGNORE_FILES,
    OTHER,
    SYMLINK,
    Child,
    Discovery,
    SkillLayout,
    complete_layout,
    discover,
    tree_from_paths,
)
from repositories.errors import (
    BundleNotFound,
    InvalidBundle,
    InvalidRepositoryConfig,
    RepositoryUnavailable,
    UnsafePath,
)
from repositories.sources import make_source

__all__ = [
    "DirectoryRepository",
    "FolderScan",
    "discover_host",
    "read_below",
    "read_host_file",
    "read_skill_folder",
    "scan_folder",
]

log = logging.getLogger(__name__)

# A writer's temporary files (atomic writes), never content.
_TEMPORARY = ".tmp-"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Rules:
    """How a folder is read: see the ``DirectoryRepository`` options of the same names."""

    follow_links: bool = False
    nested: bool = False
    optional: bool = False
    lazy_files: bool = False
    look_for: tuple[str, ...] = ()

    def key(self, layout: SkillLayout[str]) -> str:
        """What names a skill in reads: its path when nested folders are kept apart, else its name."""
        return (layout.root or layout.folder) if self.nested else layout.folder


@dataclass(frozen=True, slots=True)
class FolderScan:
    """One walk of a skills folder: its version, bundles, problems and where each skill lies."""

    version: str
    bundles: tuple[SkillBundle, ...]
    problems: tuple[str, ...]
    roots: dict[str, str]
    by_root: dict[str, SkillBundle]
    generation: int | None = None
    failures: frozenset[str] = frozenset()
    top_level: tuple[str, ...] = ()
    # Skills whose listing was deferred (by key), and the listings produced since this walk.
    deferred: dict[str, SkillLayout[str]] = field(default_factory=dict)
    listings: dict[str, FileListing] = field(default_factory=dict)


def _list_dir(folder: str, *, follow: bool = False, skip_prefix: str | None = None) -> list[Child[str]]:
    """The entries of a host folder; files carry their stat.

    Links are ``symlink`` children (an ``lstat``-based check, never a name check) unless
    ``follow``: then a link to a folder or file becomes that entry, with its real path as node.
    Names starting with ``skip_prefix`` (a writer's temporary files) are left out.
    """
    children: list[Child[str]] = []
    with os.scandir(folder) as it:
        for item in it:
            if skip_prefix is not None and item.name.startswith(skip_prefix):
                continue
            # A link is never a folder without following it, so the common folder case is
            # decided by one (cached d_type) check.
            if item.is_dir(follow_symlinks=False):
                children.append(Child(item.name, DIR, item.path))
            elif item.is_symlink():
                children.append(_followed(item) if follow else Child(item.name, SYMLINK, item.path))
            else:
                children.append(_file_child(item.name, item.path, item.stat(follow_symlinks=False)))
    return children


def _file_child(name: str, path: str, st: os.stat_result, link: bool = False) -> Child[str]:
    kind = FILE if stat.S_ISREG(st.st_mode) else OTHER
    token = f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    return Child(name, kind, path, st.st_size, stat.S_IMODE(st.st_mode), token, link)


def _followed(item: os.DirEntry[str]) -> Child[str]:
    target = os.path.realpath(item.path)
    try:
        st = os.stat(target)
    except OSError:
        return Child(item.name, SYMLINK, item.path)
    if stat.S_ISDIR(st.st_mode):
        return Child(item.name, DIR, target, link=True)
    return _file_child(item.name, target, st, link=True)


def read_host_file(path: str) -> bytes:
    """The bytes of a host file (``read`` callback of a host walk)."""
    with open(path, "rb") as handle:
        return handle.read()


def discover_host(
    base: Path,
    *,
    follow: bool = False,
    skip_prefix: str | None = None,
    by_folder: bool = True,
    defer: bool = False,
    look_for: tuple[str, ...] = (),
) -> Discovery[str]:
    """Discover the skills below a host folder with the shared rules (see ``repositories.discovery``).

    ``follow`` follows links (for trusted folders only); nodes are then real paths; ``by_folder``
    keeps one skill per folder name, ``defer`` / ``look_for`` leave skills' folders unlisted
    (see ``discover``). Raises ``OSError`` when ``base`` itself cannot be listed.
    """
    root = os.path.realpath(base) if follow else str(base)
    return discover(
        root,
        functools.partial(_list_dir, follow=follow, skip_prefix=skip_prefix),
        root_name=base.name,
        read=read_host_file,
        follow_links=follow,
        by_folder=by_folder,
        defer=defer,
        look_for=look_for,
    )


def _find(base: Path) -> tuple[list[SkillLayout[str]], list[str]]:
    found = discover_host(base)
    return found.skills, found.problems


def _discover(base: Path, rules: _Rules) -> Discovery[str]:
    """The skills below ``base``; when links are not followed, ``base`` being a link is refused
    too (its real path must be where it stands)."""
    if not rules.follow_links and base.is_symlink():
        return Discovery(
            skills=[], problems=[f"symlink skipped: {base.name} (this folder is a link; links are not followed here)"]
        )
    return discover_host(
        base,
        follow=rules.follow_links,
        skip_prefix=_TEMPORARY,
        by_folder=not rules.nested,
        defer=rules.lazy_files,
        look_for=rules.look_for,
    )


def _complete(layout: SkillLayout[str], rules: _Rules) -> tuple[SkillLayout[str] | None, list[str]]:
    """The whole listing of a skill whose folders a lazy walk deferred (see ``complete_layout``)."""
    list_dir = functools.partial(_list_dir, follow=rules.follow_links, skip_prefix=_TEMPORARY)
    return complete_layout(layout, list_dir, read=read_host_file, follow_links=rules.follow_links)


def _listing(layout: SkillLayout[str]) -> tuple[BundleFile, ...]:
    return tuple(BundleFile(path=layout.relative(e), size=e.size, mode=e.mode) for e in layout.files)


def _bundle(layout: SkillLayout[str], digest: str, skill_md: bytes, location: str, rules: _Rules) -> SkillBundle:
    return SkillBundle(
        folder=layout.folder,
        skill_md=skill_md,
        skill_md_name=layout.skill_md_name,
        files=_listing(layout),
        location=location,
        digest=digest,
        path=rules.key(layout) if rules.nested else "",
        link=layout.node if layout.link else None,
        listed=layout.listed,
    )


def scan_folder(base: Path, previous: dict[str, SkillBundle], rules: _Rules = _Rules()) -> FolderScan:
    """Walk ``base`` once, re-reading SKILL.md only for skills whose entries changed.

    A SKILL.md that cannot be read costs only its own skill (reported in the problems)."""
    if not base.is_dir():
        if rules.optional:
            return _assemble([], Discovery(skills=[], problems=[]), {}, rules)
        raise RepositoryUnavailable(f"cannot read skill directory {str(base)!r}: it is not a folder")
    try:
        found = _discover(base, rules)
    except OSError as exc:
        raise RepositoryUnavailable(f"cannot read skill directory {str(base)!r}: {exc}") from exc
    by_root: dict[str, SkillBundle] = {}
    for layout in found.skills:
        digest = layout.digest()
        old = previous.get(layout.root)
        if old is not None and old.digest == digest:
            by_root[layout.root] = old
            continue
        try:
            by_root[layout.root] = _bundle(layout, digest, read_host_file(layout.main.node), layout.node, rules)
        except OSError as exc:  # one unreadable SKILL.md costs its own skill (or keeps its last read)
            shown = f"{base.name}/{layout.main.path}" if rules.nested else layout.main.path  # a layer names its folder
            problem = f"cannot read {shown}, skill skipped: {exc.strerror or exc}"
            found.problems.append(problem)
            found.failures |= {problem}
            if old is not None:
                by_root[layout.root] = old
    return _assemble([layout for layout in found.skills if layout.root in by_root], found, by_root, rules)


def _assemble(
    layouts: list[SkillLayout[str]],
    found: Discovery[str],
    by_root: dict[str, SkillBundle],
    rules: _Rules,
    generation: int | None = None,
) -> FolderScan:
    bundles = tuple(by_root[layout.root] for layout in layouts)
    deferred = {rules.key(layout): layout for layout in layouts if not layout.listed}
    problems = sorted(found.problems)
    listed = "".join([f"{bundle.location}\0{bundle.digest}\n" for bundle in bundles])
    token = hashlib.sha256(listed.encode())
    token.update("\n".join([*problems, "", *found.top_level]).encode())
    return FolderScan(
        version=token.hexdigest(),
        bundles=bundles,
        problems=tuple(problems),
        roots={rules.key(layout): layout.node for layout in layouts},
        by_root=by_root,
        generation=generation,
        failures=frozenset(found.failures),
        top_level=found.top_level,
        deferred=deferred,
    )


def read_below(folder_path: str, paths: tuple[str, ...]) -> dict[str, bytes]:
    """Read ``paths`` inside the host folder ``folder_path``, refusing any path that crosses a
    symlink (``UnsafePath``) or does not exist (``BundleNotFound``).

    The folder is opened once and each path walked from it one component at a time with
    ``O_NOFOLLOW`` (``openat``), so no link is followed and nothing outside is reached."""
    data: dict[str, bytes] = {}
    root = os.open(os.path.realpath(folder_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for path in paths:
            with _open_at(root, folder_path, path) as handle:
                data[path] = handle.read()
    finally:
        os.close(root)
    return data


def _open_below(folder_path: str, path: str) -> BinaryIO:
    """``path`` inside ``folder_path`` opened for reading, refusing any path that crosses a symlink."""
    root = os.open(os.path.realpath(folder_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _open_at(root, folder_path, path)
    finally:
        os.close(root)


def _open_at(root: int, folder_path: str, path: str) -> BinaryIO:
    """``path`` below the open folder ``root``, walked with ``O_NOFOLLOW`` component by component."""
    if has_dot_segment(path):
        raise UnsafePath(f"unsafe path refused: {path!r} is not a plain relative path in {folder_path!r}")
    parts = path.split("/")
    opened: list[int] = []
    current = root
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            # O_NONBLOCK: a FIFO planted as a file must not hang the read (it is refused below).
            flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                current = os.open(part, flags, dir_fd=current)
            except OSError as exc:
                if exc.errno == errno.ELOOP or _is_link(part, current):
                    raise UnsafePath(f"unsafe path refused: {path!r} crosses a symlink in {folder_path!r}") from None
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
                    raise BundleNotFound(f"{folder_path}/{path} does not exist") from exc
                raise
            opened.append(current)
        if not stat.S_ISREG(os.fstat(current).st_mode):
            raise BundleNotFound(f"{folder_path}/{path} does not exist")
        handle = os.fdopen(current, "rb")
        opened.pop()
        return handle
    finally:
        for fd in opened:
            os.close(fd)


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


class DirectoryRepository(SkillRepository):
    """Skill folders below a folder, found with the shared discovery rules (README, "Discovery
    rules"): dot-folders searched, links reported and never followed, ignore files applied.

    On the host (the default), ``version()`` walks the tree once in a worker thread (one
    ``scandir`` per folder, one ``lstat`` per file, no file opened) and a snapshot re-reads the
    SKILL.md of changed skills only. A missing folder is an error (``RepositoryUnavailable``).
    With ``writable=True``, ``save`` writes a complete folder next to the target and swaps it in
    by rename; files keep their given modes.

    With ``filesystem=`` (a ``filesystems.AbstractFilesystem``), ``path`` is a path inside that
    filesystem and the tree is read with one batched ``walk()`` plus one ``read_many()`` of the
    changed SKILL.md files; when the filesystem has a cheap ``generation()`` counter an unchanged
    one skips the walk. Symlinks are whatever the filesystem exposes (it refuses escaping ones).
    This variant is read-only. Slug: ``dir-<folder name>``.

    The options that make the same class serve the harness's own skill layers (global folder,
    workspace, a user's area): ``follow_links`` follows links to skill folders (never links
    inside one), deduplicated by real path — only for folders the operator controls; without it
    the folder itself being a link is refused too. ``nested`` keeps skills of one folder name in
    different nested folders apart (each bundle carries its relative ``path``, which names it in
    reads). ``optional`` makes a missing folder an empty market instead of an error.

    ``lazy_files`` (on the host) makes a walk list only each skill folder's top level, plus the
    folders holding a ``look_for`` path (relative to the skill folder): a skill with other
    folders gets a bundle with ``listed=False``, and :meth:`list_files` walks it on first use,
    in a worker thread, cached until the next walk of the tree (the same freshness as the
    bundles). A skill's digest then covers its top level and SKILL.md, not the files in its
    folders: for folders read in place (the harness's workspace and users' areas), not for
    markets that are staged by digest.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = "",
        *,
        filesystem: AbstractFilesystem | None = None,
        source: str | None = None,
        writable: bool = False,
        follow_links: bool = False,
        nested: bool = False,
        optional: bool = False,
        lazy_files: bool = False,
        look_for: Sequence[str] = (),
    ) -> None:
        self.filesystem = filesystem
        self._rules = _Rules(
            follow_links=follow_links,
            nested=nested,
            optional=optional,
            lazy_files=lazy_files and filesystem is None,  # a filesystem's batched walk lists everything at once
            look_for=tuple(look_for),
        )
        if filesystem is None:
            self.path = Path(path).expanduser().absolute()
            name = self.path.name
        else:
            if writable:
                raise InvalidRepositoryConfig("a DirectoryRepository over a filesystem is read-only")
            self.fs_path = normalize_path(os.fspath(path))
            self.path = Path(self.fs_path)
            name = self.fs_path.rsplit("/", 1)[-1] or "root"
        super().__init__(source=source or make_source("dir", name), writable=writable)
        self._last: FolderScan | None = None

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a ``dir:`` URL names: ``dir:/path``, ``dir:///path`` or a bare path, with the
        fragment options ``writable`` and ``source``. Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        path = base[4:] if base.startswith("dir:") else base
        if path.startswith("//"):
            path = urllib.parse.unquote(urllib.parse.urlsplit("file:" + path).path)
        if not path:
            raise InvalidRepositoryConfig(f"no folder in {redact_url(url)!r}")
        repo = cls(path, source=options.pop("source", None), writable=flag(options, "writable", False))
        no_more(url, options)
        return repo

    @property
    def watch_root(self) -> Path | None:
        """The market's host folder (``None`` when it is read through a filesystem)."""
        return self.path if self.filesystem is None else None

    async def _scan(self) -> FolderScan:
        previous = self._last.by_root if self._last is not None else {}
        if self.filesystem is None and self._rules.optional and not os.path.lexists(self.path):
            # A missing optional folder (a user without skills of their own) is one lstat: not
            # worth a worker-thread hop on the user's first turn.
            scan = scan_folder(self.path, previous, self._rules)
        elif self.filesystem is None:
            scan = await anyio.to_thread.run_sync(scan_folder, self.path, previous, self._rules)
        else:
            scan = await self._scan_filesystem(self.filesystem, previous)
        self._last = scan
        return scan

    async def _scan_filesystem(self, fs: AbstractFilesystem, previous: dict[str, SkillBundle]) -> FolderScan:
        where = f"{type(fs).__name__}:{self.fs_path or '/'}"
        try:
            generation = await fs.generation()
            if generation is not None and self._last is not None and self._last.generation == generation:
                return self._last
            stats = await fs.walk(self.fs_path)
            prefix = f"{self.fs_path}/" if self.fs_path else ""
            ignore_files = await fs.read_many([st.path for st in stats if st.name in IGNORE_FILES])
            list_dir = tree_from_paths(
                (
                    st.path[len(prefix) :],
                    Child(st.name, FILE, st.path, st.size, st.mode, st.version or f"{st.mtime}"),
                )
                for st in stats
            )
            found = discover(
                "",
                list_dir,
                root_name=self.path.name or "root",
                read=ignore_files.__getitem__,
                by_folder=not self._rules.nested,
            )
            digests = {layout.root: layout.digest() for layout in found.skills}
            changed = [
                layout
                for layout in found.skills
                if (old := previous.get(layout.root)) is None or old.digest != digests[layout.root]
            ]
            texts = await fs.read_many([layout.main.node for layout in changed])
        except (OSError, FilesystemError) as exc:
            raise RepositoryUnavailable(f"cannot read skill directory {where}: {exc}") from exc
        by_root: dict[str, SkillBundle] = {}
        for layout in found.skills:
            old = previous.get(layout.root)
            if old is not None and old.digest == digests[layout.root]:
                by_root[layout.root] = old
                continue
            text = texts.get(layout.main.node)
            if text is None:
                found.problems.append(f"{layout.main.node}: vanished while reading, skipped")
                continue
            folder_path = f"{prefix}{layout.root}" if layout.root else self.fs_path
            host = fs.host_path(folder_path)
            location = str(host) if host is not None else f"{type(fs).__name__}:{folder_path}"
            by_root[layout.root] = _bundle(layout, digests[layout.root], text, location, self._rules)
        kept = [layout for layout in found.skills if layout.root in by_root]
        return _assemble(kept, found, by_root, self._rules, generation)

    async def _version(self) -> str:
        return (await self._scan()).version

    async def _load(self, version: str) -> Snapshot:
        scan = self._last if self._last is not None and self._last.version == version else await self._scan()
        return Snapshot(
            version=scan.version,
            bundles=scan.bundles,
            problems=scan.problems,
            failures=scan.failures,
            top_level=scan.top_level,
        )

    def _invalidate(self) -> None:
        self._last = None

    async def _list_files(self, key: str) -> FileListing | None:
        scan = self._last if self._last is not None else await self._scan()
        layout = scan.deferred.get(key)
        if layout is None:
            return None
        cached = scan.listings.get(key)
        if cached is not None:
            return cached
        done, problems = await anyio.to_thread.run_sync(_complete, layout, self._rules)
        for problem in problems:
            log.warning("%s: %s", self.source, problem)
        if done is None:
            raise RepositoryUnavailable(f"{self.source}: {problems[-1]}")
        scan.listings[key] = listing = FileListing(files=_listing(done), digest=done.digest())
        return listing

    async def _folder_path(self, folder: str) -> str:
        scan = self._last if self._last is not None else await self._scan()
        found = scan.roots.get(folder)
        if found is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r} in {str(self.path)!r}")
        return found

    @property
    def batch_reads(self) -> bool:  # type: ignore[override]  # a property: only on the host
        """On the host, :meth:`read_files_batch` reads every folder in one worker-thread hop."""
        return self.filesystem is None

    async def _read_files_batch(
        self, requests: list[tuple[str, tuple[str, ...]]]
    ) -> list[dict[str, bytes] | Exception]:
        if self.filesystem is not None:
            return await super()._read_files_batch(requests)
        scan = self._last if self._last is not None else await self._scan()

        def read_all() -> list[dict[str, bytes] | Exception]:
            answers: list[dict[str, bytes] | Exception] = []
            for folder, paths in requests:
                found = scan.roots.get(folder)
                try:
                    if found is None:
                        raise BundleNotFound(f"{self.source}: no skill folder {folder!r} in {str(self.path)!r}")
                    answers.append(read_below(found, paths))
                except Exception as exc:  # one unreadable skill costs only itself
                    answers.append(exc)
            return answers

        return await anyio.to_thread.run_sync(read_all)

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        folder_path = await self._folder_path(folder)
        if self.filesystem is None:
            return await anyio.to_thread.run_sync(read_below, folder_path, paths)
        prefix = "/".join(p for p in (self.fs_path, folder_path) if p)
        full = {path: f"{prefix}/{path}" for path in paths}
        try:
            data = await self.filesystem.read_many(list(full.values()))
        except PermissionError as exc:
            raise UnsafePath(f"unsafe path refused in {folder!r}: {exc}") from exc
        except (OSError, FilesystemError) as exc:
            raise RepositoryUnavailable(f"cannot read {folder!r}: {exc}") from exc
        missing = [path for path, name in full.items() if name not in data]
        if missing:
            raise BundleNotFound(f"{self.source}: {folder}/{missing[0]} does not exist")
        return {path: data[name] for path, name in full.items()}

    async def _read_chunks(self, folder: str, path: str, chunk_size: int) -> AsyncIterator[bytes]:
        if self.filesystem is not None:
            async for chunk in super()._read_chunks(folder, path, chunk_size):
                yield chunk
            return
        folder_path = await self._folder_path(folder)
        handle = await anyio.to_thread.run_sync(_open_below, folder_path, path)
        try:
            while chunk := await anyio.to_thread.run_sync(handle.read, chunk_size):
                yield chunk
        finally:
            handle.close()

    async def _save(self, bundle: SkillBundleContents) -> None:
        scan = self._last if self._last is not None else await self._scan()
        target = scan.roots.get(bundle.folder, str(self.path / bundle.folder))
        await anyio.to_thread.run_sync(_write_folder, Path(target), bundle)
        self._last = None

    async def _delete(self, folder: str) -> None:
        target = await self._folder_path(folder)
        await anyio.to_thread.run_sync(_remove_folder, Path(target))
        self._last = None


def _write_folder(target: Path, bundle: SkillBundleContents) -> None:
    """Write ``bundle`` into a hidden sibling of ``target`` and swap it in by rename."""
    import uuid

    staging = target.parent / f".{target.name}.saving-{uuid.uuid4().hex}"
    try:
        staging.mkdir(parents=True)
        (staging / bundle.skill_md_name).write_bytes(bundle.skill_md)
        for item in bundle.files:
            path = staging / item.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(item.data)
            os.chmod(path, item.mode)
        if target.exists():
            _remove_folder(target)
        os.replace(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise RepositoryUnavailable(f"cannot save skill {bundle.folder!r} to {str(target)!r}: {exc}") from exc


def _remove_folder(target: Path) -> None:
    """Move ``target`` aside (atomic disappearance), then delete it."""
    import uuid

    trash = target.parent / f".{target.name}.deleting-{uuid.uuid4().hex}"
    try:
        os.replace(target, trash)
    except OSError as exc:
        raise RepositoryUnavailable(f"cannot delete skill folder {str(target)!r}: {exc}") from exc
    shutil.rmtree(trash, ignore_errors=True)


def _read_folder(path: Path) -> tuple[SkillBundleContents, tuple[str, ...]]:
    layouts, problems = _find(path)
    layout = next((item for item in layouts if item.root == ""), None)
    if layout is None:
        raise InvalidBundle(f"{str(path)!r} is not a skill folder: it has no SKILL.md")
    files = tuple(
        FileContents(path=layout.relative(e), data=Path(e.node).read_bytes(), mode=e.mode) for e in layout.files
    )
    main = Path(layout.main.node).read_bytes()
    contents = SkillBundleContents(folder=layout.folder, skill_md=main, skill_md_name=layout.skill_md_name, files=files)
    return contents, tuple(problems)


async def read_skill_folder(path: str | os.PathLike[str]) -> tuple[SkillBundleContents, tuple[str, ...]]:
    """Read a host skill folder whole, for ``save()`` (e.g. ``harness market publish``).

    Returns the bundle and the problems met (skipped symlinks and special files); VCS metadata,
    ``node_modules``/``__pycache__`` and what a ``.gitignore``/``.ignore`` excludes are left out. Raises ``InvalidBundle`` when the folder has no SKILL.md or
    its name is not a valid skill folder name, ``FileNotFoundError`` when it does not exist.
    """
    folder = Path(path).expanduser().absolute()
    if not folder.is_dir():
        raise FileNotFoundError(f"skill folder {str(folder)!r} does not exist")
    return await anyio.to_thread.run_sync(_read_folder, folder)

"""Skills shipped inside installed Python packages (the "classpath" of Python)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import pathlib
import stat
import zipfile
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Any, Self

import anyio

from repositories._urls import no_more, split_fragment
from repositories.base import BundleFile, SkillBundle, SkillRepository, Snapshot
from repositories.directory import read_below, scan_folder
from repositories.discovery import DIR, FILE, OTHER, SYMLINK, Child, SkillLayout, find_skills
from repositories.errors import (
    BundleNotFound,
    InvalidRepositoryConfig,
    RepositoryError,
    RepositoryUnavailable,
    UnsafePath,
)
from repositories.sources import make_source

__all__ = ["ENTRY_POINT_GROUP", "EntryPointRepository", "PackageRepository", "discover_skill_packages"]

ENTRY_POINT_GROUP = "harness.skills"
"""Entry-point group through which installed packages advertise skill folders.

An entry point's value is ``"<import package>:<folder>"`` (or just ``"<import package>"`` for the
folder ``skills``), e.g. ``acme = "acme_skills:skills"`` in ``[project.entry-points."harness.skills"]``.
"""


@dataclass(frozen=True, slots=True)
class _PackageScan:
    snapshot: Snapshot
    nodes: dict[str, Traversable]


def _list_zip(node: Any) -> list[Child[Any]]:
    """Children of a ``zipfile.Path`` folder, with size, mode and CRC from the archive index."""
    children: list[Child[Any]] = []
    for child in node.iterdir():
        if child.is_dir():
            children.append(Child(child.name, DIR, child))
            continue
        info = child.root.getinfo(child.at)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            children.append(Child(child.name, SYMLINK, child))
        elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            # Zips written without file-type bits (zipfile.writestr's default) hold files.
            children.append(Child(child.name, OTHER, child))
        else:
            perms = stat.S_IMODE(mode) or 0o644
            children.append(Child(child.name, FILE, child, info.file_size, perms, f"{info.CRC:08x}"))
    return children


class PackageRepository(SkillRepository):
    """Skill folders inside an installed package: ``PackageRepository("acme_skills", "skills")``.

    Reads through ``importlib.resources`` in a worker thread, so it works from a regular or
    editable install (a folder on disk, walked like ``DirectoryRepository``) and from a zip or
    wheel on ``sys.path`` (modes and sizes from the archive index). Installed packages do not
    change under a running process, so ``version()`` is the content token of the first read and
    costs nothing afterwards; ``refresh()`` re-reads (e.g. after editing an editable install).
    An unimportable package or missing folder is ``RepositoryUnavailable``. Read-only.
    Slug: ``pkg-<package>``.
    """

    def __init__(self, package: str, folder: str = "skills", *, source: str | None = None) -> None:
        if not package or any(not part.isidentifier() for part in package.split(".")):
            raise InvalidRepositoryConfig(f"invalid package name {package!r}")
        self.package = package
        self.folder = folder.strip("/")
        super().__init__(source=source or make_source("pkg", package))
        self._scan: _PackageScan | None = None
        # Archives opened for zip-imported packages, closed with the repository (closing one on
        # refresh could cut a concurrent read short; leaving them to the garbage collector makes
        # it finalise their file objects unclosed).
        self._archives: list[zipfile.ZipFile] = []

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a ``pkg:package[/folder]`` URL names (folder ``skills`` by default; fragment
        option ``source``). Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        package, _, folder = base[4:].partition("/")
        repo = cls(package, folder or "skills", source=options.pop("source", None))
        no_more(url, options)
        return repo

    def _root(self) -> Traversable:
        try:
            root = importlib.resources.files(self.package)
        except (ImportError, TypeError) as exc:
            raise RepositoryUnavailable(f"cannot import package {self.package!r}: {exc}") from exc
        return root.joinpath(*self.folder.split("/")) if self.folder else root

    def _read_all(self) -> _PackageScan:
        root = self._root()
        if not root.is_dir():
            raise RepositoryUnavailable(f"package {self.package!r} has no folder {self.folder!r}")
        if isinstance(root, pathlib.Path):
            scan = scan_folder(root, {})
            snapshot = Snapshot(version=scan.version, bundles=scan.bundles, problems=scan.problems)
            return _PackageScan(snapshot=snapshot, nodes={k: pathlib.Path(v) for k, v in scan.roots.items()})
        if isinstance(getattr(root, "root", None), zipfile.ZipFile):
            self._archives.append(root.root)  # type: ignore[attr-defined]
        try:
            layouts, problems = find_skills(
                root, _list_zip, root_name=self.folder.rsplit("/", 1)[-1], read=lambda node: node.read_bytes()
            )
            bundles = tuple(self._bundle(layout) for layout in layouts)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise RepositoryUnavailable(f"cannot read package {self.package!r}: {exc}") from exc
        token = hashlib.sha256("\n".join(f"{b.folder}\0{b.digest}" for b in bundles).encode()).hexdigest()
        snapshot = Snapshot(version=token, bundles=bundles, problems=tuple(problems))
        return _PackageScan(snapshot=snapshot, nodes={layout.folder: layout.node for layout in layouts})

    def _bundle(self, layout: SkillLayout[Any]) -> SkillBundle:
        path = "/".join(p for p in (self.folder, layout.root) if p)
        return SkillBundle(
            folder=layout.folder,
            skill_md=layout.main.node.read_bytes(),
            skill_md_name=layout.skill_md_name,
            files=tuple(BundleFile(path=layout.relative(e), size=e.size, mode=e.mode) for e in layout.files),
            location=f"pkg:{self.package}/{path}",
            digest=layout.digest(),
        )

    async def _current(self) -> _PackageScan:
        if self._scan is None:
            self._scan = await anyio.to_thread.run_sync(self._read_all)
        return self._scan

    async def _version(self) -> str:
        return (await self._current()).snapshot.version

    async def _load(self, version: str) -> Snapshot:
        return (await self._current()).snapshot

    def _invalidate(self) -> None:
        self._scan = None

    async def _aclose(self) -> None:
        archives, self._archives = self._archives, []
        for archive in archives:
            archive.close()

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        node = (await self._current()).nodes.get(folder)
        if node is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r}")
        if isinstance(node, pathlib.Path):
            return await anyio.to_thread.run_sync(read_below, str(node), paths)
        return await anyio.to_thread.run_sync(_read_zip, node, paths)


def _read_zip(node: Any, paths: tuple[str, ...]) -> dict[str, bytes]:
    data: dict[str, bytes] = {}
    for path in paths:
        target = node.joinpath(*path.split("/"))
        if not target.is_file():
            raise BundleNotFound(f"{node}/{path} does not exist")
        if stat.S_ISLNK(target.root.getinfo(target.at).external_attr >> 16):
            raise UnsafePath(f"unsafe path refused: {path!r} is a symlink")
        data[path] = target.read_bytes()
    return data


def discover_skill_packages(group: str = ENTRY_POINT_GROUP) -> list[PackageRepository]:
    """One ``PackageRepository`` per entry point of ``group``, sorted by entry-point name.

    Each repository gets the slug ``pkg-<package>``; malformed entry points raise
    ``InvalidRepositoryConfig`` naming the distribution.
    """
    found: list[PackageRepository] = []
    for entry in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        package, _, folder = entry.value.partition(":")
        try:
            found.append(PackageRepository(package.strip(), folder.strip() or "skills"))
        except RepositoryError as exc:
            dist = entry.dist.name if entry.dist is not None else "?"
            raise InvalidRepositoryConfig(f"entry point {entry.name!r} of {dist}: {exc}") from exc
    return found


class EntryPointRepository(SkillRepository):
    """Every package advertising skills through an entry-point group, served as one market.

    Packages are found when the repository is created. A folder name offered by two packages is
    served from the first (by entry-point name) and reported in ``Snapshot.problems``; a package
    that cannot be read is reported and skipped. Slug: ``pkg-entrypoints``.
    """

    def __init__(self, group: str = ENTRY_POINT_GROUP, *, source: str | None = None) -> None:
        super().__init__(source=source or make_source("pkg", "entrypoints"))
        self.group = group
        self.packages = discover_skill_packages(group)
        self._owners: dict[str, PackageRepository] = {}

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market an ``entrypoints:<group>`` URL names (group ``harness.skills`` when empty;
        fragment option ``source``). Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        repo = cls(base.split(":", 1)[1] or ENTRY_POINT_GROUP, source=options.pop("source", None))
        no_more(url, options)
        return repo

    async def _version(self) -> str:
        tokens = []
        for package in self.packages:
            try:
                tokens.append(await package.version())
            except RepositoryError as exc:
                tokens.append(str(exc))
        return hashlib.sha256("\n".join(tokens).encode()).hexdigest()

    async def _load(self, version: str) -> Snapshot:
        owners: dict[str, PackageRepository] = {}
        bundles: dict[str, SkillBundle] = {}
        problems: list[str] = []
        for package in self.packages:
            try:
                snap = await package.snapshot()
            except RepositoryError as exc:
                problems.append(f"{package.source}: skipped: {exc}")
                continue
            problems.extend(f"{package.source}: {p}" for p in snap.problems)
            for bundle in snap.bundles:
                if bundle.folder in bundles:
                    problems.append(f"duplicate skill folder {bundle.folder!r}: {bundle.location} skipped")
                    continue
                bundles[bundle.folder] = bundle
                owners[bundle.folder] = package
        self._owners = owners
        return Snapshot(version=version, bundles=tuple(bundles[f] for f in sorted(bundles)), problems=tuple(problems))

    def _invalidate(self) -> None:
        for package in self.packages:
            package._invalidate()

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        if not self._owners:
            await self.snapshot()
        owner = self._owners.get(folder)
        if owner is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r}")
        return await owner.read_files(folder, paths)

    async def _aclose(self) -> None:
        for package in self.packages:
            await package.aclose()

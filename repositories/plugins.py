"""Skills from a Claude Code plugin marketplace (``.claude-plugin/marketplace.json``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import anyio

from filesystems import redact_url
from filesystems.paths import has_control, segment_problem
from repositories._urls import no_more, split_fragment
from repositories.base import SkillBundle, SkillRepository, Snapshot
from repositories.directory import DirectoryRepository
from repositories.discovery import normalise_file_path
from repositories.errors import (
    BundleNotFound,
    InvalidRepositoryConfig,
    RepositoryError,
    RepositoryUnavailable,
    UnsafePath,
)
from repositories.git import GitRepository, default_cache_dir
from repositories.sources import make_source, sub_source

if TYPE_CHECKING:
    from filesystems import ProgressCallback

__all__ = ["DEFAULT_PLUGIN_SCHEMES", "MARKETPLACE_FILES", "PluginMarketplaceRepository", "url_scheme"]

MARKETPLACE_FILES = (".claude-plugin/marketplace.json", ".agents/plugins/marketplace.json")
"""Where a marketplace lists its plugins, relative to its root; the first one present is read."""

_GITHUB = "https://github.com/{}.git"
#: The schemes plugin sources may use unless the operator allows others.
DEFAULT_PLUGIN_SCHEMES: tuple[str, ...] = ("https",)
_LOCAL = "file"  # file:// URLs and host paths
_URL_PREFIX = "claude-plugins+"
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_NAME = re.compile(r"[a-z][a-z0-9+.-]*")
_MAX_MANIFEST = 1 << 20  # a marketplace file larger than this is refused, not parsed


@dataclass(frozen=True, slots=True)
class _Plugin:
    """One skills folder of one plugin: local (``url`` empty) or in another git repository."""

    name: str
    path: str
    url: str = ""
    ref: str = ""
    optional: bool = False


@dataclass(frozen=True, slots=True)
class _Manifest:
    token: str
    folders: tuple[_Plugin, ...]
    problems: tuple[str, ...]


def _relative(path: object, what: str) -> str:
    """A relative POSIX path inside the marketplace or plugin ('' for its root); ``UnsafePath``
    for absolute paths, ``..``, backslashes and control characters."""
    if not isinstance(path, str):
        raise UnsafePath(f"{what} must be a string path, not {type(path).__name__}")
    stripped = path.strip()
    if stripped in {"", ".", "./"}:
        return ""
    try:
        return normalise_file_path(stripped).rstrip("/")
    except UnsafePath:
        raise UnsafePath(f"{what} {path!r} refused: use a relative path inside the marketplace, without '..'") from None


def _join(*parts: str) -> str:
    return "/".join(part for part in parts if part)


def _skill_folders(name: str, root: str, entry: dict[str, Any], url: str = "", ref: str = "") -> list[_Plugin]:
    """The skills folders of one plugin: its ``skills`` list, else its ``skills/`` folder."""
    listed = entry.get("skills")
    if listed is None:
        return [_Plugin(name, _join(root, "skills"), url, ref, optional=True)]
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list):
        raise UnsafePath(f"plugin {name!r}: 'skills' must be a list of paths")
    return [_Plugin(name, _join(root, _relative(item, f"plugin {name!r} skills entry")), url, ref) for item in listed]


def _remote(name: str, source: dict[str, Any]) -> tuple[str, str, str]:
    """URL, ref and plugin root inside that repository of a ``github``/``url``/``git-subdir`` source."""
    kind = source.get("source")
    ref = source.get("ref") or ""
    if not isinstance(ref, str) or has_control(ref):
        raise UnsafePath(f"plugin {name!r}: 'ref' must be a branch name")
    if kind == "github":
        repo = source.get("repo")
        if not isinstance(repo, str) or repo.count("/") != 1 or any(map(segment_problem, repo.split("/"))):
            raise UnsafePath(f"plugin {name!r}: 'repo' must be 'owner/name', not {repo!r}")
        return _GITHUB.format(repo), ref, ""
    if kind in {"url", "git-subdir"}:
        url = source.get("url")
        if not isinstance(url, str) or not url or has_control(url):
            raise UnsafePath(f"plugin {name!r}: 'url' must be a git URL")
        root = _relative(source.get("path", ""), f"plugin {name!r} path") if kind == "git-subdir" else ""
        return url.removeprefix("git+"), ref, root
    raise UnsafePath(f"plugin {name!r}: source type {kind!r} is not served (use a path, github, url or git-subdir)")


def url_scheme(url: str) -> str:
    """The transport git would use for ``url``: its scheme (``https``, ``ssh``, ``file``, ...),
    the transport of git's ``<transport>::<address>`` form (``ext``), ``ssh`` for the scp-like
    ``host:path`` form, and ``file`` for a host path (``/srv/repo``, ``../repo``, ``~/repo``)."""
    url = url.removeprefix("git+")
    found = _URL_SCHEME.match(url)
    if found:
        return found.group(1).lower()
    if "::" in url:
        return url.split("::", 1)[0].lower()
    head = url.split("/", 1)[0]
    return "ssh" if ":" in head and len(head.split(":", 1)[0]) > 1 else _LOCAL


def _parse(data: bytes, where: str) -> _Manifest:
    """The skills folders a marketplace.json lists; a malformed file is ``RepositoryUnavailable``,
    a bad plugin entry only a problem."""
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RepositoryUnavailable(f"{where} is not valid JSON: {exc}; fix the file") from None
    plugins = manifest.get("plugins") if isinstance(manifest, dict) else None
    if not isinstance(plugins, list):
        raise RepositoryUnavailable(f"{where} has no 'plugins' list; fix the file")
    metadata = manifest.get("metadata")
    plugin_root = metadata.get("pluginRoot", "") if isinstance(metadata, dict) else ""
    folders: list[_Plugin] = []
    problems: list[str] = []
    for index, entry in enumerate(plugins):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or has_control(name) or "/" in name:
            problems.append(f"{where}: plugin #{index + 1} has no valid 'name', skipped")
            continue
        assert isinstance(entry, dict)
        source = entry.get("source")
        try:
            if isinstance(source, str):
                base = _relative(plugin_root, "metadata.pluginRoot") if not source.startswith("./") else ""
                folders += _skill_folders(name, _join(base, _relative(source, f"plugin {name!r} source")), entry)
            elif isinstance(source, dict):
                url, ref, root = _remote(name, source)
                folders += _skill_folders(name, root, entry, url, ref)
            else:
                raise UnsafePath(f"plugin {name!r} has no source")
        except UnsafePath as exc:
            problems.append(f"{where}: {exc}; plugin skipped")
    return _Manifest(hashlib.sha256(data).hexdigest(), tuple(folders), tuple(problems))


class PluginMarketplaceRepository(SkillRepository):
    """The skills of the plugins a Claude Code marketplace lists, as one read-only market.

    ``root`` is the marketplace: a ``DirectoryRepository`` (its host folder) or a
    ``GitRepository`` (its repository and branch). The first of :data:`MARKETPLACE_FILES` found
    there is read; a malformed one is ``RepositoryUnavailable`` naming the file (the last good
    snapshot keeps being served). Each plugin contributes the skills of its ``skills/`` folder,
    or of the folders its ``skills`` list names (relative to the plugin root):

    - a ``./path`` source (or a bare name below ``metadata.pluginRoot``) is a folder of the
      marketplace itself, read with a ``DirectoryRepository`` or a ``GitRepository`` that shares
      the marketplace's clone;
    - ``github`` / ``url`` / ``git-subdir`` sources are other git repositories (``ref`` is the
      branch; ``sha`` pins are not applied), cloned into ``cache_dir``;
    - ``npm`` and other sources, ``..`` or absolute paths, links on the way to a folder, and
      plugins that cannot be reached are problems in ``Snapshot.problems``, never errors; the
      other plugins are served.

    A marketplace file names sources, but only the operator decides which places the harness
    fetches from: a ``github`` / ``url`` / ``git-subdir`` source is cloned only when its scheme
    (:func:`url_scheme`) is in ``allowed_schemes`` (default :data:`DEFAULT_PLUGIN_SCHEMES`,
    https only). ``file`` there allows ``file://`` URLs and host paths, and only for a
    marketplace that is itself on this host (a folder, or git over a ``file://`` URL or path):
    :class:`InvalidRepositoryConfig` otherwise. A refused source is a problem naming the plugin
    and the source; the other plugins are served.

    Slug: ``plugins-<owner>-<repo>`` (git) or ``plugins-<folder>`` (directory). Each skill's
    bundle names its plugin (``SkillBundle.sub_source``), so the harness gives it the source
    ``<slug>.<plugin>`` and the skill id ``<name>_<slug>.<plugin>``. Skills keep their folder
    names, unique in the market: when two plugins offer a skill folder of one name, the plugin
    listed first in the marketplace file wins, and the later one's skill is skipped with a
    problem naming both plugins and both slugs.
    """

    def __init__(
        self,
        root: DirectoryRepository | GitRepository,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        source: str | None = None,
        allowed_schemes: Collection[str] = DEFAULT_PLUGIN_SCHEMES,
    ) -> None:
        if isinstance(root, DirectoryRepository) and root.filesystem is not None:
            raise InvalidRepositoryConfig("a plugin marketplace is read from a host folder or a git repository")
        self.allowed_schemes = _check_schemes(root, allowed_schemes)
        if isinstance(root, GitRepository):
            default = root.source.removeprefix("git-")
            self._cache = Path(cache_dir) if cache_dir is not None else root.clone_path.parent
        else:
            default = root.path.name
            self._cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        super().__init__(source=source or make_source("plugins", default))
        self.root = root
        self._manifest: _Manifest | None = None
        self._manifest_key: str | None = None
        self._children: dict[_Plugin, SkillRepository] = {}
        self._owners: dict[str, SkillRepository] = {}

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The marketplace a ``claude-plugins+dir:`` or ``claude-plugins+git+<transport>://`` URL
        names: the inner URL's options (see ``DirectoryRepository.from_url`` and
        ``GitRepository.from_url``) plus ``source`` and ``allowed_schemes`` (comma-separated); a
        folder's ``cache_dir`` is where remote plugins are cloned, a git marketplace's is its
        clone's. Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url.removeprefix(_URL_PREFIX))
        source = options.pop("source", None)
        schemes = options.pop("allowed_schemes", None)
        allowed = tuple(filter(None, schemes.split(","))) if schemes is not None else DEFAULT_PLUGIN_SCHEMES
        root: DirectoryRepository | GitRepository
        if base.startswith("git+"):
            root = GitRepository.from_url(base + "#" + urllib.parse.urlencode(options))
            cache_dir = None
        else:
            cache_dir = options.pop("cache_dir", None) or None
            no_more(url, options)
            root = DirectoryRepository.from_url(base)
        return cls(root, cache_dir=cache_dir, source=source, allowed_schemes=allowed)

    @property
    def progress(self) -> ProgressCallback | None:
        """The marketplace's and its plugins' markets' progress callback: their clones are its long work."""
        return self.root.progress

    @progress.setter
    def progress(self, callback: ProgressCallback | None) -> None:
        self.root.progress = callback
        for child in self._children.values():
            child.progress = callback

    @property
    def _where(self) -> str:
        root = self.root
        return root.shown_url if isinstance(root, GitRepository) else str(root.path)

    # The marketplace file.

    async def _read_manifest(self) -> _Manifest:
        """The parsed marketplace file, re-parsed only when its commit (git) or stat (folder) moved."""
        if isinstance(self.root, GitRepository):
            key = await self.root.version()
        else:
            key = await anyio.to_thread.run_sync(self._stat_key)
        if self._manifest is not None and key == self._manifest_key:
            return self._manifest
        name, data = await self._read_first()
        if len(data) > _MAX_MANIFEST:
            raise RepositoryUnavailable(f"{self._where}/{name} is larger than {_MAX_MANIFEST} bytes; not read")
        self._manifest = _parse(data, f"{self._where}/{name}")
        self._manifest_key = key
        return self._manifest

    def _stat_key(self) -> str:
        assert isinstance(self.root, DirectoryRepository)
        stats = []
        for name in MARKETPLACE_FILES:
            try:
                st = os.lstat(self.root.path / name)
            except OSError:
                stats.append("-")
            else:
                stats.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
        return "/".join(stats)

    async def _read_first(self) -> tuple[str, bytes]:
        for name in MARKETPLACE_FILES:
            try:
                if isinstance(self.root, GitRepository):
                    return name, await self.root.read_path(name)
                return name, await anyio.to_thread.run_sync(self._read_host, name)
            except BundleNotFound:
                continue
            except UnsafePath as exc:
                raise RepositoryUnavailable(f"{self._where}/{name}: {exc}") from exc
        raise RepositoryUnavailable(f"{self._where} has no {' or '.join(MARKETPLACE_FILES)}")

    def _read_host(self, name: str) -> bytes:
        path = self._local_path(name)
        if path is None:
            raise UnsafePath(f"{name} crosses a link; links are not followed")
        try:
            with open(path, "rb", opener=_no_follow) as handle:
                return handle.read(_MAX_MANIFEST + 1)
        except FileNotFoundError as exc:
            raise BundleNotFound(str(exc)) from exc
        except OSError as exc:
            raise RepositoryUnavailable(f"cannot read {path}: {exc}") from exc

    def _local_path(self, relative: str) -> Path | None:
        """``relative`` below the marketplace folder, or ``None`` when a link lies on the way."""
        assert isinstance(self.root, DirectoryRepository)
        path = self.root.path
        for part in relative.split("/") if relative else ():
            if path.is_symlink():
                return None
            path = path / part
        return None if path.is_symlink() else path

    # The plugins' markets.

    def _child(self, plugin: _Plugin) -> SkillRepository | str:
        """The market of one skills folder, or why it is refused."""
        if plugin.url:
            scheme = url_scheme(plugin.url)
            if scheme not in self.allowed_schemes:
                return (
                    f"plugin {plugin.name!r}: source {redact_url(plugin.url)!r} refused: its scheme {scheme!r} is "
                    f"not one the operator allows for plugin sources ({', '.join(sorted(self.allowed_schemes))}); "
                    "plugin skipped (allowed_schemes)"
                )
            return GitRepository(
                plugin.url, branch=plugin.ref or None, subdir=plugin.path or None, cache_dir=self._cache
            )
        root = self.root
        if isinstance(root, GitRepository):
            # The marketplace's own source and cache, so both read one shared clone.
            return GitRepository(
                root.url,
                branch=root.branch,
                subdir=plugin.path or None,
                cache_dir=self._cache,
                check_interval=root.check_interval,
                shallow=root.shallow,
                source=root.source,
            )
        path = self._local_path(plugin.path)
        if path is None:
            return f"plugin {plugin.name!r}: {plugin.path or '.'} crosses a link; links are not followed"
        return DirectoryRepository(path, optional=plugin.optional)

    async def _sync_children(self, manifest: _Manifest) -> list[str]:
        problems = list(manifest.problems)
        kept: dict[_Plugin, SkillRepository] = {}
        for plugin in manifest.folders:
            child = self._children.get(plugin) or self._child(plugin)
            if isinstance(child, str):
                problems.append(child)
            else:
                child.progress = self.progress
                kept[plugin] = child
        for plugin, child in self._children.items():
            if plugin not in kept:
                await child.aclose()
        self._children = kept
        return problems

    async def _version(self) -> str:
        manifest = await self._read_manifest()
        await self._sync_children(manifest)
        token = hashlib.sha256(manifest.token.encode())
        for plugin, child in self._children.items():
            try:
                version = await child.version()
            except RepositoryError as exc:
                version = f"unavailable: {exc}"
            token.update(f"\n{plugin.name}\0{plugin.path}\0{plugin.url}\0{version}".encode())
        return token.hexdigest()

    async def _load(self, version: str) -> Snapshot:
        manifest = await self._read_manifest()
        problems = [*await self._sync_children(manifest), *self._folded(manifest)]
        owners: dict[str, SkillRepository] = {}
        plugin_of: dict[str, str] = {}
        bundles: list[SkillBundle] = []
        for plugin, child in self._children.items():
            try:
                snapshot = await child.snapshot()
            except RepositoryError as exc:
                problems.append(f"plugin {plugin.name!r} unavailable, skipped: {exc}")
                continue
            if snapshot.error is not None:
                problems.append(f"plugin {plugin.name!r} serves its last good skills: {snapshot.error}")
            problems += [f"plugin {plugin.name!r}: {problem}" for problem in snapshot.problems]
            for bundle in snapshot.bundles:
                first = plugin_of.setdefault(bundle.folder, plugin.name)
                if bundle.folder in owners:
                    problems.append(self._clash(bundle.folder, first, plugin.name))
                    continue
                owners[bundle.folder] = child
                bundles.append(dataclasses.replace(bundle, sub_source=plugin.name))
        self._owners = owners
        return Snapshot(
            version=version,
            bundles=tuple(sorted(bundles, key=lambda b: b.folder)),
            problems=tuple(problems),
        )

    def _folded(self, manifest: _Manifest) -> list[str]:
        """A problem for each plugin whose name folds to the slug of another one listed before
        it (``GOOD`` after ``good``): both are served under that slug, and trust, which matches
        exact slugs (:func:`~repositories.sources.exact_sub_source`), is never the later one's."""
        first: dict[str, str] = {}
        problems: dict[str, str] = {}
        for plugin in manifest.folders:
            slug = sub_source(self.source, plugin.name)
            earlier = first.setdefault(slug, plugin.name)
            if earlier != plugin.name and plugin.name not in problems:
                problems[plugin.name] = (
                    f"plugin {plugin.name!r} folds to the slug {slug!r} of plugin {earlier!r}; trusted_markets "
                    f"names exact slugs only, so {slug!r} never trusts {plugin.name!r}: rename one of the plugins"
                )
        return list(problems.values())

    def _clash(self, folder: str, first: str, later: str) -> str:
        """Why the later plugin's skill of one folder name is not served."""
        if first == later:
            return f"skill {folder!r} of plugin {later!r} skipped: an earlier skills folder of that plugin has one"
        return (
            f"skill {folder!r} of plugin {later!r} ({sub_source(self.source, later)}) skipped: plugin {first!r} "
            f"({sub_source(self.source, first)}), listed before it in the marketplace, has a skill of that name"
        )

    def _owner(self, folder: str) -> SkillRepository:
        owner = self._owners.get(folder)
        if owner is None:
            raise BundleNotFound(f"{self.source}: no skill folder {folder!r}")
        return owner

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        await self._served_snapshot()  # the owners of the folders are known once it is read
        return await self._owner(folder).read_files(folder, paths)

    async def _read_chunks(self, folder: str, path: str, chunk_size: int) -> AsyncIterator[bytes]:
        await self._served_snapshot()  # the owners of the folders are known once it is read
        async for chunk in self._owner(folder).read_chunks(folder, path, chunk_size=chunk_size):
            yield chunk

    def _invalidate(self) -> None:
        self._manifest_key = None

    async def refresh(self) -> None:
        """Re-read the marketplace file and every plugin now."""
        for child in list(self._children.values()):
            await child.refresh()
        await super().refresh()

    async def _aclose(self) -> None:
        children: Sequence[SkillRepository] = [*self._children.values(), self.root]
        self._children = {}
        for child in children:
            await child.aclose()


def _check_schemes(root: DirectoryRepository | GitRepository, schemes: Collection[str]) -> frozenset[str]:
    """``schemes`` as a set of lowercase names; ``file`` only for a marketplace on this host."""
    if isinstance(schemes, str):
        raise InvalidRepositoryConfig(f"allowed_schemes must be a list of schemes such as ['https'], not {schemes!r}")
    allowed = frozenset(scheme.lower() for scheme in schemes)
    bad = sorted(scheme for scheme in allowed if not _SCHEME_NAME.fullmatch(scheme))
    if bad:
        raise InvalidRepositoryConfig(f"allowed_schemes: {bad!r} are not URL schemes (such as https, ssh, file)")
    if _LOCAL in allowed and isinstance(root, GitRepository) and url_scheme(root.url) != _LOCAL:
        raise InvalidRepositoryConfig(
            f"allowed_schemes: 'file' (host paths and file:// plugin sources) is allowed only for a marketplace "
            f"on this host, not for {root.shown_url!r}"
        )
    return allowed


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)

"""Skills from a well-known discovery index (``/.well-known/agent-skills/index.json``).

A site publishes an index listing its skills; each entry names the skill, its ``type``
(``"skill-md"``: one ``SKILL.md``; ``"archive"``: a ``.tar.gz`` or ``.zip`` whose root is the
skill folder), the ``url`` of that artifact (resolved against the index's URL) and the
``digest`` of the artifact's bytes (``sha256:<64 hex>``). The market serves the index of a site
(``https://host``, ``http://host``) or of a local file or folder.

What the market refuses (each costs only its entry; the entry's previous good artifact keeps
being served when there was one):

- an artifact whose bytes do not match the entry's digest, or an entry without a valid digest;
- an artifact URL that leaves what the operator named: from an ``https`` index only ``https``
  URLs, from an ``http`` index ``http``/``https`` ones, from a local index only files inside
  its site folder (no other scheme, no ``..``, no link that leads out); redirects are held to
  the same rule;
- an archive that :func:`repositories.archives.open_package` refuses (links, ``..`` and
  absolute paths, more than ``max_entries`` entries, over ``max_package_size`` unpacked, one
  path twice) or that holds no ``SKILL.md`` at its root; links, over-size entries and dot-files
  (``.env``, ``.DS_Store``, ``.git/…``) inside an archive are skipped, each named in a problem
  with the skill (the first :data:`~repositories.archives.MAX_NAMED_SKIPS`, the rest counted);
- an unknown ``type``, a name that is not one safe folder name, a name listed twice.

An index with an unknown or missing ``$schema`` is refused whole (the last good skills stay).
``version()`` is a hash over the served entries' names and digests: equal digests are equal
content, so a lockfile can record it. The index is fetched at most once per ``check_interval``
seconds; an artifact is downloaded only when its digest is new.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self

import anyio
import anyio.to_thread

from filesystems import redact_url
from repositories._urls import no_more, number, split_fragment
from repositories.archives import DEFAULT_MAX_ENTRIES, ArchiveEntry, Package, dot_files, open_package
from repositories.base import BundleFile, FileContents, SkillBundle, SkillBundleContents, SkillRepository, Snapshot
from repositories.discovery import SKILL_MD_NAMES, check_folder, shown
from repositories.errors import BundleNotFound, InvalidBundle, InvalidRepositoryConfig, RepositoryUnavailable
from repositories.memory import bundle_digest
from repositories.sources import make_source

__all__ = ["INDEX_PATH", "KNOWN_SCHEMAS", "WellKnownRepository"]

INDEX_PATH = "/.well-known/agent-skills/index.json"
"""Where a site publishes its skills index."""

KNOWN_SCHEMAS = frozenset({"https://schemas.agentskills.io/discovery/0.2.0/schema.json"})
"""The index schemas this market reads (the ``$schema`` of an index)."""

DEFAULT_MAX_INDEX_SIZE = 4 * 1024 * 1024
DEFAULT_MAX_FILE_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_PACKAGE_SIZE = 64 * 1024 * 1024

_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
_LOCAL_HOST = "local.invalid"  # stands for a local site's root while URLs are resolved


class _Refused(Exception):
    """An entry that cannot be served (the reason is the message)."""


@dataclass(frozen=True, kw_only=True)
class _Package:
    """One entry's artifact, verified and unpacked."""

    contents: SkillBundleContents
    digest: str  # the entry's artifact digest, ``sha256:<hex>``
    url: str
    problems: tuple[str, ...]


class _NoEscape(urllib.request.HTTPRedirectHandler):
    """Follows redirects only where the index's own rule allows (see the module docstring)."""

    def __init__(self, allowed: tuple[str, ...]) -> None:
        self.allowed = allowed

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in self.allowed:
            raise urllib.error.URLError(f"redirect to {redact_url(newurl)!r} refused: not {'/'.join(self.allowed)}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class WellKnownRepository(SkillRepository):
    """The skills of one well-known index (see the module docstring).

    ``index`` is a site (``https://example.com``: its ``/.well-known/agent-skills/index.json``),
    the URL of an index file (ending in ``.json``, e.g. a pinned ``.../v1.2.0/index.json``), or
    a local path: a site folder holding ``.well-known/agent-skills/index.json``, or an index
    file (whose folder is then the site's root). ``timeout`` bounds each request (seconds);
    ``check_interval`` how often the index is fetched again (default 30 s for a site, 0 for a
    local index). ``max_index_size``, ``max_file_size`` (one file of a skill),
    ``max_package_size`` (an artifact, downloaded and unpacked) and ``max_entries`` (files of an
    archive) are the caps. Slug: ``wk-<host>`` or ``wk-<folder>``.
    """

    def __init__(
        self,
        index: str | os.PathLike[str],
        *,
        check_interval: float | None = None,
        timeout: float = 10.0,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        max_package_size: int = DEFAULT_MAX_PACKAGE_SIZE,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        source: str | None = None,
    ) -> None:
        text = os.fspath(index)
        parts = urllib.parse.urlsplit(text)
        if parts.scheme in ("http", "https"):
            if not parts.hostname:
                raise InvalidRepositoryConfig(f"no host in {redact_url(text)!r}")
            path = parts.path
            if not path.endswith(".json"):
                path = path.rstrip("/")
                path = path + "/index.json" if path.endswith("/.well-known/agent-skills") else path + INDEX_PATH
            self.index_url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
            self.root: Path | None = None
            allowed = ("https",) if parts.scheme == "https" else ("http", "https")
            name = parts.hostname
        elif parts.scheme in ("", "file"):
            local = Path(urllib.parse.unquote(parts.path) if parts.scheme == "file" else text).expanduser().absolute()
            self.root, relative = _local_index(local)
            self.index_url = f"http://{_LOCAL_HOST}/{relative}"
            allowed = ("http",)
            name = self.root.name
        else:
            raise InvalidRepositoryConfig(f"a well-known index is an http(s) URL or a local path, not {text!r}")
        if check_interval is not None and check_interval < 0 or not timeout > 0:
            raise InvalidRepositoryConfig("check_interval must be >= 0 and timeout > 0")
        if min(max_index_size, max_file_size, max_entries) < 1 or max_package_size < max_file_size:
            raise InvalidRepositoryConfig("the size caps must be >= 1, and max_package_size >= max_file_size")
        super().__init__(source=source or make_source("wk", name))
        self.where = redact_url(self.index_url) if self.root is None else str(self.root)
        """What locations and messages show: the index URL (credentials masked) or the site folder."""
        self.check_interval = check_interval if check_interval is not None else (30.0 if self.root is None else 0.0)
        self.timeout = timeout
        self.max_index_size = max_index_size
        self.max_file_size = max_file_size
        self.max_package_size = max_package_size
        self.max_entries = max_entries
        self._allowed = allowed
        self._opener = urllib.request.build_opener(_NoEscape(allowed))
        self._packages: dict[str, _Package] = {}
        self._problems: tuple[str, ...] = ()
        self._index_hash: str | None = None
        self._token: str | None = None
        self._failure: RepositoryUnavailable | None = None
        self._checked_at = -math.inf
        self._check_lock = anyio.Lock()

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a URL names: ``https://host[/path]``, ``http://…``, ``well-known+https://…``,
        ``well-known+http://…`` or ``well-known+file:///path`` (a local site folder or index
        file); fragment options ``check_interval``, ``timeout``, ``source``. Raises
        ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        base = base.removeprefix("well-known+")
        repo = cls(
            base,
            check_interval=number(options, "check_interval", -1.0) if "check_interval" in options else None,
            timeout=number(options, "timeout", 10.0),
            source=options.pop("source", None),
        )
        no_more(url, options)
        return repo

    # Change detection.

    async def _version(self) -> str:
        async with self._check_lock:
            if time.monotonic() - self._checked_at >= self.check_interval or self._token is None:
                self._checked_at = time.monotonic()
                self._failure = None
                try:
                    await anyio.to_thread.run_sync(self._check)
                except RepositoryUnavailable as exc:
                    self._failure = exc
            if self._failure is not None:
                raise self._failure.with_traceback(None)
            assert self._token is not None  # set by a successful check
            return self._token

    def _invalidate(self) -> None:
        self._checked_at = -math.inf
        self._index_hash = None

    def _check(self) -> None:
        """Fetch the index; download what changed (in a worker thread)."""
        data = self._fetch(self.index_url, self.max_index_size, what="the index")
        index_hash = hashlib.sha256(data).hexdigest()
        if index_hash == self._index_hash and self._token is not None and not self._problems:
            return
        entries = _parse_index(data, self.where)
        packages: dict[str, _Package] = {}
        problems: list[str] = []
        for position, entry in enumerate(entries):
            try:
                name, package = self._entry(entry, position, packages)
            except _Refused as exc:
                problems.append(str(exc))
                continue
            packages[name] = package
            problems.extend(package.problems)
        for name, old in self._packages.items():  # a refused artifact keeps its last good one
            if name not in packages and any(p.startswith(f"skill {shown(name)}: ") for p in problems):
                packages[name] = old
                problems.append(f"skill {shown(name)}: the previous artifact ({old.digest}) is still served")
        token = hashlib.sha256()
        for name in sorted(packages):
            token.update(f"{name}\0{packages[name].digest}\n".encode())
        for problem in problems:
            token.update(f"{problem}\n".encode())
        self._packages, self._problems = packages, tuple(problems)
        self._token, self._index_hash = token.hexdigest(), index_hash

    def _entry(self, entry: object, position: int, done: Mapping[str, _Package]) -> tuple[str, _Package]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _Refused(f"index entry {position}: not an object with a name: skipped")
        name: str = entry["name"]
        label = f"skill {shown(name)}"
        try:
            check_folder(name)
        except InvalidBundle as exc:
            raise _Refused(f"{label}: {exc}: skipped") from None
        if name in done:
            raise _Refused(f"{label}: listed twice in the index: the first entry is served")
        kind, url, digest = entry.get("type"), entry.get("url"), entry.get("digest")
        if kind not in ("skill-md", "archive"):
            raise _Refused(f"{label}: unknown type {kind!r}: skipped")
        if not isinstance(url, str) or not url:
            raise _Refused(f"{label}: no url: skipped")
        match = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
        if match is None:
            raise _Refused(f"{label}: digest {digest!r} is not sha256:<64 lowercase hex>: skipped")
        digest = match.group(0)
        old = self._packages.get(name)
        if old is not None and old.digest == digest:
            return name, old
        target = self._resolve(url, label)
        data = self._fetch(target, self.max_package_size, what=f"{label}", refused=_Refused)
        actual = hashlib.sha256(data).hexdigest()
        if actual != match.group(1):
            raise _Refused(
                f"{label}: the artifact's digest is sha256:{actual}, not {digest} as the index says: refused"
            )
        if kind == "skill-md":
            contents = SkillBundleContents(folder=name, skill_md=data)
            return name, _Package(contents=contents, digest=digest, url=target, problems=())
        return name, self._unpack(name, data, digest, target)

    def _resolve(self, url: str, label: str) -> str:
        """The artifact URL, resolved against the index's; ``_Refused`` when it leaves the site
        rule (see the module docstring)."""
        target = urllib.parse.urljoin(self.index_url, url.strip())
        parts = urllib.parse.urlsplit(target)
        if parts.scheme not in self._allowed or (self.root is not None and parts.netloc != _LOCAL_HOST):
            raise _Refused(f"{label}: url {redact_url(url)!r} leaves the index's site or scheme: refused")
        return target

    def _fetch(self, url: str, limit: int, *, what: str, refused: type[Exception] = RepositoryUnavailable) -> bytes:
        """The bytes at ``url`` (at most ``limit``); a failure raises ``refused``."""
        shown_url = redact_url(url) if self.root is None else url.replace(f"http://{_LOCAL_HOST}", str(self.root))
        try:
            if self.root is not None:
                return _read_local(self.root, urllib.parse.unquote(urllib.parse.urlsplit(url).path), limit)
            request = urllib.request.Request(url, headers={"User-Agent": "agent-skill-harness"})
            with self._opener.open(request, timeout=self.timeout) as response:
                declared = response.headers.get("Content-Length")
                if declared is not None and declared.isdigit() and int(declared) > limit:
                    raise _TooLarge
                data: bytes = response.read(limit + 1)
        except _TooLarge:
            raise refused(f"{what}: {shown_url} is larger than {limit} bytes") from None
        except urllib.error.HTTPError as exc:
            raise refused(f"{what}: {shown_url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise refused(f"{what}: cannot read {shown_url}: {reason}") from None
        if len(data) > limit:
            raise refused(f"{what}: {shown_url} is larger than {limit} bytes")
        return data

    def _unpack(self, name: str, data: bytes, digest: str, url: str) -> _Package:
        label = f"skill {shown(name)}"
        try:
            with open_package(
                data,
                max_file_size=self.max_file_size,
                max_total_size=self.max_package_size,
                max_entries=self.max_entries,
                hidden=dot_files,
            ) as package:
                problems = tuple(f"{label}: {problem}" for problem in package.problems)
                return _Package(contents=_contents(name, package, label), digest=digest, url=url, problems=problems)
        except InvalidBundle as exc:  # ArchiveRefused, or a bundle the checks refuse
            raise _Refused(f"{label}: archive refused: {exc}") from None

    # Snapshots and files.

    async def _load(self, version: str) -> Snapshot:
        assert self._token is not None  # _load follows a successful _version()
        bundles = tuple(
            SkillBundle(
                folder=name,
                skill_md=package.contents.skill_md,
                skill_md_name=package.contents.skill_md_name,
                files=tuple(BundleFile(path=f.path, size=len(f.data), mode=f.mode) for f in package.contents.files),
                location=package.url if self.root is None else f"{self.where}#{name}",
                digest=bundle_digest(package.contents),
            )
            for name, package in sorted(self._packages.items())
        )
        return Snapshot(version=self._token, bundles=bundles, problems=self._problems)

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        if self._token is None:
            await self._version()
        package = self._packages.get(folder)
        if package is None:
            raise BundleNotFound(f"{self.where}: no skill {folder!r}")
        return package.contents.read(paths, where=f"{self.where}/{folder}")

    def artifact_digests(self) -> dict[str, str]:
        """The artifact digest (``sha256:<hex>``) of each served skill, by name, as checked."""
        return {name: package.digest for name, package in self._packages.items()}


class _TooLarge(Exception):
    pass


def _parse_index(data: bytes, where: str) -> list[object]:
    try:
        index = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RepositoryUnavailable(f"{where}: the index is not JSON: {exc}") from None
    if not isinstance(index, dict) or not isinstance(index.get("skills"), list):
        raise RepositoryUnavailable(f"{where}: the index has no skills list")
    schema = index.get("$schema")
    if schema not in KNOWN_SCHEMAS:
        raise RepositoryUnavailable(
            f"{where}: unknown index schema {schema!r} (this market reads {', '.join(sorted(KNOWN_SCHEMAS))})"
        )
    skills: list[object] = index["skills"]
    return skills


def _contents(name: str, package: Package, label: str) -> SkillBundleContents:
    """The skill an archive holds at its root (its dot-files were skipped by the package)."""
    entries: dict[str, ArchiveEntry] = {entry.path: entry for entry in package.entries}
    main = next((n for n in SKILL_MD_NAMES if n in entries), None)
    if main is None:
        raise InvalidBundle("it holds no SKILL.md at its root")
    files = tuple(
        FileContents(path=path, data=package.read(entry), mode=entry.mode)
        for path, entry in sorted(entries.items())
        if path != main
    )
    return SkillBundleContents(folder=name, skill_md=package.read(entries[main]), skill_md_name=main, files=files)


def _local_index(path: Path) -> tuple[Path, str]:
    """A local site's root folder and its index's path relative to it."""
    if path.is_dir():
        return path, INDEX_PATH.lstrip("/")
    if path.is_file():
        parent = path.parent
        if parent.name == "agent-skills" and parent.parent.name == ".well-known":
            return parent.parent.parent, INDEX_PATH.lstrip("/")
        return parent, path.name
    raise InvalidRepositoryConfig(f"no well-known index at {str(path)!r}: neither a folder nor a file")


def _read_local(root: Path, path: str, limit: int) -> bytes:
    """A file of a local site, refusing any path or link that leads out of ``root``."""
    relative = path.lstrip("/")
    target = (root / relative).resolve()
    base = root.resolve()
    if not relative or not target.is_relative_to(base) or target == base:
        raise ValueError(f"{relative!r} leads out of the site folder")
    with open(target, "rb") as handle:
        data = handle.read(limit + 1)
    return data

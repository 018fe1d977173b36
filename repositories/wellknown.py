"""Skills from a well-known discovery index (``/.well-known/agent-skills/index.json``).

A site publishes an index listing its skills; each entry names the skill, its ``type``
(``"skill-md"``: one ``SKILL.md``; ``"archive"``: a ``.tar.gz`` or ``.zip`` whose root is the
skill folder), the ``url`` of that artifact (resolved against the index's URL) and the
``digest`` of the artifact's bytes (``sha256:<64 hex>``). The market serves the index of a site
(``https://host``, ``http://host``) or of a local file or folder.

What the market refuses (each costs only its entry; the entry's previous good artifact keeps
being served when there was one):

- an artifact whose bytes do not match the entry's digest, or an entry without a valid digest;
- an artifact URL that leaves what the operator named: the index's own site (scheme, host and
  port; from an ``http`` index also ``https`` on the same host) or a host of ``artifact_hosts``;
  from an ``https`` index only ``https`` URLs, from an ``http`` index ``http``/``https`` ones;
  from a local index only files inside its site folder (no other scheme, no ``..``, no link that
  leads out). Redirects, of the index and of artifacts, are held to the same rule;
- an archive that :func:`repositories.archives.open_package` refuses (links, ``..`` and
  absolute paths, more than ``max_entries`` entries, over ``max_package_size`` unpacked, one
  path twice) or that holds no ``SKILL.md`` at its root; links, over-size entries and dot-files
  (``.env``, ``.DS_Store``, ``.git/…``) inside an archive are skipped, each named in a problem
  with the skill (the first :data:`~repositories.archives.MAX_NAMED_SKIPS`, the rest counted);
- an artifact whose ``SKILL.md`` names another skill than its entry (``name:``);
- an unknown ``type``; a name that is not one safe folder name (no ``/``, ``\\``, ``..``,
  leading dot, control or invisible format characters, surrounding spaces, text not in NFC);
  a name listed twice, or one that folds (Unicode NFKC, case) to a name listed before it;
- a skill that would take the market's skills past ``max_total_size`` bytes.

An index with an unknown or missing ``$schema``, or listing more than ``max_skills`` entries,
is refused whole (the last good skills stay). Every request ends within ``timeout`` seconds
however slowly the server sends, a body past its cap is refused while it is read, and one
shorter than its ``Content-Length`` is refused as incomplete (:mod:`repositories._http`).

``version()`` is a hash over the served entries' names and digests: equal digests are equal
content, so a lockfile can record it. The index is fetched at most once per ``check_interval``
seconds, in a worker thread of the market's own; an artifact is downloaded only when its digest
is new. A caller waits for a check in flight (cancellably: the pipeline's ``market_timeout``
moves a turn on while the check runs on), or, with ``check_budget`` seconds (0 with
``background_refresh``), at most that long once an index has been served, taking the last good
skills and leaving the check to finish for a later call.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import math
import os
import re
import threading
import time
import unicodedata
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import anyio
import anyio.to_thread

from filesystems import redact_url
from filesystems.paths import segment_problem
from repositories._futures import wait_for
from repositories._http import HttpFailure, http_get
from repositories._mcp_entries import frontmatter_fields
from repositories._urls import flag, no_more, number, split_fragment
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
DEFAULT_MAX_TOTAL_SIZE = 256 * 1024 * 1024
DEFAULT_MAX_SKILLS = 1000
_DEFAULT_PORTS = {"http": 80, "https": 443}

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

    @property
    def size(self) -> int:
        """The bytes the market holds for the skill."""
        return len(self.contents.skill_md) + sum(len(f.data) for f in self.contents.files)


@dataclass(frozen=True, kw_only=True)
class _Checked:
    """What one check of the index found (made in the worker thread, taken on the loop)."""

    packages: dict[str, _Package]
    problems: tuple[str, ...]
    token: str
    index_hash: str


class WellKnownRepository(SkillRepository):
    """The skills of one well-known index (see the module docstring).

    ``index`` is a site (``https://example.com``: its ``/.well-known/agent-skills/index.json``),
    the URL of an index file (ending in ``.json``, e.g. a pinned ``.../v1.2.0/index.json``), or
    a local path: a site folder holding ``.well-known/agent-skills/index.json``, or an index
    file (whose folder is then the site's root). ``timeout`` bounds each request, whole
    (seconds); ``check_interval`` how often the index is fetched again (default 30 s for a site,
    0 for a local index); ``check_budget`` how long a call waits for a due check once an index
    has been served (``None``, the default: until it ends; ``background_refresh=True`` is 0).
    ``artifact_hosts`` are the other hosts (``host`` or ``host:port``) artifacts may come from.
    ``max_index_size``, ``max_file_size`` (one file of a skill), ``max_package_size`` (an
    artifact, downloaded and unpacked), ``max_entries`` (files of an archive), ``max_skills``
    (entries of the index) and ``max_total_size`` (every served skill's files together) are the
    caps. Slug: ``wk-<host>`` or ``wk-<folder>``.
    """

    def __init__(
        self,
        index: str | os.PathLike[str],
        *,
        check_interval: float | None = None,
        check_budget: float | None = None,
        background_refresh: bool = False,
        timeout: float = 10.0,
        artifact_hosts: Collection[str] = (),
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        max_package_size: int = DEFAULT_MAX_PACKAGE_SIZE,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_skills: int = DEFAULT_MAX_SKILLS,
        max_total_size: int = DEFAULT_MAX_TOTAL_SIZE,
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
        if check_budget is not None and check_budget < 0:
            raise InvalidRepositoryConfig(f"check_budget must be >= 0, not {check_budget}")
        if min(max_index_size, max_file_size, max_entries, max_skills) < 1 or not (
            max_file_size <= max_package_size <= max_total_size
        ):
            raise InvalidRepositoryConfig(
                "the size caps must be >= 1, and max_file_size <= max_package_size <= max_total_size"
            )
        super().__init__(source=source or make_source("wk", name))
        self.where = redact_url(self.index_url) if self.root is None else str(self.root)
        """What locations and messages show: the index URL (credentials masked) or the site folder."""
        self.check_interval = check_interval if check_interval is not None else (30.0 if self.root is None else 0.0)
        self.check_budget = 0.0 if background_refresh else check_budget
        self.timeout = timeout
        self.max_index_size = max_index_size
        self.max_file_size = max_file_size
        self.max_package_size = max_package_size
        self.max_entries = max_entries
        self.max_skills = max_skills
        self.max_total_size = max_total_size
        self._allowed = allowed
        self._origins = _origins(parts, allowed, artifact_hosts) if self.root is None else frozenset()
        self._packages: dict[str, _Package] = {}
        self._problems: tuple[str, ...] = ()
        self._index_hash: str | None = None
        self._token: str | None = None
        self._failure: RepositoryUnavailable | None = None
        self._checked_at = -math.inf
        self._forced = False
        self._checker: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: concurrent.futures.Future[_Checked | None] | None = None
        self._closing = threading.Event()

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a URL names: ``https://host[/path]``, ``http://…``, ``well-known+https://…``,
        ``well-known+http://…`` or ``well-known+file:///path`` (a local site folder or index
        file); fragment options ``check_interval``, ``check_budget``, ``background_refresh``,
        ``timeout``, ``artifact_hosts`` (comma-separated), ``source``. Raises
        ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        base = base.removeprefix("well-known+")
        hosts = options.pop("artifact_hosts", "")
        repo = cls(
            base,
            check_interval=number(options, "check_interval", -1.0) if "check_interval" in options else None,
            check_budget=number(options, "check_budget", 0.0) if "check_budget" in options else None,
            background_refresh=flag(options, "background_refresh", False),
            timeout=number(options, "timeout", 10.0),
            artifact_hosts=[host for host in hosts.split(",") if host],
            source=options.pop("source", None),
        )
        no_more(url, options)
        return repo

    # Change detection.

    async def _version(self) -> str:
        due = time.monotonic() - self._checked_at >= self.check_interval
        if self._pending is None and (due or self._token is None or self._forced):
            self._checked_at = time.monotonic()
            if self._checker is None:  # one thread of the market's own: a slow site holds nothing else
                self._checker = concurrent.futures.ThreadPoolExecutor(1, "well-known-check")
            self._pending = self._checker.submit(self._check)
        pending = self._pending
        if pending is not None:
            budget = None if self._token is None or self._forced else self.check_budget
            if budget is None or budget > 0:
                with anyio.move_on_after(budget):
                    await wait_for(pending)
            if pending.done():
                if self._pending is pending:
                    self._pending = None
                self._forced = False
                self._take(pending)
        if self._failure is not None:
            raise self._failure.with_traceback(None)
        if self._token is None:  # only when the first check was given up on
            raise RepositoryUnavailable(f"{self.where}: the index has not been read yet")
        return self._token

    def _take(self, done: concurrent.futures.Future[_Checked | None]) -> None:
        """The outcome of a finished check: what it found, or why it failed."""
        error = done.exception()
        if error is None:
            checked = done.result()
            if checked is not None:
                self._packages, self._problems = checked.packages, checked.problems
                self._token, self._index_hash = checked.token, checked.index_hash
            self._failure = None
        elif isinstance(error, RepositoryUnavailable):
            self._failure = error
        else:  # a market never lets anything else out
            self._failure = RepositoryUnavailable(f"{self.where}: the check failed: {error!r}")

    def _invalidate(self) -> None:
        self._checked_at = -math.inf
        self._index_hash = None
        self._forced = True

    def _check(self) -> _Checked | None:
        """Fetch the index and download what changed (in the market's worker thread); ``None``
        when the index is the one already served. Reads the served state, changes nothing."""
        data = self._fetch(self.index_url, self.max_index_size, what="the index")
        index_hash = hashlib.sha256(data).hexdigest()
        if index_hash == self._index_hash and self._token is not None and not self._problems:
            return None
        entries = _parse_index(data, self.where, self.max_skills)
        packages: dict[str, _Package] = {}
        problems: list[str] = []
        listed: dict[str, str] = {}  # folded name -> name as listed
        total = 0
        for position, entry in enumerate(entries):
            if self._closing.is_set():
                raise RepositoryUnavailable(f"{self.where}: closed while the index was being read")
            try:
                name, package = self._entry(entry, position, listed)
                total += package.size
                if total > self.max_total_size:
                    total -= package.size
                    raise _Refused(
                        f"skill {shown(name)}: the market's skills would hold more than {self.max_total_size} bytes "
                        "(max_total_size): skipped"
                    )
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
        return _Checked(packages=packages, problems=tuple(problems), token=token.hexdigest(), index_hash=index_hash)

    def _entry(self, entry: object, position: int, listed: dict[str, str]) -> tuple[str, _Package]:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _Refused(f"index entry {position}: not an object with a name: skipped")
        name: str = entry["name"]
        label = f"skill {shown(name)}"
        try:
            check_folder(name)
        except InvalidBundle as exc:
            raise _Refused(f"{label}: {exc}: skipped") from None
        problem = segment_problem(name)
        if problem is not None:
            raise _Refused(f"{label}: invalid skill folder name: it {problem}: skipped")
        folded = unicodedata.normalize("NFKC", name).casefold()
        earlier = listed.get(folded)
        if earlier == name:
            raise _Refused(f"{label}: listed twice in the index: only the first entry counts")
        if earlier is not None:
            raise _Refused(f"{label}: its name folds to that of skill {earlier!r}, listed before it: skipped")
        listed[folded] = name
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
        limit = self.max_file_size if kind == "skill-md" else self.max_package_size
        data = self._fetch(target, limit, what=f"{label}", refused=_Refused)
        actual = hashlib.sha256(data).hexdigest()
        if actual != match.group(1):
            raise _Refused(
                f"{label}: the artifact's digest is sha256:{actual}, not {digest} as the index says: refused"
            )
        if kind == "skill-md":
            package = _Package(
                contents=SkillBundleContents(folder=name, skill_md=data), digest=digest, url=target, problems=()
            )
        else:
            package = self._unpack(name, data, digest, target)
        mismatch = _name_mismatch(name, package.contents.skill_md)
        if mismatch is not None:
            raise _Refused(f"{label}: {mismatch}: refused")
        return name, package

    def _resolve(self, url: str, label: str) -> str:
        """The artifact URL, resolved against the index's; ``_Refused`` when it leaves the site
        rule (see the module docstring)."""
        target = urllib.parse.urljoin(self.index_url, url.strip())
        problem = self._leaves(target)
        if problem is not None:
            raise _Refused(f"{label}: url {redact_url(url)!r} {problem}: refused")
        return target

    def _leaves(self, url: str) -> str | None:
        """Why ``url`` is not a place this market fetches from, or ``None``."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in self._allowed:
            return f"leaves the index's scheme ({'/'.join(self._allowed)})"
        if self.root is not None:
            return None if parts.netloc == _LOCAL_HOST else "leaves the index's site folder"
        if _origin(parts) not in self._origins:
            return "leaves the index's site (scheme, host and port) and the artifact_hosts the operator named"
        return None

    def _fetch(self, url: str, limit: int, *, what: str, refused: type[Exception] = RepositoryUnavailable) -> bytes:
        """The bytes at ``url`` (at most ``limit``); a failure raises ``refused``."""
        if self.root is not None:
            shown_url = url.replace(f"http://{_LOCAL_HOST}", str(self.root))
            try:
                data = _read_local(self.root, urllib.parse.unquote(urllib.parse.urlsplit(url).path), limit)
            except (OSError, ValueError) as exc:
                raise refused(f"{what}: cannot read {shown_url}: {exc}") from None
            if len(data) > limit:
                raise refused(f"{what}: {shown_url} is larger than {limit} bytes")
            return data
        try:
            return http_get(
                url, limit=limit, timeout=self.timeout, redirect_problem=self._leaves, user_agent="agent-skill-harness"
            )
        except HttpFailure as exc:
            raise refused(f"{what}: {redact_url(url)}: {exc}") from None

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

    async def _aclose(self) -> None:
        self._closing.set()  # a check in flight stops before its next artifact
        checker, self._checker = self._checker, None
        if checker is not None:
            await anyio.to_thread.run_sync(checker.shutdown)


def _parse_index(data: bytes, where: str, max_skills: int) -> list[object]:
    try:
        index = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise RepositoryUnavailable(f"{where}: the index is not JSON: {exc}") from None
    if not isinstance(index, dict) or not isinstance(index.get("skills"), list):
        raise RepositoryUnavailable(f"{where}: the index has no skills list")
    schema = index.get("$schema")
    if schema not in KNOWN_SCHEMAS:
        raise RepositoryUnavailable(
            f"{where}: unknown index schema {shown(str(schema))!r} (this market reads "
            f"{', '.join(sorted(KNOWN_SCHEMAS))})"
        )
    skills: list[object] = index["skills"]
    if len(skills) > max_skills:
        raise RepositoryUnavailable(
            f"{where}: the index lists {len(skills)} skills, more than max_skills={max_skills}: refused whole"
        )
    return skills


def _name_mismatch(name: str, skill_md: bytes) -> str | None:
    """Why an artifact is not the skill its entry names: its ``SKILL.md`` gives another
    ``name`` (a ``SKILL.md`` without a readable frontmatter is the harness's to report)."""
    try:
        declared: Any = frontmatter_fields(skill_md).get("name")
    except InvalidBundle:
        return None
    if declared is None or declared == name:
        return None
    return f"its SKILL.md names the skill {shown(str(declared))!r}, not {name!r} as the index does"


def _origin(parts: urllib.parse.SplitResult) -> str | None:
    """``host:port`` of a URL (the scheme's default port when it gives none), or ``None``."""
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number
        return None
    return f"{parts.hostname}:{port}" if parts.hostname and port else None


def _origins(index: urllib.parse.SplitResult, schemes: tuple[str, ...], hosts: Collection[str]) -> frozenset[str]:
    """Where artifacts may come from: the index's site (and ``https`` on its host, from an
    ``http`` index) and the operator's ``artifact_hosts`` (``host`` on the default ports of
    ``schemes``, or ``host:port``)."""
    if isinstance(hosts, str):
        raise InvalidRepositoryConfig(f"artifact_hosts must be a list of hosts, not {hosts!r}")
    found = {_origin(index), f"{index.hostname}:443" if "https" in schemes else None}
    for host in hosts:
        parts = urllib.parse.urlsplit(f"//{host.strip()}")
        if not parts.hostname or parts.path or parts.username or parts.password:
            raise InvalidRepositoryConfig(f"artifact_hosts: {host!r} is not a host or host:port")
        try:
            port = parts.port
        except ValueError:
            raise InvalidRepositoryConfig(f"artifact_hosts: {host!r} has no valid port") from None
        found.update(f"{parts.hostname}:{p}" for p in ([port] if port else [_DEFAULT_PORTS[s] for s in schemes]))
    return frozenset(origin for origin in found if origin is not None)


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

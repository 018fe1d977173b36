"""A market that reads skills from an MCP server speaking the Skills extension.

The server is any MCP server that declares ``io.modelcontextprotocol/skills`` (``harness mcp
serve`` is one): over streamable HTTP (``McpRepository(url=...)``, optionally with a bearer token)
or a command started over stdio (``McpRepository(command=[...])``). While the market is entered
(``async with``, as the harness does) one connection is kept open by a task the market owns, so
a stdio server is started once; a broken or stuck connection is dropped and the next call opens
a new one. Outside ``async with`` each operation opens its own. The market is a conforming host of the extension's stable text:

- **The catalog comes from the entries alone.** ``skills/list`` (every page) carries each skill's
  verbatim frontmatter and the manifest of its files; a bundle's ``skill_md`` is a stand-in made
  of that frontmatter (``SkillBundle.on_demand``), so listing reads no file. The listing is the
  version token: equal listings mean equal content, so an unchanged server costs one request per
  check (``check_interval`` seconds may be given to ask less often).
- **Files are fetched on use and verified.** A file is read through ``resources/read`` only when
  the harness asks for it (a skill loaded or run), checked against the listed size and digest; a
  ``SKILL.md``'s frontmatter is also compared field by field with the entry's. Any difference is
  a :class:`~repositories.errors.ContentMismatch` naming the skill, the file and both digests,
  and the bytes are never delivered. Verified bytes are kept in memory by digest.
- **Skills referenced by URI** (``uris=``, or a ``skill://…/SKILL.md`` named in the server's
  instructions) that the listing lacks are asked for with ``skills/get``.
- **Same-named skills stay apart.** A skill's identity is the market's slug (the host-assigned
  label) plus its URI: a skill at ``skill://team-a/dupe/SKILL.md`` has the sub-source ``team-a``
  (skill id ``dupe_<slug>.team-a``, staged under ``.skills-cache/<slug>.team-a/dupe``), one at
  ``skill://dupe/SKILL.md`` none (``dupe_<slug>``). Nothing is dropped for sharing a name.
- **Dynamic skills** (``"resources": "dynamic"``) are listed, with a problem saying nothing of
  them can be verified. Their other files are found, on first use, the one way the extension
  offers: ``resources/directory/read`` from the skill's root down, when the server declares
  ``directoryRead`` (a host must not call it otherwise, and then only the SKILL.md is reached).
  The listing is kept until the next check; the files are never cached and are read afresh on
  each use, within the extension's limits (512 files, 16 MiB read per skill), and their approval
  binds to nothing that can be reused.
- Hostile entries lose only what is wrong: a URI that is not ``skill://<path>/<name>/SKILL.md``
  with safe segments, a name that is not the path's last segment, a skill over the extension's
  limits (512 files, 16 MiB) or without ``resources`` is skipped, an unsafe file path dropped,
  each with a problem in the snapshot.
- Acting on its skills needs the user's activation approval (``activation_approval``), unless
  the operator lists the market in ``trusted_markets``. When the server cannot be reached the
  last good snapshot is served (see :class:`~repositories.base.SkillRepository`).

The MCP SDK (the ``mcp`` extra) is imported only when the market first talks to its server.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import shlex
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio

from filesystems import BackgroundTasks, has_dot_segment, redact_secrets, redact_url
from repositories._mcp_entries import (
    MAIN,
    MAX_BYTES,
    MAX_FILES,
    RemoteSkill,
    frontmatter_problem,
    parse_entry,
    stand_in,
)
from repositories._urls import no_more, number, split_fragment
from repositories.base import BundleFile, FileListing, SkillBundle, SkillRepository, Snapshot
from repositories.discovery import normalise_file_path
from repositories.errors import (
    BundleNotFound,
    ContentMismatch,
    InvalidBundle,
    InvalidRepositoryConfig,
    RepositoryError,
    RepositoryUnavailable,
    UnsafePath,
)
from repositories.sources import make_source

if TYPE_CHECKING:
    from mcp import Client
    from pydantic import BaseModel

__all__ = ["MAX_BYTES", "MAX_FILES", "McpRepository"]

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Verified file bytes kept in memory across loads, at most this many.
_CACHE_BYTES = 64 * 1024 * 1024
_MAX_PAGES = 1000
_REFERENCE = re.compile(r"skill://[^\s\"'<>()\[\]`]+/SKILL\.md")
_EXTENSION = "io.modelcontextprotocol/skills"
_DIRECTORY = "inode/directory"


@dataclass(frozen=True, slots=True)
class _Listing:
    version: str
    skills: Mapping[str, RemoteSkill]  # skill path -> skill
    problems: tuple[str, ...] = ()
    directory_read: bool = False  # the server declared resources/directory/read
    checked: float = field(default_factory=time.monotonic)
    # A dynamic skill's files as the server's directories showed them, and the bytes read of
    # each file so far: both last as long as this listing.
    walked: dict[str, FileListing] = field(default_factory=dict)
    read: dict[str, dict[str, int]] = field(default_factory=dict)


class McpRepository(SkillRepository):
    """Skills served by an MCP server (see the module docstring).

    Give exactly one of ``url`` (streamable HTTP; ``token`` is sent as ``Authorization: Bearer``;
    a ``user:password@`` in the URL is taken out of it and sent as HTTP Basic auth, so the URL the
    MCP SDK sees, and may log, holds no credentials) or ``command`` (the server's argv, run over
    stdio; ``env`` adds variables). ``timeout`` bounds opening a connection and each piece of
    work on it, in seconds; ``check_interval`` lets a listing stand that long before the server
    is asked again. ``uris`` are ``skill://…/SKILL.md`` URIs to load with ``skills/get`` when the
    listing lacks them (the server's instructions may name more).
    """

    activation_approval = True

    def __init__(
        self,
        *,
        url: str | None = None,
        command: Sequence[str] | None = None,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        check_interval: float = 0.0,
        source: str | None = None,
        uris: Sequence[str] = (),
    ) -> None:
        if (url is None) == (command is None):
            raise InvalidRepositoryConfig("give an MCP server as exactly one of url= or command=")
        if url is not None and urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise InvalidRepositoryConfig(f"MCP server URL {redact_url(url)!r} must be http:// or https://")
        if command is not None and (not command or not all(isinstance(part, str) and part for part in command)):
            raise InvalidRepositoryConfig("the MCP server command must be a non-empty list of arguments")
        if not timeout > 0 or check_interval < 0:
            raise InvalidRepositoryConfig("timeout must be > 0 and check_interval >= 0")
        self._basic: tuple[str, str] | None = None
        if url is not None:
            url, self._basic = _split_credentials(url)
            if self._basic is not None and token:
                raise InvalidRepositoryConfig(
                    f"MCP server {redact_url(url)!r}: give credentials in the URL or as token=, not both"
                )
        self.url = url
        self.command = tuple(command) if command is not None else None
        self._token = token
        self._token_env: str | None = None  # the variable the token was read from, to name in a refusal
        self._env = dict(env or {})
        self.timeout = timeout
        self.check_interval = check_interval
        bad = [u for u in uris if not isinstance(u, str) or not _REFERENCE.fullmatch(u)]
        if bad:
            raise InvalidRepositoryConfig(f"{str(bad[0])[:200]!r} is not a skill://<path>/SKILL.md URI")
        self.uris = tuple(uris)
        super().__init__(source=source or self._default_source())
        self._listing: _Listing | None = None
        self._cache = _Cache(_CACHE_BYTES)
        self._stack = AsyncExitStack()
        self._tasks: BackgroundTasks | None = None
        self._link: _Link | None = None
        self._link_lock = anyio.Lock()

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market an ``mcp+https://``, ``mcp+http://`` or ``mcp+stdio:<command …>`` URL names;
        fragment options ``timeout``, ``check_interval``, ``source``, ``uris`` (``skill://…/SKILL.md``
        URIs to load with ``skills/get``, separated by ``,``) and, over HTTP, ``token_env`` (the
        variable holding the bearer token). Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        uris = options.pop("uris", "")
        common: dict[str, Any] = {
            "timeout": number(options, "timeout", 30.0),
            "check_interval": number(options, "check_interval", 0.0),
            "source": options.pop("source", None),
            "uris": tuple(u for u in uris.split(",") if u),
        }
        if base.startswith("mcp+stdio:"):
            try:
                command = shlex.split(base[len("mcp+stdio:") :])
            except ValueError as exc:
                raise InvalidRepositoryConfig(f"cannot split the command of {redact_url(url)!r}: {exc}") from None
            if not command:
                raise InvalidRepositoryConfig(f"no command in {redact_url(url)!r}")
            no_more(url, options)
            return cls(command=command, **common)
        variable = options.pop("token_env", None)
        token = os.environ.get(variable) if variable else None
        if variable and not token:
            raise InvalidRepositoryConfig(f"the variable {variable!r} named by token_env is not set")
        no_more(url, options)
        market = cls(url=base[len("mcp+") :], token=token, **common)
        market._token_env = variable
        return market

    def _default_source(self) -> str:
        if self.url is not None:
            parts = urllib.parse.urlsplit(self.url)
            return make_source("mcp", parts.hostname or "", str(parts.port or ""))
        assert self.command is not None
        return make_source("mcp", os.path.basename(self.command[0]))

    @property
    def where(self) -> str:
        """The server, as locations and messages name it (credentials masked, no arguments)."""
        if self.url is not None:
            return redact_url(self.url)
        assert self.command is not None
        return f"mcp+stdio:{os.path.basename(self.command[0])}"

    # -- the connection ----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        entered = await super().__aenter__()
        # While entered, one connection is kept open by a background task (a stdio server is
        # started once, not per check); without it every operation opens its own connection.
        self._tasks = await self._stack.enter_async_context(BackgroundTasks())
        return entered

    async def _aclose(self) -> None:
        await self._stack.aclose()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Client]:
        """One connection to the server (the caller bounds how long opening may take)."""
        try:
            from mcp import Client, StdioServerParameters
            from mcp.client.streamable_http import streamable_http_client
        except ImportError as exc:
            raise RepositoryUnavailable(
                f"{self.where}: the MCP market needs the MCP Python SDK: pip install 'agent-skill-harness[mcp]'"
            ) from exc
        refused: list[int] = []  # HTTP statuses refusing the credentials, seen while connecting
        async with AsyncExitStack() as stack:
            if self.command is not None:
                server: Any = StdioServerParameters(
                    command=self.command[0], args=list(self.command[1:]), env=self._env or None
                )
            else:
                import httpx2

                headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
                auth = httpx2.BasicAuth(*self._basic) if self._basic is not None else None

                async def note_refusal(response: Any) -> None:
                    if response.status_code in (401, 403):
                        refused.append(response.status_code)

                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=headers, auth=auth, timeout=self.timeout, event_hooks={"response": [note_refusal]}
                    )
                )
                assert self.url is not None
                server = streamable_http_client(self.url, http_client=http)
            try:
                client = await stack.enter_async_context(Client(server, cache=None))
            except Exception as exc:
                # The SDK says only "Server returned an error response"; a refused credential
                # is the common cause and has a fix worth naming.
                if refused:
                    raise RepositoryUnavailable(f"{self.where}: {self._refusal(refused[0])}") from exc
                raise
            if _EXTENSION not in (client.server_capabilities.extensions or {}):
                raise RepositoryUnavailable(f"{self.where} does not serve the MCP Skills extension")
            yield client

    def _refusal(self, status: int) -> str:
        """What to do when the server refused the request with ``status`` (401 or 403)."""
        if self._basic is not None:
            return f"the server refused the user and password in the URL (HTTP {status}): check them"
        if self._token is None:
            return (
                f"the server refused the request without a token (HTTP {status}): set a variable to the token "
                "and name it in the market URL (#token_env=VARIABLE)"
            )
        where = f"the variable {self._token_env!r}" if self._token_env else "the market's token"
        return f"the server refused the token (HTTP {status}): set {where} to a token the server accepts"

    async def _use(self, work: Callable[[Client], Awaitable[T]]) -> T:
        """``work`` on a connection (the kept one while entered); every failure that is not
        already a ``RepositoryError`` becomes ``RepositoryUnavailable``."""
        try:
            if self._tasks is None:
                with anyio.fail_after(self.timeout):
                    async with self._connection() as client:
                        return await work(client)
            async with self._link_lock:
                if self._link is None or self._link.closed:
                    self._link = _Link()
                    self._tasks.start_soon(self._link.run, self._connection, name=f"harness-mcp:{self.source}")
                    await self._link.opened(self.timeout)
                link = self._link
            return await link.call(work, self.timeout)
        except RepositoryError:
            raise
        except Exception as exc:
            # Without a kept connection the work runs inside the SDK's task group, which wraps
            # what it raised (a refused file's ContentMismatch) in a group of one.
            leaf: Exception = exc
            while isinstance(leaf, ExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]
            if isinstance(leaf, RepositoryError):
                raise leaf from None
            raise RepositoryUnavailable(f"{self.where}: {_describe(exc)}") from exc

    async def _request(self, client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request the SDK has no method for (``skills/list``), answered as a plain mapping."""
        import mcp_types

        request = mcp_types.Request[dict[str, Any], str](method=method, params=params)
        result = await client.session.send_request(request, _raw_result())
        return dict(result.model_extra or {})

    # -- listing -----------------------------------------------------------------------------

    async def _version(self) -> str:
        listing = self._listing
        if listing is not None and self.check_interval and time.monotonic() - listing.checked < self.check_interval:
            return listing.version

        async def list_all(client: Client) -> tuple[list[Any], list[Any], bool]:
            entries: list[Any] = []
            cursor: str | None = None
            for _ in range(_MAX_PAGES):
                page = await self._request(client, "skills/list", {"cursor": cursor} if cursor else {})
                skills = page.get("skills")
                if not isinstance(skills, list):
                    raise RepositoryUnavailable(f"{self.where}: skills/list answered without a skills list")
                entries += skills
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    break
            listed = {entry.get("uri") for entry in entries if isinstance(entry, dict)}
            referenced = [*self.uris, *_referenced(getattr(client, "instructions", None))]
            got: list[Any] = []
            for uri in dict.fromkeys(u for u in referenced if u not in listed):
                got.append(await self._get(client, uri))
            settings = (client.server_capabilities.extensions or {}).get(_EXTENSION)
            return entries, got, isinstance(settings, dict) and settings.get("directoryRead") is True

        entries, got, directory_read = await self._use(list_all)
        self._listing = self._parse(entries, got, directory_read)
        return self._listing.version

    async def _get(self, client: Client, uri: str) -> Any:
        """The entry ``skills/get`` answers for ``uri``, or the error it answered with."""
        try:
            answer = await self._request(client, "skills/get", {"uri": uri})
        except Exception as exc:  # the server refused the URI: reported with the listing
            if not _is_protocol_error(exc):
                raise
            return InvalidBundle(f"skills/get {uri}: {_describe(exc)}")
        entry = answer.get("skill")
        if isinstance(entry, dict) and entry.get("uri") != uri:
            return InvalidBundle(f"skills/get {uri} answered for another URI {str(entry.get('uri'))[:200]!r}")
        return entry

    def _parse(self, entries: list[Any], got: list[Any], directory_read: bool) -> _Listing:
        skills: dict[str, RemoteSkill] = {}
        problems: list[str] = []
        taken: set[tuple[str, str]] = set()  # (part, name): one cache folder and one id each
        for raw in [*entries, *got]:
            try:
                if isinstance(raw, Exception):
                    raise raw
                skill, dropped = parse_entry(raw)
            except RepositoryError as exc:
                problems.append(f"skill skipped: {exc}")
                continue
            problems += dropped
            if skill.path in skills:
                problems.append(f"skill skipped: {skill.uri} is listed twice")
                continue
            if (skill.part, skill.name) in taken:  # two prefixes that fold to one slug
                tag = hashlib.sha256(skill.uri.encode()).hexdigest()[:8]
                skill = dataclasses.replace(skill, part=make_source(skill.part or "root", tag))
            taken.add((skill.part, skill.name))
            skills[skill.path] = skill
            if skill.dynamic:
                problems.append(_dynamic_problem(skill, directory_read))
        manifest = sorted(
            (s.uri, s.binding, json.dumps(s.frontmatter, sort_keys=True, default=str)) for s in skills.values()
        )
        version = hashlib.sha256(json.dumps([manifest, problems]).encode()).hexdigest()
        return _Listing(
            version=f"sha256:{version}", skills=skills, problems=tuple(problems), directory_read=directory_read
        )

    # -- bundles and files -------------------------------------------------------------------

    async def _load(self, version: str) -> Snapshot:
        listing = self._listing
        if listing is None:
            raise RepositoryUnavailable(f"{self.where}: no listing to load")
        live = {f.digest for s in listing.skills.values() for f in (s.files or {}).values()}
        self._cache.keep_only(live)
        bundles = [
            SkillBundle(
                folder=skill.name,
                skill_md=stand_in(skill.frontmatter),
                skill_md_name=MAIN,
                files=tuple(
                    BundleFile(path=path, size=file.size, mode=0o644)
                    for path, file in sorted((skill.files or {}).items())
                    if path != MAIN
                ),
                location=f"{self.where} {skill.uri}",
                digest=skill.binding,
                path=skill.path if skill.part else "",
                sub_source=skill.part,
                listed=not skill.dynamic,  # its files are found on first use (_list_files)
                on_demand=True,
                origin=skill.uri,
            )
            for skill in sorted(listing.skills.values(), key=lambda s: s.path)
        ]
        return Snapshot(version=version, bundles=tuple(bundles), problems=listing.problems)

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        skill = self._skill(folder)
        if skill.files is not None:
            missing = [p for p in paths if p not in skill.files]
            if missing:
                raise BundleNotFound(
                    f"skill {skill.path!r} of {self.source} lists no file {missing[0]!r} ({skill.uri}); "
                    "a file outside the listing is never read"
                )
        found: dict[str, bytes] = {}
        for path in paths:
            cached = self._cache.get(skill.files[path].digest) if skill.files is not None else None
            if cached is not None:
                found[path] = cached
        rest = [p for p in paths if p not in found]

        async def fetch(client: Client) -> None:
            for path in rest:
                found[path] = await self._fetch(client, skill, path)

        if rest:
            await self._use(fetch)
        return found

    async def _list_files(self, folder: str) -> FileListing | None:
        """A dynamic skill's files, found through ``resources/directory/read`` on first use and
        kept with the listing (``None`` for a listed skill: its manifest is the listing)."""
        skill = self._skill(folder)
        listing = self._listing
        if not skill.dynamic or listing is None:
            return None
        found = listing.walked.get(skill.path)
        if found is None:
            if listing.directory_read:
                found = await self._use(functools.partial(self._walk, skill=skill))
            else:  # the extension forbids asking: the SKILL.md is all that can be reached
                found = FileListing(files=(), digest=skill.binding)
            listing.walked[skill.path] = found
        return found

    async def _walk(self, client: Client, *, skill: RemoteSkill) -> FileListing:
        """Every file below a dynamic skill's root but its SKILL.md, read directory by directory
        (every page followed). A child that is not a safe path below the directory it was listed
        in is left out with a warning; past the extension's 512 files (or as many directory
        pages) the skill is refused."""
        root = skill.root.rstrip("/")
        files: dict[str, BundleFile] = {}
        pending, pages = [root], 0
        while pending:
            directory = pending.pop()
            cursor: str | None = None
            while True:
                pages += 1
                if pages > MAX_FILES:
                    raise InvalidBundle(f"{skill.uri}: its directories take more than {MAX_FILES} pages to list")
                params = {"uri": directory, **({"cursor": cursor} if cursor else {})}
                page = await self._request(client, "resources/directory/read", params)
                children = page.get("resources")
                if not isinstance(children, list):
                    raise RepositoryUnavailable(f"{self.where}: resources/directory/read {directory} has no resources")
                for child in children:
                    try:
                        uri, kind, size = _child(child, directory)
                        path = normalise_file_path(uri[len(root) + 1 :])
                    except UnsafePath as exc:
                        log.warning("%s: a child of %s is left out: %s", self.where, directory, exc)
                        continue
                    if kind == _DIRECTORY:
                        pending.append(uri)
                    elif path != MAIN:
                        files[path] = BundleFile(path=path, size=size, mode=0o644)
                if len(files) + 1 > MAX_FILES:
                    raise InvalidBundle(f"{skill.uri} holds more than the extension's limit of {MAX_FILES} files")
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    break
        listed = tuple(files[path] for path in sorted(files))
        shape = json.dumps([[f.path, f.size] for f in listed])
        return FileListing(files=listed, digest=f"{skill.binding}:{hashlib.sha256(shape.encode()).hexdigest()}")

    def _skill(self, key: str) -> RemoteSkill:
        listing = self._listing
        skill = listing.skills.get(key) if listing is not None else None
        if skill is None and listing is not None:  # a skill without a prefix is keyed by its name
            skill = next((s for s in listing.skills.values() if not s.part and s.name == key), None)
        if skill is None:
            raise BundleNotFound(f"{self.where} serves no skill {key!r} (any more)")
        return skill

    async def _fetch(self, client: Client, skill: RemoteSkill, path: str) -> bytes:
        """One file of ``skill`` through ``resources/read``, checked against its listed size and
        digest (a dynamic skill's only against the extension's size limit) and, for the SKILL.md,
        its frontmatter against the entry's; a verified file of a listed skill is cached."""
        listed = skill.files[path] if skill.files is not None else None
        uri = listed.uri if listed is not None else skill.root + path
        result = await client.read_resource(uri)
        item = next((c for c in result.contents if c.uri == uri), None)
        text, blob = getattr(item, "text", None), getattr(item, "blob", None)
        try:
            data = text.encode("utf-8") if isinstance(text, str) else base64.b64decode(blob or "", validate=True)
        except (binascii.Error, ValueError):
            data = None
        where = f"skill {skill.path!r} of {self.source}, file {path!r}"
        if item is None or data is None:
            raise ContentMismatch(f"{where}: the server answered {uri} without its content; not delivered")
        if listed is None:
            self._count_read(skill, path, len(data), where)
        else:
            digest = await anyio.to_thread.run_sync(_sha256, data) if len(data) > 1 << 20 else _sha256(data)
            if len(data) != listed.size or digest != listed.digest:
                self._recheck()
                raise ContentMismatch(
                    f"{where}: the server sent {len(data)} bytes with digest {digest}, but its listing says "
                    f"{listed.size} bytes with digest {listed.digest}; the content is refused"
                )
        if path == MAIN:
            problem = frontmatter_problem(data, skill.frontmatter)
            if problem is not None:
                raise ContentMismatch(f"{where}: {problem}; the skill is not loaded")
        if listed is not None:
            self._cache.put(listed.digest, data)
        return data

    def _count_read(self, skill: RemoteSkill, path: str, size: int, where: str) -> None:
        """Count a dynamic skill's file against the extension's 16 MiB per skill (its latest read
        of each file), which is all a skill without a manifest can be held to."""
        listing = self._listing
        sizes = listing.read.setdefault(skill.path, {}) if listing is not None else {}
        total = size + sum(n for p, n in sizes.items() if p != path)
        if total > MAX_BYTES:
            raise ContentMismatch(
                f"{where}: the files read of this dynamic skill come to {total} bytes, over the extension's "
                f"limit of {MAX_BYTES}; not delivered"
            )
        sizes[path] = size

    def _recheck(self) -> None:
        """Ask the server for a new listing on the next check: what it serves moved on."""
        if self._listing is not None:
            self._listing = dataclasses.replace(self._listing, checked=float("-inf"))

    def _invalidate(self) -> None:
        self._listing = None


class _Cache:
    """Verified file bytes by digest, the least recently used dropped past ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0

    def get(self, digest: str) -> bytes | None:
        data = self._items.get(digest)
        if data is not None:
            self._items.move_to_end(digest)
        return data

    def put(self, digest: str, data: bytes) -> None:
        if digest in self._items or len(data) > self.limit:
            return
        self._items[digest] = data
        self._size += len(data)
        while self._size > self.limit:
            self._size -= len(self._items.popitem(last=False)[1])

    def keep_only(self, digests: set[str]) -> None:
        for digest in [d for d in self._items if d not in digests]:
            self._size -= len(self._items.pop(digest))


class _Link:
    """A connection kept open by one task, which runs the work sent to it one piece at a time.

    A failure that is not a ``RepositoryError`` (a broken pipe, a server error) closes it, and so
    does a call that times out (a stuck server is dropped, not waited for); the market opens a
    new one on its next call.
    """

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[tuple[Any, _Reply]](64)
        self._scope = anyio.CancelScope()
        self._ready = anyio.Event()
        self._failure: Exception | None = None
        self.closed = False

    async def opened(self, timeout: float) -> None:
        """Wait until the connection is open; raise why it could not be (or ``TimeoutError``)."""
        with anyio.move_on_after(timeout) as waited:
            await self._ready.wait()
        if waited.cancelled_caught:
            self.closed = True
            self._scope.cancel()
            raise TimeoutError(f"no connection within {timeout} seconds")
        if self._failure is not None:
            raise self._failure

    async def run(self, connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        """Open the connection and serve calls until it breaks or is cancelled; never raises
        (it runs in the market's task group, which must outlive any one connection)."""
        try:
            with self._scope:
                async with connect() as client:
                    self._ready.set()
                    async for work, reply in self._receive:
                        try:
                            reply.value, reply.error = await work(client), None
                        except RepositoryError as exc:
                            reply.error = exc
                        except Exception as exc:
                            reply.error = exc
                            return
                        finally:
                            reply.done.set()
        except Exception as exc:
            self._failure = exc
        finally:
            self.closed = True
            self._ready.set()
            self._send.close()
            while True:
                try:
                    _, reply = self._receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
                reply.done.set()
            self._receive.close()

    async def call(self, work: Callable[[Client], Awaitable[T]], timeout: float) -> T:
        reply = _Reply()
        try:
            await self._send.send((work, reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise _closed() from None
        with anyio.move_on_after(timeout) as waited:
            await reply.done.wait()
        if waited.cancelled_caught:
            self.closed = True
            self._scope.cancel()
            raise TimeoutError(f"no answer within {timeout} seconds")
        if reply.error is not None:
            raise reply.error
        value: T = reply.value
        return value


def _closed() -> Exception:
    return RepositoryUnavailable("the connection to the MCP server closed")


@dataclass
class _Reply:
    """One call's outcome; until the work finishes it is the connection closing under it."""

    done: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None
    error: Exception | None = field(default_factory=_closed)


@functools.cache
def _raw_result() -> type[BaseModel]:
    """A result model that keeps every field as given (built on first use: pydantic is the SDK's)."""
    from pydantic import BaseModel, ConfigDict

    class RawResult(BaseModel):
        model_config = ConfigDict(extra="allow")

    return RawResult


def _dynamic_problem(skill: RemoteSkill, directory_read: bool) -> str:
    """What a listed dynamic skill costs: no digest, and without directory reads no other file."""
    problem = (
        f"skill {skill.uri} is dynamic: the server publishes no digests, so nothing of it is verified, "
        "cached or staged, and its commands do not run"
    )
    if directory_read:
        return problem + "; its files are listed with resources/directory/read and read afresh on each use"
    return problem + (
        "; the server does not declare directoryRead, the only way the extension offers to find a dynamic "
        "skill's other files, so only its SKILL.md can be read"
    )


def _child(item: Any, directory: str) -> tuple[str, str, int]:
    """``(uri, mimeType, size)`` of one ``resources/directory/read`` child (size 0 when not
    given); ``UnsafePath`` unless its URI names one plain entry directly below ``directory``."""
    uri = item.get("uri") if isinstance(item, dict) else None
    name = uri[len(directory) + 1 :] if isinstance(uri, str) and uri.startswith(directory + "/") else ""
    if not isinstance(uri, str) or not name or "/" in name or has_dot_segment(name):
        raise UnsafePath(f"{str(uri)[:200]!r} is not an entry of {directory}")
    kind, size = item.get("mimeType"), item.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        size = 0
    return uri, kind if isinstance(kind, str) else "", size


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _referenced(instructions: object) -> list[str]:
    """The ``skill://…/SKILL.md`` URIs a server's instructions name."""
    return _REFERENCE.findall(instructions) if isinstance(instructions, str) else []


def _is_protocol_error(exc: BaseException) -> bool:
    """Whether the server answered ``exc`` as a JSON-RPC error (it refused the request), rather
    than the connection failing."""
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError)


def _describe(exc: BaseException) -> str:
    """An exception (groups unwrapped to their first leaf) as one line, secrets masked."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return redact_secrets(f"{type(exc).__name__}: {text}" if str(exc) else text)


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part (percent-decoded), if any."""
    parts = urllib.parse.urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=host))
    return bare, (urllib.parse.unquote(user), urllib.parse.unquote(password))

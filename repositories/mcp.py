"""A market that reads skills from an MCP server speaking the Skills extension.

The server is any MCP server that declares ``io.modelcontextprotocol/skills`` (``harness mcp
serve`` is one): over streamable HTTP (``McpRepository(url=...)``, optionally with a bearer token)
or a command started over stdio (``McpRepository(command=[...])``). While the market is entered
(``async with``, as the harness does) one connection is kept open by a task the market owns, so
a stdio server is started once; a broken or stuck connection is dropped and the next call opens
a new one. Outside ``async with`` each operation opens its own. The market talks the protocol
only:

- ``skills/list`` (every page) is the version token: the ``sha256:`` digests and sizes of every
  listed file, hashed together. Equal listings mean equal content, so an unchanged server costs
  one request per check (``check_interval`` seconds may be given to ask less often).
- Each skill's ``SKILL.md`` is read through ``resources/read`` when a new listing is loaded (the
  bundle contract carries it); its other files only when asked for. Every read is checked
  against the listing's size and digest; content that differs is refused, never delivered.
- Hostile listings lose only what is wrong: an entry whose URI is not ``…/<name>/SKILL.md`` with a
  safe folder name, a skill over the extension's limits (512 files, 16 MiB) or without a file
  manifest (``"dynamic"``) is skipped, an unsafe file path dropped, each with a problem in the
  snapshot.
- The origin is in the source slug (``mcp-<host>-<port>``, ``mcp-<command>``) and in each bundle's
  location (the server and the skill's URI). When the server cannot be reached the last good
  snapshot is served (see :class:`~repositories.base.SkillRepository`).

The MCP SDK (the ``mcp`` extra) is imported only when the market first talks to its server.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import json
import os
import re
import shlex
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio

from filesystems import BackgroundTasks, redact_secrets, redact_url
from repositories._urls import no_more, number, split_fragment
from repositories.base import BundleFile, SkillBundle, SkillRepository, Snapshot
from repositories.discovery import check_folder, normalise_file_path
from repositories.errors import (
    BundleNotFound,
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

#: The Skills extension's per-skill limits: files (SKILL.md included) and their total size.
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
_SCHEME = "skill://"
_MAIN = "SKILL.md"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_MAX_PAGES = 1000


@dataclass(frozen=True, slots=True)
class _RemoteFile:
    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class _RemoteSkill:
    folder: str
    uri: str  # of its SKILL.md
    files: Mapping[str, _RemoteFile]  # relative path -> file, SKILL.md included
    digest: str


@dataclass(frozen=True, slots=True)
class _Listing:
    version: str
    skills: Mapping[str, _RemoteSkill]  # folder -> skill
    problems: tuple[str, ...] = ()
    checked: float = field(default_factory=time.monotonic)


class McpRepository(SkillRepository):
    """Skills served by an MCP server (see the module docstring).

    Give exactly one of ``url`` (streamable HTTP; ``token`` is sent as ``Authorization: Bearer``;
    a ``user:password@`` in the URL is taken out of it and sent as HTTP Basic auth, so the URL the
    MCP SDK sees, and may log, holds no credentials) or ``command`` (the server's argv, run over stdio; ``env`` adds variables). ``timeout`` bounds
    opening a connection and each piece of work on it, in seconds; ``check_interval`` lets a
    listing stand that long before the server is asked again.
    """

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
        super().__init__(source=source or self._default_source())
        self._listing: _Listing | None = None
        self._main_files: dict[str, bytes] = {}  # SKILL.md bytes by digest
        self._stack = AsyncExitStack()
        self._tasks: BackgroundTasks | None = None
        self._link: _Link | None = None
        self._link_lock = anyio.Lock()

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market an ``mcp+https://``, ``mcp+http://`` or ``mcp+stdio:<command …>`` URL names;
        fragment options ``timeout``, ``check_interval``, ``source`` and, over HTTP, ``token_env``
        (the variable holding the bearer token). Raises ``InvalidRepositoryConfig``."""
        base, options = split_fragment(url)
        common: dict[str, Any] = {
            "timeout": number(options, "timeout", 30.0),
            "check_interval": number(options, "check_interval", 0.0),
            "source": options.pop("source", None),
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
            if "io.modelcontextprotocol/skills" not in (client.server_capabilities.extensions or {}):
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

        async def list_all(client: Client) -> list[Any]:
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
            return entries

        self._listing = self._parse(await self._use(list_all))
        return self._listing.version

    def _parse(self, entries: list[Any]) -> _Listing:
        skills: dict[str, _RemoteSkill] = {}
        problems: list[str] = []
        for raw in entries:
            try:
                skill, dropped = self._parse_entry(raw)
            except RepositoryError as exc:
                problems.append(f"skill skipped: {exc}")
                continue
            problems += dropped
            if skill.folder in skills:
                problems.append(f"skill skipped: {skill.uri} repeats the folder name {skill.folder!r}")
                continue
            skills[skill.folder] = skill
        manifest = sorted((s.uri, f.uri, f.digest, f.size) for s in skills.values() for f in s.files.values())
        version = hashlib.sha256(json.dumps([manifest, problems]).encode()).hexdigest()
        return _Listing(version=f"sha256:{version}", skills=skills, problems=tuple(problems))

    def _parse_entry(self, raw: Any) -> tuple[_RemoteSkill, list[str]]:
        uri = raw.get("uri") if isinstance(raw, dict) else None
        if not isinstance(uri, str) or not uri.startswith(_SCHEME) or not uri.endswith("/" + _MAIN):
            raise InvalidBundle(f"entry URI {str(uri)[:200]!r} is not a {_SCHEME}<path>/{_MAIN} URI")
        root = uri[: -len(_MAIN)]
        folder = check_folder(root[len(_SCHEME) :].rstrip("/").rpartition("/")[2])
        resources = raw.get("resources")
        if not isinstance(resources, list):
            raise InvalidBundle(f"{uri} has no file manifest (resources {str(resources)[:40]!r}); not loaded")
        if len(resources) > MAX_FILES:
            raise InvalidBundle(f"{uri} lists {len(resources)} files, over the extension's limit of {MAX_FILES}")
        files: dict[str, _RemoteFile] = {}
        dropped: list[str] = []
        for item in resources:
            file = _remote_file(item)
            if file is None or not file.uri.startswith(root):
                raise InvalidBundle(f"{uri} lists a malformed or foreign file {str(item)[:200]!r}")
            try:
                path = normalise_file_path(file.uri[len(root) :])
            except UnsafePath as exc:
                dropped.append(f"file of {uri} dropped: {exc}")
                continue
            files[path] = file
        total = sum(f.size for f in files.values())
        if total > MAX_BYTES:
            raise InvalidBundle(f"{uri} lists {total} bytes, over the extension's limit of {MAX_BYTES}")
        if _MAIN not in files:
            raise InvalidBundle(f"{uri} does not list its own {_MAIN}")
        digest = hashlib.sha256(json.dumps(sorted((p, f.digest) for p, f in files.items())).encode()).hexdigest()
        return _RemoteSkill(folder=folder, uri=uri, files=files, digest=digest), dropped

    # -- bundles and files -------------------------------------------------------------------

    async def _load(self, version: str) -> Snapshot:
        listing = self._listing
        if listing is None:
            raise RepositoryUnavailable(f"{self.where}: no listing to load")
        problems = list(listing.problems)
        wanted = [s.files[_MAIN] for s in listing.skills.values() if s.files[_MAIN].digest not in self._main_files]

        async def fetch_main_files(client: Client) -> None:
            for file in wanted:
                try:
                    self._main_files[file.digest] = await self._fetch(client, file)
                except RepositoryUnavailable as exc:
                    problems.append(f"skill skipped: {exc}")

        if wanted:
            await self._use(fetch_main_files)
        live = {s.files[_MAIN].digest for s in listing.skills.values()}
        self._main_files = {d: data for d, data in self._main_files.items() if d in live}
        bundles = [
            SkillBundle(
                folder=skill.folder,
                skill_md=self._main_files[skill.files[_MAIN].digest],
                skill_md_name=_MAIN,
                files=tuple(
                    BundleFile(path=path, size=file.size, mode=0o644)
                    for path, file in sorted(skill.files.items())
                    if path != _MAIN
                ),
                location=f"{self.where} {skill.uri}",
                digest=skill.digest,
            )
            for skill in sorted(listing.skills.values(), key=lambda s: s.folder)
            if skill.files[_MAIN].digest in self._main_files
        ]
        return Snapshot(version=version, bundles=tuple(bundles), problems=tuple(problems))

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        listing = self._listing
        skill = listing.skills.get(folder) if listing is not None else None
        if skill is None:
            raise BundleNotFound(f"{self.where} serves no skill folder {folder!r}")
        missing = [p for p in paths if p not in skill.files]
        if missing:
            raise BundleNotFound(f"{skill.uri} lists no file {missing[0]!r}")
        found = {p: self._main_files[skill.files[p].digest] for p in paths if skill.files[p].digest in self._main_files}
        rest = [p for p in paths if p not in found]

        async def fetch(client: Client) -> None:
            for path in rest:
                found[path] = await self._fetch(client, skill.files[path])

        if rest:
            await self._use(fetch)
        return found

    async def _fetch(self, client: Client, file: _RemoteFile) -> bytes:
        """One file through ``resources/read``, checked against its listed size and digest."""
        result = await client.read_resource(file.uri)
        item = next((c for c in result.contents if c.uri == file.uri), None)
        text, blob = getattr(item, "text", None), getattr(item, "blob", None)
        try:
            data = text.encode("utf-8") if isinstance(text, str) else base64.b64decode(blob or "", validate=True)
        except (binascii.Error, ValueError):
            data = None
        if item is None or data is None or len(data) != file.size:
            self._recheck()
            raise RepositoryUnavailable(f"{file.uri} is not the {file.size} bytes its listing says; not delivered")
        digest = await anyio.to_thread.run_sync(_sha256, data) if len(data) > 1 << 20 else _sha256(data)
        if digest != file.digest:
            self._recheck()
            raise RepositoryUnavailable(f"{file.uri} does not match its listed digest; not delivered")
        return data

    def _recheck(self) -> None:
        """Ask the server for a new listing on the next check: what it serves moved on."""
        if self._listing is not None:
            self._listing = dataclasses.replace(self._listing, checked=float("-inf"))

    def _invalidate(self) -> None:
        self._listing = None


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


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _remote_file(item: Any) -> _RemoteFile | None:
    if not isinstance(item, dict):
        return None
    uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    if not isinstance(uri, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_BYTES:
        return None
    return _RemoteFile(uri=uri, digest=digest, size=size)


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

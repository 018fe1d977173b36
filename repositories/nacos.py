"""Skills from a Nacos 3.x AI registry (``nacos-sdk-python`` 3.x, extra ``[nacos]``, imported lazily).

Nacos serves each skill as a ZIP package, downloaded by name and optionally by ``version`` or
``label`` (``latest``, ``stable``, ...) through the SDK's ``NacosAIService.download_skill_zip``.
Nacos has no call that lists every skill of a namespace, so the skill names are configured.

A package holds ``<name>/SKILL.md`` and the skill's other files below ``<name>/``. It is checked
by :class:`repositories.archives.ZipPackage`: absolute paths, ``..``, backslashes, control
characters, version-control metadata (``.git/…``; other dot-files are served), links and other
non-regular entries, and entries over ``max_file_size`` are skipped, each named in a problem
with the skill (the first :data:`~repositories.archives.MAX_NAMED_SKIPS`, the rest counted); a
package over ``max_package_size`` (as downloaded, streamed and cut off at the cap, or as
unpacked, declared or actually decompressed), one whose entries name one path twice (``a/b``
and ``a//b`` included), one that is not a ZIP archive or holds no ``SKILL.md``, costs only that
skill, whose previous good package keeps being served if
there was one. The SDK itself refuses packages with ``..`` or absolute entry names before they
reach the harness; those are reported the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import time
import urllib.parse
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Self

import anyio
import anyio.to_thread

from filesystems import redact_secrets
from filesystems.paths import relative_path_problem
from repositories._urls import no_more, number
from repositories.archives import ZipPackage
from repositories.base import BundleFile, FileContents, SkillBundle, SkillBundleContents, SkillRepository, Snapshot
from repositories.discovery import FILE, Child, check_folder, discover, shown, tree_from_paths
from repositories.errors import BundleNotFound, InvalidBundle, InvalidRepositoryConfig, RepositoryUnavailable
from repositories.memory import bundle_digest
from repositories.sources import make_source

__all__ = ["DEFAULT_MAX_PACKAGE_SIZE", "NacosRepository", "default_log_dir"]

DEFAULT_MAX_FILE_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_PACKAGE_SIZE = 64 * 1024 * 1024
"""The uncompressed size a skill package may reach before it is refused (a ZIP bomb guard)."""

# The SDK adds a file handler to this logger for every client it builds; it is removed on close.
_SDK_LOGGER = "naming"


def default_log_dir() -> Path:
    """``$XDG_CACHE_HOME/agent-skill-harness/nacos`` (``~/.cache/...`` when unset): the SDK's logs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent-skill-harness" / "nacos"


class _Sdk(NamedTuple):
    """The parts of nacos-sdk-python the market uses."""

    ClientConfig: Any
    NacosAIService: Any
    DownloadSkillParam: Any
    NacosException: Any
    SecurityError: type[Exception]
    NOT_FOUND: int


def _import_sdk() -> _Sdk:
    """The SDK, imported on first use; its import-time deprecation warnings are the SDK's own."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from v2.nacos import ClientConfig, NacosException
            from v2.nacos.ai.model.ai_param import DownloadSkillParam
            from v2.nacos.ai.nacos_ai_service import NacosAIService
            from v2.nacos.ai.util.skill_util import SecurityError
            from v2.nacos.common.nacos_exception import NOT_FOUND
    except ImportError as exc:
        raise RepositoryUnavailable(
            f"Nacos markets need nacos-sdk-python 3.x (pip install 'agent-skill-harness[nacos]'): {exc}"
        ) from exc
    return _Sdk(ClientConfig, NacosAIService, DownloadSkillParam, NacosException, SecurityError, NOT_FOUND)


@dataclass(frozen=True, kw_only=True)
class _Package:
    """One skill's package, unpacked and checked."""

    contents: SkillBundleContents
    digest: str
    problems: tuple[str, ...]


class _BadPackage(Exception):
    """A downloaded package that cannot be served (the reason is the message)."""


class _PackageTooLarge(Exception):
    """A download stopped at the size cap (the reason is the message)."""


class _CappedDownloads:
    """The SDK's ``HttpAgent.request`` for skill downloads, reading the body in chunks and
    giving up past ``limit`` bytes instead of reading it whole first.

    It answers as the SDK's agent does — ``(body, None)`` for 200, ``(None, "HTTP error: <status>
    - <reason>")`` otherwise, ``(None, exc)`` when the request fails — so the SDK's own error
    handling (404 is "not found", other servers are tried) is unchanged; an oversized body raises
    :class:`_PackageTooLarge`, which the SDK lets through.
    """

    def __init__(self, agent: Any, limit: int) -> None:
        self._agent = agent
        self.limit = limit

    async def request(
        self, url: str, method: str, headers: dict[str, str] | None = None, params: dict[str, str] | None = None
    ) -> tuple[bytes | None, Any]:
        import aiohttp

        if params:
            url += "?" + urllib.parse.urlencode(params)
        ssl = self._agent.ssl_context
        connector = aiohttp.TCPConnector(ssl=ssl) if ssl else aiohttp.TCPConnector()
        timeout = aiohttp.ClientTimeout(total=self._agent.default_timeout)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, connector=connector) as session,
                session.request(method, url, headers=headers or {}) as response,
            ):
                if response.status != 200:
                    return None, f"HTTP error: {response.status} - {response.reason}"
                return await self._body(response.content, response.content_length), None
        except (aiohttp.ClientError, TimeoutError) as exc:
            return None, exc

    async def _body(self, content: Any, declared: int | None) -> bytes:
        too_large = f"the download is larger than {self.limit} bytes"
        if declared is not None and declared > self.limit:
            raise _PackageTooLarge(too_large)
        body = bytearray()
        async for chunk in content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > self.limit:
                raise _PackageTooLarge(too_large)
        return bytes(body)


class NacosRepository(SkillRepository):
    """The skills ``skills`` of one Nacos namespace.

    ``server`` is ``host:port`` (or several, comma-separated or as a list: the SDK tries them in
    turn); ``namespace`` defaults to ``public``; ``context_path`` to ``/nacos``. Give at most
    one of ``version`` (an exact version of every skill) and ``label`` (a route label such as
    ``stable``); without either Nacos serves each skill's latest version. Credentials:
    ``username``/``password`` (Nacos auth: the SDK logs in and sends the access token) and/or
    ``access_key``/``secret_key`` (signed requests). They never appear in messages or locations.

    ``version()`` is a hash over the content of the downloaded packages (and what was reported
    about them). Nacos offers no cheaper change token, so checking means downloading every
    configured package; it happens at most once per ``check_interval`` seconds (default 30; 0
    checks on every call) and on ``refresh()``.
    A skill the server does not know is reported and left out; when the server cannot be reached
    (or a request takes longer than ``timeout`` seconds) the last good skill set keeps being
    served and the failure is reported in ``Snapshot.error``. Slug: ``nacos-<namespace>``.

    The SDK writes its own log file; it goes to ``log_dir`` (default :func:`default_log_dir`).
    """

    def __init__(
        self,
        server: str | Sequence[str],
        *,
        namespace: str = "public",
        skills: Sequence[str],
        version: str | None = None,
        label: str | None = None,
        username: str | None = None,
        password: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        context_path: str = "/nacos",
        check_interval: float = 30.0,
        timeout: float = 10.0,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        max_package_size: int = DEFAULT_MAX_PACKAGE_SIZE,
        log_dir: str | os.PathLike[str] | None = None,
        source: str | None = None,
    ) -> None:
        servers = [s.strip() for s in (server.split(",") if isinstance(server, str) else server) if s.strip()]
        if not servers or any("/" in s or "@" in s for s in servers):
            raise InvalidRepositoryConfig(
                f"Nacos server must be host:port (or several, comma-separated), not {server!r}"
            )
        if not namespace or relative_path_problem(namespace) or "/" in namespace:
            raise InvalidRepositoryConfig(f"invalid Nacos namespace {namespace!r}")
        if version and label:
            raise InvalidRepositoryConfig("give a Nacos skill version or a label, not both")
        if check_interval < 0 or not timeout > 0:
            raise InvalidRepositoryConfig("check_interval must be >= 0 and timeout > 0")
        if max_file_size < 1 or max_package_size < max_file_size:
            raise InvalidRepositoryConfig("need 1 <= max_file_size <= max_package_size")
        names = list(skills)
        if not names:
            raise InvalidRepositoryConfig(
                "a Nacos market needs the skill names to serve (skills=[...]): Nacos has no call listing them"
            )
        for name in names:
            try:
                check_folder(name)
            except InvalidBundle as exc:
                raise InvalidRepositoryConfig(f"Nacos skill name: {exc}") from None
        if len(set(names)) != len(names):
            raise InvalidRepositoryConfig(f"Nacos skill names repeat: {names}")
        super().__init__(source=source or make_source("nacos", namespace))
        self.servers = tuple(servers)
        self.namespace = namespace
        self.skills = tuple(names)
        self.skill_version = version or None
        self.label = label or None
        self.context_path = context_path
        self.check_interval = check_interval
        self.timeout = timeout
        self.max_file_size = max_file_size
        self.max_package_size = max_package_size
        self.log_dir = Path(log_dir) if log_dir is not None else default_log_dir()
        self._credentials = {"username": username, "password": password, "access_key": access_key}
        self._secrets = tuple(s for s in (password, secret_key) if s)
        self._secret_key = secret_key
        self._service: Any = None
        self._handlers: list[logging.Handler] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._packages: dict[str, _Package] = {}
        self._problems: tuple[str, ...] = ()
        self._token: str | None = None
        self._failure: RepositoryUnavailable | None = None
        self._checked_at = -math.inf
        self._check_lock = anyio.Lock()

    @classmethod
    def from_url(cls, url: str) -> Self:
        """The market a ``nacos://user:pass@host:8848/namespace?skills=a,b`` URL names; the query
        holds the constructor's options. Raises ``InvalidRepositoryConfig``."""
        parts = urllib.parse.urlsplit(url)
        options = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        userinfo, _, servers = parts.netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        names = [name for name in options.pop("skills", "").split(",") if name]
        repo = cls(
            servers,
            namespace=urllib.parse.unquote(parts.path.strip("/")) or "public",
            skills=names,
            version=options.pop("version", None) or None,
            label=options.pop("label", None) or None,
            username=urllib.parse.unquote(user) or None,
            password=urllib.parse.unquote(password) or None,
            context_path=options.pop("context_path", "/nacos"),
            check_interval=number(options, "check_interval", 30.0),
            timeout=number(options, "timeout", 10.0),
            log_dir=options.pop("log_dir", None) or None,
            source=options.pop("source", None),
        )
        no_more(url, options)
        return repo

    @property
    def where(self) -> str:
        """``nacos://host:port/namespace``: what locations and messages show (no credentials)."""
        return f"nacos://{','.join(self.servers)}/{self.namespace}"

    def _selector(self) -> str:
        if self.skill_version:
            return f"@{self.skill_version}"
        return f"@label={self.label}" if self.label else ""

    # Change detection.

    async def _version(self) -> str:
        async with self._check_lock:
            if time.monotonic() - self._checked_at >= self.check_interval or self._token is None:
                self._checked_at = time.monotonic()
                self._failure = None
                try:
                    await self._check()
                except RepositoryUnavailable as exc:
                    self._failure = exc
            if self._failure is not None:  # until the next check, every read reports the failure
                raise self._failure.with_traceback(None)
            assert self._token is not None  # set by a successful check
            return self._token

    def _invalidate(self) -> None:
        self._checked_at = -math.inf

    async def _check(self) -> None:
        """Download every configured package; keeps the current set unless all could be asked."""
        packages = dict(self._packages)
        problems: list[str] = []
        for name in self.skills:
            try:
                data = await self._download(name)
            except BundleNotFound as exc:
                packages.pop(name, None)
                problems.append(str(exc))
                continue
            except _BadPackage as exc:
                problems.append(self._refused(name, str(exc), name in packages))
                continue
            try:
                package = await anyio.to_thread.run_sync(self._unpack, name, data)
            except _BadPackage as exc:
                problems.append(self._refused(name, str(exc), name in packages))
                continue
            packages[name] = package
            problems.extend(package.problems)
        token = hashlib.sha256()
        for name in sorted(packages):
            token.update(f"{name}\0{packages[name].digest}\n".encode())
        for problem in problems:  # a new diagnostic must reach the snapshot even when no content moved
            token.update(f"{problem}\n".encode())
        self._packages, self._problems, self._token = packages, tuple(problems), token.hexdigest()

    def _refused(self, name: str, reason: str, kept: bool) -> str:
        served = "; the previous package is still served" if kept else ""
        return f"skill {shown(name)}: package refused: {reason}{served}"

    # The SDK.

    def _client(self) -> Any:
        if self._service is None:
            sdk = _import_sdk()
            self.log_dir.mkdir(parents=True, exist_ok=True)
            config = sdk.ClientConfig(
                server_addresses=",".join(self.servers),
                namespace_id=self.namespace,
                context_path=self.context_path,
                username=self._credentials["username"],
                password=self._credentials["password"],
                access_key=self._credentials["access_key"],
                secret_key=self._secret_key,
                log_dir=str(self.log_dir),
                log_level=logging.WARNING,
            )
            config.set_cache_dir(str(self.log_dir / "cache"))
            logger = logging.getLogger(_SDK_LOGGER)
            handlers, tasks = set(logger.handlers), asyncio.all_tasks()
            try:
                self._service = sdk.NacosAIService(config)
                proxy = self._service.http_client_proxy  # the downloads' own agent; logins keep the SDK's
                proxy.http_agent = _CappedDownloads(self._service.http_agent, self.max_package_size)
            finally:
                # The SDK leaves a log handler and, with a password, a login task behind.
                self._handlers = [h for h in logger.handlers if h not in handlers]
                self._tasks = list(asyncio.all_tasks() - tasks)
            for task in self._tasks:
                task.add_done_callback(_retrieve)  # a failed login shows as a failed download
        return self._service

    async def _download(self, name: str) -> bytes:
        """One package's bytes; ``BundleNotFound`` when the server has no such skill,
        ``_BadPackage`` when the SDK refused what came back, else ``RepositoryUnavailable``."""
        sdk = _import_sdk()
        param = sdk.DownloadSkillParam(skill_name=name, version=self.skill_version, label=self.label)
        try:
            with anyio.fail_after(self.timeout):
                data: bytes = await self._client().download_skill_zip(param)
        except _PackageTooLarge as exc:
            raise _BadPackage(str(exc)) from None
        except sdk.NacosException as exc:
            if exc.error_code == sdk.NOT_FOUND and await self._answers():
                raise BundleNotFound(
                    f"skill {shown(name)}{self._selector()} not found in {self.where}: skipped"
                ) from None
            if isinstance(exc.__context__, (ValueError, sdk.SecurityError)):
                raise _BadPackage(redact_secrets(str(exc.__context__), *self._secrets)) from None
            raise self._unavailable(name, exc) from None
        except (zipfile.BadZipFile, ValueError, sdk.SecurityError) as exc:  # the SDK's checks on the bytes
            raise _BadPackage(f"not a ZIP archive: {exc}") from None
        except (TimeoutError, OSError) as exc:
            raise self._unavailable(name, exc) from None
        return data

    async def _answers(self) -> bool:
        """Whether a configured server accepts a connection. The SDK reports any failed request
        whose error text holds "404" as "not found" (a refused connection to port 40413 does), so
        a skill counts as gone only when a server answered: an outage keeps the last good one."""
        for server in self.servers:
            host, _, port = urllib.parse.urlsplit(server if "//" in server else f"//{server}").netloc.rpartition(":")
            try:
                with anyio.fail_after(self.timeout):
                    stream = await anyio.connect_tcp(host or port, int(port) if host else 8848)
                await stream.aclose()
                return True
            except (OSError, TimeoutError, ValueError):
                continue
        return False

    def _unavailable(self, name: str, exc: BaseException) -> RepositoryUnavailable:
        detail = redact_secrets(str(exc) or type(exc).__name__, *self._secrets)
        return RepositoryUnavailable(f"{self.where}: cannot download skill {shown(name)}: {detail}")

    # Packages.

    def _unpack(self, name: str, data: bytes) -> _Package:
        """Check and unpack one package (in a worker thread)."""
        try:
            with ZipPackage(data, max_file_size=self.max_file_size, max_total_size=self.max_package_size) as package:
                return self._contents(name, package)
        except InvalidBundle as exc:  # ArchiveRefused, or a bundle the checks below refuse
            raise _BadPackage(str(exc)) from None

    def _contents(self, name: str, package: ZipPackage) -> _Package:
        """The skill ``name`` of a checked package, with what was skipped and why."""
        problems = [f"skill {shown(name)}: {problem}" for problem in package.problems]
        entries = {entry.path: entry for entry in package.entries}
        children = [
            (path, Child(path.rsplit("/", 1)[-1], FILE, path, entry.size, entry.mode, f"{entry.crc:08x}"))
            for path, entry in entries.items()
        ]
        found = discover("", tree_from_paths(children), root_name=name, read=lambda path: package.read(entries[path]))
        problems.extend(f"skill {shown(name)}: {problem}" for problem in found.problems)
        layout = next((s for s in found.skills if s.folder == name), None)
        if layout is None and len(found.skills) == 1:
            layout = found.skills[0]
        if layout is None:
            raise _BadPackage(
                "it holds no SKILL.md"
                if not found.skills
                else f"it holds {len(found.skills)} skills, none named {name!r}"
            )
        files = tuple(
            FileContents(path=layout.relative(e), data=package.read(entries[e.node]), mode=e.mode) for e in layout.files
        )
        contents = SkillBundleContents(
            folder=name,
            skill_md=package.read(entries[layout.main.node]),
            skill_md_name=layout.skill_md_name,
            files=files,
        )
        return _Package(contents=contents, digest=bundle_digest(contents), problems=tuple(problems))

    # Snapshots and files.

    async def _load(self, version: str) -> Snapshot:
        # The packages are in memory already; a check that landed since ``version`` was read
        # only makes this snapshot newer, and it carries that newer token.
        bundles = tuple(
            SkillBundle(
                folder=name,
                skill_md=package.contents.skill_md,
                skill_md_name=package.contents.skill_md_name,
                files=tuple(BundleFile(path=f.path, size=len(f.data), mode=f.mode) for f in package.contents.files),
                location=f"{self.where}/{name}{self._selector()}",
                digest=package.digest,
            )
            for name, package in sorted(self._packages.items())
        )
        assert self._token is not None  # _load follows a successful _version()
        return Snapshot(version=self._token, bundles=bundles, problems=self._problems)

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        if self._token is None:  # nothing downloaded yet
            await self._version()
        package = self._packages.get(folder)
        if package is None:
            raise BundleNotFound(f"{self.where}: no skill {folder!r}")
        return package.contents.read(paths, where=f"{self.where}/{folder}")

    async def _aclose(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            await service.http_client_proxy.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        logger = logging.getLogger(_SDK_LOGGER)
        for handler in self._handlers:
            logger.removeHandler(handler)
            handler.close()
        self._handlers = []


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()

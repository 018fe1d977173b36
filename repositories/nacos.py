"""Skills from a Nacos 3.x AI registry (``nacos-sdk-python`` 3.x, extra ``[nacos]``, imported lazily).

Nacos serves each skill as a ZIP package, downloaded by name and optionally by ``version`` or
``label`` (``latest``, ``stable``, ...) through the SDK's ``NacosAIService.download_skill_zip``.
Nacos has no call that lists every skill of a namespace, so the skill names are configured.

A package holds ``<name>/SKILL.md`` and the skill's other files below ``<name>/``. Every entry is
checked with the rules the other markets use (``filesystems.paths``): absolute paths, ``..``,
backslashes, control characters and version-control folders, links and other non-regular
entries, and entries over ``max_file_size`` are skipped and reported; a package over
``max_package_size`` (uncompressed), or one that is not a ZIP archive or holds no ``SKILL.md``,
costs only that skill, whose previous good package keeps being served if there was one. The SDK
itself refuses packages with ``..`` or absolute entry names before they reach the harness; those
are reported the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import math
import os
import stat
import time
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import anyio.to_thread

from filesystems import redact_secrets
from filesystems.paths import relative_path_problem
from repositories.base import BundleFile, FileContents, SkillBundle, SkillBundleContents, SkillRepository, Snapshot
from repositories.discovery import FILE, OTHER, SYMLINK, Child, check_folder, discover, shown, tree_from_paths
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
        except sdk.NacosException as exc:
            if exc.error_code == sdk.NOT_FOUND:
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

    def _unavailable(self, name: str, exc: BaseException) -> RepositoryUnavailable:
        detail = redact_secrets(str(exc) or type(exc).__name__, *self._secrets)
        return RepositoryUnavailable(f"{self.where}: cannot download skill {shown(name)}: {detail}")

    # Packages.

    def _unpack(self, name: str, data: bytes) -> _Package:
        """Check and unpack one package (in a worker thread)."""
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError) as exc:
            raise _BadPackage(f"not a ZIP archive: {exc}") from None
        with archive:
            problems, children = self._entries(name, archive)
            found = discover("", tree_from_paths(children), root_name=name, read=archive.read)
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
            try:
                files = tuple(
                    FileContents(path=layout.relative(e), data=archive.read(e.node), mode=e.mode) for e in layout.files
                )
                contents = SkillBundleContents(
                    folder=name,
                    skill_md=archive.read(layout.main.node),
                    skill_md_name=layout.skill_md_name,
                    files=files,
                )
            except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, InvalidBundle) as exc:
                raise _BadPackage(f"cannot unpack: {exc}") from None
        return _Package(contents=contents, digest=bundle_digest(contents), problems=tuple(problems))

    def _entries(self, name: str, archive: zipfile.ZipFile) -> tuple[list[str], list[tuple[str, Child[str]]]]:
        """The package's entries as a tree listing, each checked; what was skipped and why."""
        problems: list[str] = []
        children: list[tuple[str, Child[str]]] = []
        seen: set[str] = set()
        total = 0
        for info in archive.infolist():
            path = info.filename
            if info.is_dir():
                continue
            where = f"skill {shown(name)}: entry {shown(path)}"
            problem = relative_path_problem(path)
            if problem or path in seen:
                problems.append(f"{where} skipped: {problem or 'it appears twice'}")
                continue
            kind, mode = _kind_and_mode(info)
            if kind != FILE:
                problems.append(f"{where} skipped: {'a symlink' if kind == SYMLINK else 'not a regular file'}")
                continue
            if info.flag_bits & 0x1:
                problems.append(f"{where} skipped: it is encrypted")
                continue
            if info.file_size > self.max_file_size:
                problems.append(f"{where} skipped: {info.file_size} bytes, over the {self.max_file_size}-byte limit")
                continue
            total += info.file_size
            if total > self.max_package_size:
                raise _BadPackage(f"it unpacks to more than {self.max_package_size} bytes")
            seen.add(path)
            token = f"{info.CRC:08x}"
            children.append((path, Child(path.rsplit("/", 1)[-1], FILE, path, info.file_size, mode, token)))
        folders = {path.rsplit("/", 1)[0] for path in seen if "/" in path}
        prefixes = {"/".join(p.split("/")[:i]) for p in folders for i in range(1, p.count("/") + 2)}
        clashes = seen & prefixes
        for path in sorted(clashes):
            problems.append(f"skill {shown(name)}: entry {shown(path)} skipped: a folder of the same name exists")
        return problems, [item for item in children if item[0] not in clashes]

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
        data = {f.path: f.data for f in package.contents.files}
        data[package.contents.skill_md_name] = package.contents.skill_md
        missing = [p for p in paths if p not in data]
        if missing:
            raise BundleNotFound(f"{self.where}/{folder}: {missing[0]} does not exist")
        return {p: data[p] for p in paths}

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


def _kind_and_mode(info: zipfile.ZipInfo) -> tuple[str, int]:
    """What an entry is (file, symlink, other) and its permission bits.

    Unix ZIP tools keep ``st_mode`` in the high bits of ``external_attr``; archives written
    elsewhere carry none, and their files are plain ``0644`` files.
    """
    unix = info.external_attr >> 16 if info.create_system == 3 else 0
    kind = stat.S_IFMT(unix)
    if stat.S_ISLNK(unix):
        return SYMLINK, 0
    if kind not in (0, stat.S_IFREG):
        return OTHER, 0
    return FILE, (unix & 0o777) or 0o644

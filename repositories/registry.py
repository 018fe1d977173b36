"""Repository URLs for the CLI and configuration files.

=====================================================  =========================================
URL                                                    repository
=====================================================  =========================================
``dir:/path/to/skills`` or a bare path                 ``DirectoryRepository``
``git+https://host/owner/repo.git#branch=main&subdir=skills``
``git+ssh://git@host/owner/repo.git``, ``git+file:///srv/repo.git``, ``git+http://…``
                                                       ``GitRepository`` (fragment options:
                                                       ``branch``, ``subdir``,
                                                       ``check_interval``, ``check_budget``,
                                                       ``background_refresh``, ``auto_sync``,
                                                       ``shallow``, ``cache_dir``)
``mysql://user:pass@host:3306/db?table=skills``        ``MySQLRepository`` (query options:
                                                       ``table``, ``writable``,
                                                       ``create_if_missing``)
``pkg:package[/folder]``                               ``PackageRepository`` (folder ``skills``)
``entrypoints:harness.skills``                         ``EntryPointRepository``
``nacos://user:pass@host:8848/namespace?skills=a,b&label=stable``
                                                       ``NacosRepository`` (query options:
                                                       ``skills`` (required), ``label`` or
                                                       ``version``, ``check_interval``,
                                                       ``timeout``, ``context_path``,
                                                       ``log_dir``; several servers as
                                                       ``host1:8848,host2:8848``)
``claude-plugins+dir:/path/to/marketplace``            ``PluginMarketplaceRepository`` over a
``claude-plugins+git+https://host/owner/repo.git``     folder or a git repository (the git
(also ``+git+ssh``, ``+git+file``, ``+git+http``)      form takes the git options above;
                                                       both take ``cache_dir`` for remote
                                                       plugins' clones and
                                                       ``allowed_schemes=https,ssh`` for the
                                                       schemes plugin sources may use;
                                                       ``file`` only for a local marketplace)
``mcp+https://host/mcp#token_env=VAR``, ``mcp+http://…``  ``McpRepository`` over streamable HTTP
                                                       (fragment options: ``token_env``, the
                                                       variable holding the bearer token;
                                                       ``timeout``, ``check_interval``)
``mcp+stdio:<command …>``                              ``McpRepository`` over a command's
                                                       stdio (split shell-style; ``timeout``,
                                                       ``check_interval`` as fragment)
=====================================================  =========================================

Every URL also takes ``source=<slug>`` (fragment, or query for ``mysql``). Third parties add
schemes with :func:`register_scheme` or through the entry-point group ``harness.repositories``
(name = scheme, value = a callable taking the URL and returning a ``SkillRepository``).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import urllib.parse
from collections.abc import Callable
from typing import Any

from filesystems import redact_url
from repositories.base import SkillRepository
from repositories.directory import DirectoryRepository
from repositories.errors import InvalidRepositoryConfig, UnknownScheme
from repositories.git import GitRepository
from repositories.mcp import McpRepository
from repositories.mysql import MySQLRepository
from repositories.nacos import NacosRepository
from repositories.package import EntryPointRepository, PackageRepository
from repositories.plugins import DEFAULT_PLUGIN_SCHEMES, PluginMarketplaceRepository

__all__ = ["SCHEME_ENTRY_POINT_GROUP", "RepositoryFactory", "known_schemes", "open_repository", "register_scheme"]

SCHEME_ENTRY_POINT_GROUP = "harness.repositories"

RepositoryFactory = Callable[[str], SkillRepository]
"""Builds a repository from its full URL."""

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(options: dict[str, str], key: str, default: bool) -> bool:
    value = options.pop(key, None)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise InvalidRepositoryConfig(f"option {key}={value!r} must be true or false")


def _number(options: dict[str, str], key: str, default: float) -> float:
    value = options.pop(key, None)
    try:
        return default if value is None else float(value)
    except ValueError as exc:
        raise InvalidRepositoryConfig(f"option {key}={value!r} must be a number") from exc


def _no_more(url: str, options: dict[str, str]) -> None:
    if options:
        raise InvalidRepositoryConfig(f"unknown option(s) {', '.join(sorted(options))} in {redact_url(url)!r}")


def _split_fragment(url: str) -> tuple[str, dict[str, str]]:
    base, _, fragment = url.partition("#")
    return base, dict(urllib.parse.parse_qsl(fragment, keep_blank_values=True))


def _open_dir(url: str) -> SkillRepository:
    base, options = _split_fragment(url)
    path = base[4:] if base.startswith("dir:") else base
    if path.startswith("//"):
        path = urllib.parse.unquote(urllib.parse.urlsplit("file:" + path).path)
    if not path:
        raise InvalidRepositoryConfig(f"no folder in {redact_url(url)!r}")
    repo = DirectoryRepository(path, source=options.pop("source", None), writable=_flag(options, "writable", False))
    _no_more(url, options)
    return repo


def _open_git(url: str) -> SkillRepository:
    base, options = _split_fragment(url)
    remote = base[4:]
    if not remote.split("://", 1)[-1]:
        raise InvalidRepositoryConfig(f"no repository in {redact_url(url)!r}")
    repo = GitRepository(
        remote,
        branch=options.pop("branch", None) or None,
        subdir=options.pop("subdir", None) or None,
        cache_dir=options.pop("cache_dir", None) or None,
        check_interval=_number(options, "check_interval", 0.0),
        background_refresh=_flag(options, "background_refresh", False),
        check_budget=_number(options, "check_budget", 0.0) if "check_budget" in options else None,
        auto_sync=_flag(options, "auto_sync", True),
        shallow=_flag(options, "shallow", True),
        source=options.pop("source", None),
    )
    _no_more(url, options)
    return repo


def _open_mysql(url: str) -> SkillRepository:
    # MySQLRepository checks the DSN itself; the query holds the registry's options.
    options = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    dsn = urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(query="", fragment=""))
    repo = MySQLRepository(
        dsn,
        table=options.pop("table", "skills"),
        writable=_flag(options, "writable", False),
        create_if_missing=_flag(options, "create_if_missing", False),
        connect_timeout=_number(options, "connect_timeout", 5.0),
        source=options.pop("source", None),
    )
    _no_more(url, options)
    return repo


def _open_pkg(url: str) -> SkillRepository:
    base, options = _split_fragment(url)
    package, _, folder = base[4:].partition("/")
    repo = PackageRepository(package, folder or "skills", source=options.pop("source", None))
    _no_more(url, options)
    return repo


def _open_entrypoints(url: str) -> SkillRepository:
    base, options = _split_fragment(url)
    repo = EntryPointRepository(base.split(":", 1)[1] or "harness.skills", source=options.pop("source", None))
    _no_more(url, options)
    return repo


def _open_nacos(url: str) -> SkillRepository:
    parts = urllib.parse.urlsplit(url)
    options = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    userinfo, _, servers = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    names = [name for name in options.pop("skills", "").split(",") if name]
    repo = NacosRepository(
        servers,
        namespace=urllib.parse.unquote(parts.path.strip("/")) or "public",
        skills=names,
        version=options.pop("version", None) or None,
        label=options.pop("label", None) or None,
        username=urllib.parse.unquote(user) or None,
        password=urllib.parse.unquote(password) or None,
        context_path=options.pop("context_path", "/nacos"),
        check_interval=_number(options, "check_interval", 30.0),
        timeout=_number(options, "timeout", 10.0),
        log_dir=options.pop("log_dir", None) or None,
        source=options.pop("source", None),
    )
    _no_more(url, options)
    return repo


_PLUGINS = "claude-plugins+"


def _open_plugins(url: str) -> SkillRepository:
    base, options = _split_fragment(url[len(_PLUGINS) :])
    source = options.pop("source", None)
    schemes = options.pop("allowed_schemes", None)
    allowed = tuple(filter(None, schemes.split(","))) if schemes is not None else DEFAULT_PLUGIN_SCHEMES
    inner = base
    if base.startswith("git+"):
        inner += "#" + urllib.parse.urlencode(options)
        options = {}
        root: DirectoryRepository | GitRepository = _open_git(inner)  # type: ignore[assignment]
        cache_dir = None
    else:
        cache_dir = options.pop("cache_dir", None) or None
        _no_more(url, options)
        root = _open_dir(inner)  # type: ignore[assignment]
    return PluginMarketplaceRepository(root, cache_dir=cache_dir, source=source, allowed_schemes=allowed)


def _open_mcp(url: str) -> SkillRepository:
    base, options = _split_fragment(url)
    common: dict[str, Any] = {
        "timeout": _number(options, "timeout", 30.0),
        "check_interval": _number(options, "check_interval", 0.0),
        "source": options.pop("source", None),
    }
    if base.startswith("mcp+stdio:"):
        try:
            command = shlex.split(base[len("mcp+stdio:") :])
        except ValueError as exc:
            raise InvalidRepositoryConfig(f"cannot split the command of {redact_url(url)!r}: {exc}") from None
        if not command:
            raise InvalidRepositoryConfig(f"no command in {redact_url(url)!r}")
        _no_more(url, options)
        return McpRepository(command=command, **common)
    variable = options.pop("token_env", None)
    token = os.environ.get(variable) if variable else None
    if variable and not token:
        raise InvalidRepositoryConfig(f"the variable {variable!r} named by token_env is not set")
    _no_more(url, options)
    return McpRepository(url=base[len("mcp+") :], token=token, **common)


_BUILTIN: dict[str, RepositoryFactory] = {
    "dir": _open_dir,
    "git+https": _open_git,
    "git+http": _open_git,
    "git+ssh": _open_git,
    "git+file": _open_git,
    "mysql": _open_mysql,
    "pkg": _open_pkg,
    "entrypoints": _open_entrypoints,
    "nacos": _open_nacos,
    "claude-plugins+dir": _open_plugins,
    "claude-plugins+git+https": _open_plugins,
    "claude-plugins+git+http": _open_plugins,
    "claude-plugins+git+ssh": _open_plugins,
    "claude-plugins+git+file": _open_plugins,
    "mcp+https": _open_mcp,
    "mcp+http": _open_mcp,
    "mcp+stdio": _open_mcp,
}
_registered: dict[str, RepositoryFactory] = {}


def register_scheme(scheme: str, factory: RepositoryFactory, *, replace: bool = False) -> None:
    """Make ``open_repository`` build ``scheme:`` URLs with ``factory(url)``.

    Raises ``InvalidRepositoryConfig`` if the scheme is taken and ``replace`` is false.
    """
    scheme = scheme.lower()
    if not _SCHEME.fullmatch(scheme + ":"):
        raise InvalidRepositoryConfig(f"invalid URL scheme {scheme!r}")
    if not replace and (scheme in _BUILTIN or scheme in _registered):
        raise InvalidRepositoryConfig(f"URL scheme {scheme!r} is already registered")
    _registered[scheme] = factory


def _entry_point_schemes() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=SCHEME_ENTRY_POINT_GROUP)}


def known_schemes() -> list[str]:
    """Every scheme ``open_repository`` understands: built-in, registered and advertised."""
    return sorted({*_BUILTIN, *_registered, *_entry_point_schemes()})


def _factory(scheme: str) -> RepositoryFactory:
    known = _registered.get(scheme) or _BUILTIN.get(scheme)
    if known is not None:
        return known
    entry = _entry_point_schemes().get(scheme)
    if entry is None:
        raise UnknownScheme(
            f"no skill repository for URL scheme {scheme!r}; known schemes: {', '.join(known_schemes())}"
        )
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plug-in must not look like a missing one
        raise InvalidRepositoryConfig(
            f"cannot load the repository plug-in {entry.value!r} for {scheme!r}: {exc}"
        ) from exc
    if not callable(loaded):
        raise InvalidRepositoryConfig(f"repository plug-in {entry.value!r} for {scheme!r} is not callable")
    factory: RepositoryFactory = loaded
    _registered[scheme] = factory
    return factory


def open_repository(url: str) -> SkillRepository:
    """Build the repository a URL names (see the module docstring for the URL forms).

    A string without a scheme (``/srv/skills``, ``./skills``, ``~/skills``) is a directory.
    Raises ``UnknownScheme`` (listing the known schemes) or ``InvalidRepositoryConfig``.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidRepositoryConfig("an empty repository URL")
    url = url.strip()
    match = _SCHEME.match(url)
    if match is None or url.startswith(("/", ".", "~")):
        return _open_dir(url)
    repo = _factory(match.group(1).lower())(url)
    if not isinstance(repo, SkillRepository):
        raise InvalidRepositoryConfig(f"the factory for {redact_url(url)!r} did not return a SkillRepository")
    return repo

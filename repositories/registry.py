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

Every URL also takes ``source=<slug>`` (fragment, or query for ``mysql``). Each scheme is its
class's ``from_url``, whose module is imported the first time the scheme is opened (see
:class:`filesystems.Registry`). Third parties add schemes with :func:`register_scheme` or
through the entry-point group ``harness.repositories`` (name = scheme, value = a callable taking
the URL and returning a ``SkillRepository``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from filesystems import Registry, redact_url
from repositories.base import SkillRepository
from repositories.errors import InvalidRepositoryConfig, RepositoryUnavailable, UnknownScheme

__all__ = ["SCHEME_ENTRY_POINT_GROUP", "RepositoryFactory", "known_schemes", "open_repository", "register_scheme"]

SCHEME_ENTRY_POINT_GROUP = "harness.repositories"

RepositoryFactory = Callable[[str], SkillRepository]
"""Builds a repository from its full URL."""

_SCHEME = r"([A-Za-z][A-Za-z0-9+.-]*):"  # compiled by ``re`` when a URL is first opened

_GIT = "repositories.git:GitRepository.from_url"
_PLUGINS = "repositories.plugins:PluginMarketplaceRepository.from_url"
_MCP = "repositories.mcp:McpRepository.from_url [mcp]"
_WELL_KNOWN = "repositories.wellknown:WellKnownRepository.from_url"


def _unknown(scheme: str, known: Sequence[str]) -> UnknownScheme:
    return UnknownScheme(f"no skill repository for URL scheme {scheme!r}; known schemes: {', '.join(known)}")


_REPOSITORIES: Registry[RepositoryFactory] = Registry(
    "URL scheme",
    SCHEME_ENTRY_POINT_GROUP,
    {
        "dir": "repositories.directory:DirectoryRepository.from_url",
        "git+https": _GIT,
        "git+http": _GIT,
        "git+ssh": _GIT,
        "git+file": _GIT,
        "mysql": "repositories.mysql:MySQLRepository.from_url",
        "pkg": "repositories.package:PackageRepository.from_url",
        "entrypoints": "repositories.package:EntryPointRepository.from_url",
        "nacos": "repositories.nacos:NacosRepository.from_url [nacos]",
        "claude-plugins+dir": _PLUGINS,
        "claude-plugins+git+https": _PLUGINS,
        "claude-plugins+git+http": _PLUGINS,
        "claude-plugins+git+ssh": _PLUGINS,
        "claude-plugins+git+file": _PLUGINS,
        "mcp+https": _MCP,
        "mcp+http": _MCP,
        "mcp+stdio": _MCP,
        "https": _WELL_KNOWN,
        "http": _WELL_KNOWN,
        "well-known+https": _WELL_KNOWN,
        "well-known+http": _WELL_KNOWN,
        "well-known+file": _WELL_KNOWN,
    },
    error=InvalidRepositoryConfig,
    unavailable=RepositoryUnavailable,
    unknown=_unknown,
)


def register_scheme(scheme: str, factory: RepositoryFactory, *, replace: bool = False) -> None:
    """Make ``open_repository`` build ``scheme:`` URLs with ``factory(url)``.

    Raises ``InvalidRepositoryConfig`` for a malformed scheme, or one already taken unless
    ``replace``.
    """
    _REPOSITORIES.register(scheme, factory, replace=replace)


def known_schemes() -> list[str]:
    """Every scheme ``open_repository`` understands: built-in, registered and advertised."""
    return _REPOSITORIES.known()


def open_repository(url: str) -> SkillRepository:
    """Build the repository a URL names (see the module docstring for the URL forms).

    A string without a scheme (``/srv/skills``, ``./skills``, ``~/skills``) is a directory.
    Raises ``UnknownScheme`` (listing the known schemes), ``InvalidRepositoryConfig``, or
    ``RepositoryUnavailable`` when the scheme's module needs an extra that is not installed.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidRepositoryConfig("an empty repository URL")
    url = url.strip()
    match = re.match(_SCHEME, url)
    scheme = "dir" if match is None or url.startswith(("/", ".", "~")) else match.group(1)
    repo = _REPOSITORIES.factory(scheme)(url)
    if not isinstance(repo, SkillRepository):
        raise InvalidRepositoryConfig(f"the factory for {redact_url(url)!r} did not return a SkillRepository")
    return repo

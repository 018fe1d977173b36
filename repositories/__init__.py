"""Skill markets: repositories that deliver raw skill bundles to the harness.

Start with ``SkillRepository`` (the contract, in ``repositories.base``), then the backends:
``DirectoryRepository``, ``GitRepository``, ``MySQLRepository``, ``PackageRepository`` /
``EntryPointRepository``, ``MemoryRepository``, ``NacosRepository``, ``PluginMarketplaceRepository`` and
``WellKnownRepository``; ``open_repository(url)`` builds one from a URL (``dir:``, ``git+https://``,
``mysql://``, ``pkg:``, ``entrypoints:``, ``nacos://``, ``claude-plugins+…``, ``https://`` well-known indexes).
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from repositories.base import (
    BundleFile,
    FileContents,
    FileListing,
    SkillBundle,
    SkillBundleContents,
    SkillRepository,
    Snapshot,
)
from repositories.directory import DirectoryRepository, read_skill_folder
from repositories.discovery import SKILL_MD_NAMES
from repositories.errors import (
    BundleNotFound,
    ContentBlocked,
    ContentMismatch,
    InvalidBundle,
    InvalidRepositoryConfig,
    RepositoryClosed,
    RepositoryError,
    RepositoryReadOnly,
    RepositoryUnavailable,
    UnknownScheme,
    UnsafePath,
)
from repositories.last_good import LastGood
from repositories.memory import MemoryRepository
from repositories.registry import known_schemes, open_repository, register_scheme
from repositories.sources import check_source, disambiguate_sources, exact_sub_source, make_source, sub_source

if TYPE_CHECKING:  # imported on first use: a program pays only for the markets it opens
    from repositories.git import GitRepository, default_cache_dir
    from repositories.mysql import MySQLRepository
    from repositories.nacos import NacosRepository
    from repositories.package import (
        ENTRY_POINT_GROUP,
        EntryPointRepository,
        PackageRepository,
        discover_skill_packages,
    )
    from repositories.plugins import DEFAULT_PLUGIN_SCHEMES, MARKETPLACE_FILES, PluginMarketplaceRepository
    from repositories.wellknown import WellKnownRepository

__all__ = [
    "DEFAULT_PLUGIN_SCHEMES",
    "ENTRY_POINT_GROUP",
    "MARKETPLACE_FILES",
    "SKILL_MD_NAMES",
    "BundleFile",
    "BundleNotFound",
    "ContentBlocked",
    "ContentMismatch",
    "DirectoryRepository",
    "EntryPointRepository",
    "FileContents",
    "FileListing",
    "GitRepository",
    "InvalidBundle",
    "InvalidRepositoryConfig",
    "LastGood",
    "MemoryRepository",
    "MySQLRepository",
    "NacosRepository",
    "PackageRepository",
    "PluginMarketplaceRepository",
    "RepositoryClosed",
    "RepositoryError",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
    "SkillBundle",
    "SkillBundleContents",
    "SkillRepository",
    "Snapshot",
    "UnknownScheme",
    "UnsafePath",
    "WellKnownRepository",
    "check_source",
    "default_cache_dir",
    "disambiguate_sources",
    "discover_skill_packages",
    "exact_sub_source",
    "known_schemes",
    "make_source",
    "open_repository",
    "read_skill_folder",
    "register_scheme",
    "sub_source",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use

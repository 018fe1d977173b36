"""Skill markets: repositories that deliver raw skill bundles to the harness.

Start with ``SkillRepository`` (the contract, in ``repositories.base``) and the backends:
``MemoryRepository``.
"""

from repositories.base import (
    BundleFile,
    FileContents,
    SkillBundle,
    SkillBundleContents,
    SkillRepository,
    Snapshot,
)
from repositories.errors import (
    BundleNotFound,
    InvalidBundle,
    InvalidRepositoryConfig,
    RepositoryClosed,
    RepositoryError,
    RepositoryReadOnly,
    RepositoryUnavailable,
    UnknownScheme,
    UnsafePath,
)
from repositories.directory import DirectoryRepository, read_skill_folder
from repositories.git import GitRepository, default_cache_dir
from repositories.memory import MemoryRepository
from repositories.mysql import MySQLRepository
from repositories.sources import check_source, disambiguate_sources, make_source

__all__ = [
    "BundleFile",
    "BundleNotFound",
    "DirectoryRepository",
    "FileContents",
    "GitRepository",
    "InvalidBundle",
    "InvalidRepositoryConfig",
    "MemoryRepository",
    "MySQLRepository",
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
    "check_source",
    "default_cache_dir",
    "disambiguate_sources",
    "make_source",
    "read_skill_folder",
]

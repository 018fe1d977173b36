"""``harness.yaml``: the configuration file of an agent, and building a :class:`Harness` from it.

Relative paths are resolved against the file's folder. Unknown keys are errors (typos must
not be silently ignored). See the README for every key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from filesystems import AbstractFilesystem, LocalFilesystem
from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.agent import Harness

__all__ = ["FILESYSTEM_MODES", "HarnessConfig", "load_config", "open_filesystem", "open_store"]

FILESYSTEM_MODES = ("local", "local-shell", "sandbox", "remote")


@dataclass(frozen=True, kw_only=True)
class HarnessConfig:
    """Everything ``harness.yaml`` can say; ``build()`` makes the agent."""

    name: str = "assistant"
    workspace: Path = Path("workspace")
    global_skills_dir: Path | None = None
    filesystem: str = "local-shell"
    store: str = ""
    network: bool = False
    repositories: tuple[str, ...] = ()
    dynamic_skills: bool = True
    model: str = "demo"
    system_prompt: str = "You are a helpful assistant."
    max_steps: int = 20
    catalog_budget: int | None = None
    market_timeout: float = 10.0
    max_file_size: int = 50 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.filesystem not in FILESYSTEM_MODES:
            raise ConfigError(f"filesystem.mode: {self.filesystem!r} is not one of {', '.join(FILESYSTEM_MODES)}")
        if isinstance(self.max_file_size, bool) or not isinstance(self.max_file_size, int) or self.max_file_size < 1:
            raise ConfigError(f"max_file_size: {self.max_file_size!r} is not a positive number of bytes")

    def open_filesystem(self) -> AbstractFilesystem:
        """The filesystem the configured mode names."""
        return open_filesystem(self.filesystem, self.workspace, store=self.store, agent_id=self.name, network=self.network)

    def build(self, **overrides: Any) -> Harness:
        """The agent this configuration describes (keyword ``overrides`` win)."""
        from harness.agent import Harness
        from repositories import open_repository

        options: dict[str, Any] = {
            "name": self.name,
            "model": self.model,
            "filesystem": self.open_filesystem(),
            "repositories": [open_repository(url) for url in self.repositories],
            "global_skills_dir": self.global_skills_dir,
            "dynamic_skills": self.dynamic_skills,
            "system_prompt": self.system_prompt,
            "max_steps": self.max_steps,
            "catalog_budget": self.catalog_budget,
            "market_timeout": self.market_timeout,
            "max_file_size": self.max_file_size,
        }
        options.update(overrides)
        return Harness(**options)


def open_store(url: str) -> Any:
    """A key-value store from ``memory:``, ``sqlite:///path`` or ``mysql://user:pass@host/db?table=t``."""
    from filesystems import MemoryKeyValueStore, MySQLKeyValueStore, SQLiteKeyValueStore

    if url in {"memory", "memory:"}:
        return MemoryKeyValueStore()
    if url.startswith("sqlite:///"):
        return SQLiteKeyValueStore(Path(url[len("sqlite:///") :]))
    if url.startswith("sqlite://"):
        return SQLiteKeyValueStore(Path(url[len("sqlite://") :]))
    if url.startswith("mysql://"):
        return MySQLKeyValueStore(url)
    raise ConfigError(f"store {url!r}: expected memory:, sqlite:///path or mysql://user:pass@host:port/db")


def open_filesystem(
    mode: str, workspace: Path, *, store: str = "", agent_id: str = "assistant", network: bool = False
) -> AbstractFilesystem:
    """The filesystem for ``mode`` (one of :data:`FILESYSTEM_MODES`) rooted at ``workspace``."""
    if mode == "local":
        return LocalFilesystem(workspace)
    if mode == "local-shell":
        return LocalFilesystem(workspace, shell=True)
    if mode == "sandbox":
        from filesystems import SandboxFilesystem

        return SandboxFilesystem(workspace, network=network)
    if mode == "remote":
        from filesystems import RemoteFilesystem

        return RemoteFilesystem(open_store(store or f"sqlite:///{workspace / '.harness' / 'store.db'}"), agent_id=agent_id)
    raise ConfigError(f"filesystem mode {mode!r} is not one of {', '.join(FILESYSTEM_MODES)}")


_TOP_KEYS = {f.name for f in dataclasses.fields(HarnessConfig)} - {"store", "network"}
_FS_KEYS = {"mode", "store", "network"}


def load_config(path: str | Path) -> HarnessConfig:
    """Read and check ``harness.yaml``; raises :class:`ConfigError` naming the bad key."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration must be a mapping")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(_TOP_KEYS))})")
    base = path.parent
    values: dict[str, Any] = {k: v for k, v in data.items() if k not in {"filesystem", "workspace", "global_skills_dir", "repositories"}}
    values["workspace"] = _path(base, data.get("workspace", "workspace"))
    if data.get("global_skills_dir"):
        values["global_skills_dir"] = _path(base, data["global_skills_dir"])
    repos = data.get("repositories") or []
    if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
        raise ConfigError(f"{path}: repositories must be a list of URLs")
    values["repositories"] = tuple(_repo_url(base, r) for r in repos)
    fs = data.get("filesystem", {})
    if isinstance(fs, str):
        fs = {"mode": fs}
    if not isinstance(fs, dict) or set(fs) - _FS_KEYS:
        raise ConfigError(f"{path}: filesystem must be a mode name or a mapping with keys {', '.join(sorted(_FS_KEYS))}")
    values["filesystem"] = fs.get("mode", "local-shell")
    values["store"] = _store_url(base, str(fs.get("store", "")))
    values["network"] = bool(fs.get("network", False))
    try:
        return HarnessConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _path(base: Path, value: object) -> Path:
    return (base / Path(str(value)).expanduser()).resolve()


def _repo_url(base: Path, url: str) -> str:
    if url.startswith("dir:") and not url.startswith("dir:/"):
        return f"dir:{_path(base, url[4:])}"
    if "://" not in url and ":" not in url.split("/")[0]:
        return f"dir:{_path(base, url)}"
    return url


def _store_url(base: Path, url: str) -> str:
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        rest = url[len("sqlite:///") :]
        if not rest.startswith("/"):
            return f"sqlite:///{_path(base, rest)}"
    return url

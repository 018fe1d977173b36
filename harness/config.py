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

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxLimits, redact_secrets, redact_url
from filesystems.local import DEFAULT_TIMEOUT
from harness.errors import ConfigError
from harness.learning.scanner import MarketScanPolicy

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
    timeout: float | None = DEFAULT_TIMEOUT
    sandbox_limits: SandboxLimits = SandboxLimits()
    repositories: tuple[str, ...] = ()
    dynamic_skills: bool = True
    model: str = "demo"
    system_prompt: str = "You are a helpful assistant."
    max_steps: int = 20
    catalog_budget: int | None = None
    market_timeout: float = 10.0
    market_scan: MarketScanPolicy | None = None
    max_file_size: int = 50 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.filesystem not in FILESYSTEM_MODES:
            raise ConfigError(f"filesystem.mode: {self.filesystem!r} is not one of {', '.join(FILESYSTEM_MODES)}")
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"filesystem.timeout: {self.timeout!r} must be a positive number of seconds or null")
        if isinstance(self.max_file_size, bool) or not isinstance(self.max_file_size, int) or self.max_file_size < 1:
            raise ConfigError(f"max_file_size: {self.max_file_size!r} is not a positive number of bytes")

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return redact_secrets(f"HarnessConfig({fields})")  # the store DSN and market URLs

    def open_filesystem(self) -> AbstractFilesystem:
        """The filesystem the configured mode names."""
        return open_filesystem(
            self.filesystem,
            self.workspace,
            store=self.store,
            agent_id=self.name,
            network=self.network,
            timeout=self.timeout,
            limits=self.sandbox_limits,
        )

    def options(self, **overrides: Any) -> dict[str, Any]:
        """The keyword arguments of :class:`harness.Harness` this configuration describes
        (keyword ``overrides`` win); ``Harness(**config.options())`` builds the agent."""
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
            "market_scan": self.market_scan,
            "max_file_size": self.max_file_size,
        }
        options.update(overrides)
        return options

    def build(self, **overrides: Any) -> Harness:
        """The agent this configuration describes (keyword ``overrides`` win)."""
        from harness.agent import Harness

        return Harness(**self.options(**overrides))


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
        try:
            return MySQLKeyValueStore(url)
        except ValueError as exc:  # the message already masks the password
            raise ConfigError(f"filesystem.store: {exc}") from None
    raise ConfigError(f"store {redact_url(url)!r}: expected memory:, sqlite:///path or mysql://user:pass@host:port/db")


def open_filesystem(
    mode: str,
    workspace: Path,
    *,
    store: str = "",
    agent_id: str = "assistant",
    network: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    limits: SandboxLimits = SandboxLimits(),
) -> AbstractFilesystem:
    """The filesystem for ``mode`` (one of :data:`FILESYSTEM_MODES`) rooted at ``workspace``.

    ``timeout`` is the ceiling of every shell command; ``limits`` apply to sandboxed commands.
    """
    if mode == "local":
        return LocalFilesystem(workspace)
    if mode == "local-shell":
        return LocalFilesystem(workspace, shell=True, timeout=timeout)
    if mode == "sandbox":
        from filesystems import SandboxFilesystem

        return SandboxFilesystem(workspace, network=network, timeout=timeout, limits=limits)
    if mode == "remote":
        from filesystems import RemoteFilesystem

        return RemoteFilesystem(
            open_store(store or f"sqlite:///{workspace / '.harness' / 'store.db'}"), agent_id=agent_id
        )
    raise ConfigError(f"filesystem mode {mode!r} is not one of {', '.join(FILESYSTEM_MODES)}")


_TOP_KEYS = {f.name for f in dataclasses.fields(HarnessConfig)} - {"store", "network", "timeout", "sandbox_limits"}
_FS_KEYS = {"mode", "store", "network", "timeout", "limits"}
_LIMIT_KEYS = {f.name for f in dataclasses.fields(SandboxLimits)}
_SIZE_KEYS = {"memory", "file_size", "tmp_size"}
_SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


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
    values: dict[str, Any] = {
        k: v for k, v in data.items() if k not in {"filesystem", "workspace", "global_skills_dir", "repositories"}
    }
    values["workspace"] = _path(base, data.get("workspace", "workspace"))
    if data.get("global_skills_dir"):
        values["global_skills_dir"] = _path(base, data["global_skills_dir"])
    repos = data.get("repositories") or []
    if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
        raise ConfigError(f"{path}: repositories must be a list of URLs")
    values["repositories"] = tuple(_repo_url(base, r) for r in repos)
    if "market_scan" in data:
        values["market_scan"] = _market_scan(path, data["market_scan"])
    fs = data.get("filesystem", {})
    if isinstance(fs, str):
        fs = {"mode": fs}
    if not isinstance(fs, dict) or set(fs) - _FS_KEYS:
        raise ConfigError(
            f"{path}: filesystem must be a mode name or a mapping with keys {', '.join(sorted(_FS_KEYS))}"
        )
    values["filesystem"] = fs.get("mode", "local-shell")
    values["store"] = _store_url(base, str(fs.get("store", "")))
    values["network"] = bool(fs.get("network", False))
    if "timeout" in fs:
        values["timeout"] = _timeout(path, fs["timeout"])
    if "limits" in fs:
        if values["filesystem"] != "sandbox":
            raise ConfigError(f"{path}: filesystem.limits applies only to mode sandbox")
        values["sandbox_limits"] = _limits(path, fs["limits"])
    try:
        return HarnessConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _timeout(path: Path, value: object) -> float | None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None if value is None else float(value)
    raise ConfigError(f"{path}: filesystem.timeout must be a number of seconds or null, got {value!r}")


def _limits(path: Path, data: object) -> SandboxLimits:
    """``filesystem.limits``: SandboxLimits fields; sizes as bytes or with a K/M/G/T suffix."""
    if not isinstance(data, dict) or set(data) - _LIMIT_KEYS:
        raise ConfigError(f"{path}: filesystem.limits must be a mapping with keys {', '.join(sorted(_LIMIT_KEYS))}")
    values: dict[str, Any] = {
        key: _size(path, key, value) if key in _SIZE_KEYS else value for key, value in data.items()
    }
    try:
        return SandboxLimits(**values)
    except ValueError as exc:
        raise ConfigError(f"{path}: filesystem.limits: {exc}") from None


def _size(path: Path, key: str, value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    factor = _SIZE_UNITS.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in _SIZE_UNITS else text
    if not number.isdigit():
        raise ConfigError(f"{path}: filesystem.limits.{key}: {value!r} is not a size like 512M or 4G")
    return int(number) * factor


def _market_scan(path: Path, value: object) -> MarketScanPolicy:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: market_scan must be a mapping like {{default: report, sources: {{slug: block}}}}")
    try:
        return MarketScanPolicy.from_data(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: market_scan: {exc}") from None


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

"""``harness.yaml``: the options of an agent, read and checked; ``Harness.from_config`` builds it.

Relative paths are resolved against the file's folder. Unknown keys are errors (typos must
not be silently ignored). See the README for every key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from filesystems import AbstractFilesystem, SandboxLimits, known_filesystem_modes, open_filesystem, redact_secrets
from filesystems.local import DEFAULT_TIMEOUT
from harness.approval import ApprovalPolicy, policy_from_data
from harness.errors import ConfigError
from harness.learning.schedule import CuratorConfig
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET
from harness.pipeline.environments import EnvironmentOptions
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT, DEFAULT_SKILL_DIRS, check_skill_dirs
from harness.skills.scanner import MarketScanPolicy

__all__ = ["HarnessConfig", "load_config"]


@dataclass(frozen=True, kw_only=True)
class HarnessConfig:
    """Everything ``harness.yaml`` can say; ``Harness.from_config(config)`` makes the agent."""

    name: str = "assistant"
    workspace: Path = Path("workspace")
    global_skills_dir: Path | tuple[Path, ...] | None = None
    skill_dirs: tuple[str, ...] = DEFAULT_SKILL_DIRS
    filesystem: str = "local-shell"
    store: str = ""
    network: bool = False
    timeout: float | None = DEFAULT_TIMEOUT
    sandbox_limits: SandboxLimits = SandboxLimits()
    shell_env: tuple[tuple[str, str], ...] = ()
    shell_path: tuple[str, ...] = ()
    repositories: tuple[str, ...] = ()
    dynamic_skills: bool = True
    model: str = "demo"
    system_prompt: str = "You are a helpful assistant."
    max_steps: int = 20
    catalog_budget: int | None = DEFAULT_CATALOG_BUDGET
    market_timeout: float = DEFAULT_MARKET_TIMEOUT
    market_scan: MarketScanPolicy | None = None
    max_file_size: int = 50 * 1024 * 1024
    enforce_allowed_tools: bool = False
    trusted_markets: tuple[str, ...] = ()
    curator: CuratorConfig | None = None
    approval: ApprovalPolicy | None = None
    mcp_tokens: Path | None = None  # harness mcp serve --http: the bearer token -> user file
    environments: EnvironmentOptions | None = None

    def __post_init__(self) -> None:
        if self.filesystem not in known_filesystem_modes():
            modes = ", ".join(known_filesystem_modes())
            raise ConfigError(f"filesystem.mode: {self.filesystem!r} is not one of {modes}")
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"filesystem.timeout: {self.timeout!r} must be a positive number of seconds or null")
        if isinstance(self.max_file_size, bool) or not isinstance(self.max_file_size, int) or self.max_file_size < 1:
            raise ConfigError(f"max_file_size: {self.max_file_size!r} is not a positive number of bytes")

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return redact_secrets(f"HarnessConfig({fields})")  # the store DSN and market URLs

    def open_filesystem(self) -> AbstractFilesystem:
        """The filesystem the configured mode names (``filesystems.open_filesystem``).

        Raises :class:`ConfigError` for a store URL or mode the registry refuses (passwords masked).
        """
        try:
            return open_filesystem(
                self.filesystem,
                self.workspace,
                store=self.store,
                agent_id=self.name,
                network=self.network,
                timeout=self.timeout,
                limits=self.sandbox_limits,
                env=dict(self.shell_env),
                path=self.shell_path,
            )
        except ValueError as exc:  # the registry's messages already mask passwords
            raise ConfigError(f"filesystem: {redact_secrets(str(exc))}") from None


_TOP_KEYS = {f.name for f in dataclasses.fields(HarnessConfig)} - {
    "store",
    "network",
    "timeout",
    "sandbox_limits",
    "shell_env",
    "shell_path",
}
_FS_KEYS = {"mode", "store", "network", "timeout", "limits", "env", "path"}
_LIMIT_KEYS = {f.name for f in dataclasses.fields(SandboxLimits)}
_SIZE_KEYS = {"memory", "file_size", "tmp_size"}
_SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_ENV_KEYS = {
    "enabled",
    "index_url",
    "find_links",
    "no_index",
    "only_binary",
    "max_size",
    "timeout",
    "trusted_markets",
    "untrusted_markets",
    "infer_for",
    "packages",
}


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
        k: v
        for k, v in data.items()
        if k not in {"filesystem", "workspace", "global_skills_dir", "repositories", "skill_dirs"}
    }
    values["workspace"] = _path(base, data.get("workspace", "workspace"))
    if data.get("global_skills_dir"):
        dirs = data["global_skills_dir"]
        values["global_skills_dir"] = (
            tuple(_path(base, d) for d in dirs) if isinstance(dirs, list) else _path(base, dirs)
        )
    if "skill_dirs" in data:
        values["skill_dirs"] = _skill_dirs(path, data["skill_dirs"])
    repos = data.get("repositories") or []
    if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
        raise ConfigError(f"{path}: repositories must be a list of URLs")
    values["repositories"] = tuple(_repo_url(base, r) for r in repos)
    if "market_scan" in data:
        values["market_scan"] = _market_scan(path, data["market_scan"])
    if not isinstance(data.get("enforce_allowed_tools", False), bool):
        raise ConfigError(f"{path}: enforce_allowed_tools must be true or false")
    markets = data.get("trusted_markets") or []
    if not isinstance(markets, list) or not all(isinstance(m, str) for m in markets):
        raise ConfigError(f"{path}: trusted_markets must be a list of market slugs")
    values["trusted_markets"] = tuple(markets)
    if "curator" in data:
        values["curator"] = _curator(path, data["curator"])
    if data.get("approval") is not None:
        values["approval"] = _approval(path, data["approval"])
    values["mcp_tokens"] = _path(base, data["mcp_tokens"]) if data.get("mcp_tokens") else None
    if "environments" in data:
        values["environments"] = _environments(path, data["environments"])
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
    if "env" in fs:
        values["shell_env"] = _shell_env(path, fs["env"])
    if "path" in fs:
        values["shell_path"] = _shell_path(path, fs["path"])
    try:
        return HarnessConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _timeout(path: Path, value: object) -> float | None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None if value is None else float(value)
    raise ConfigError(f"{path}: filesystem.timeout must be a number of seconds or null, got {value!r}")


def _skill_dirs(path: Path, data: object) -> tuple[str, ...]:
    """``skill_dirs``: folders of the workspace (and of each user's area) read as skills, first
    wins; the pipeline's own rule (:func:`~harness.pipeline.pipeline.check_skill_dirs`)."""
    if not isinstance(data, list):
        raise ConfigError(f"{path}: skill_dirs must be a list of folders such as [skills, .agents/skills]")
    try:
        return check_skill_dirs(data)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _shell_env(path: Path, data: object) -> tuple[tuple[str, str], ...]:
    """``filesystem.env``: variables every shell command gets (strings or numbers; no PATH)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: filesystem.env must be a mapping of variable names to values")
    env: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{path}: filesystem.env.{key}: {value!r} must be a string or a number")
        env[str(key)] = str(value)
    if "PATH" in env:
        raise ConfigError(f"{path}: filesystem.env: set PATH through filesystem.path (extra folders), not env")
    return tuple(env.items())


def _shell_path(path: Path, data: object) -> tuple[str, ...]:
    """``filesystem.path``: folders searched before the system ones, as the shell sees them."""
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(f, str) and f.startswith("/") and ":" not in f for f in data):
        raise ConfigError(f"{path}: filesystem.path must be a list of absolute folders without ':', got {data!r}")
    return tuple(data)


def _limits(path: Path, data: object) -> SandboxLimits:
    """``filesystem.limits``: SandboxLimits fields; sizes as bytes or with a K/M/G/T suffix."""
    if not isinstance(data, dict) or set(data) - _LIMIT_KEYS:
        raise ConfigError(f"{path}: filesystem.limits must be a mapping with keys {', '.join(sorted(_LIMIT_KEYS))}")
    values: dict[str, Any] = {
        key: _size(path, f"filesystem.limits.{key}", value) if key in _SIZE_KEYS else value
        for key, value in data.items()
    }
    try:
        return SandboxLimits(**values)
    except ValueError as exc:
        raise ConfigError(f"{path}: filesystem.limits: {exc}") from None


def _size(path: Path, key: str, value: object) -> object:
    """A size in bytes, or with a K/M/G/T suffix; ``key`` is the dotted key named in errors."""
    if not isinstance(value, str):
        return value
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    factor = _SIZE_UNITS.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in _SIZE_UNITS else text
    if not number.isdigit():
        raise ConfigError(f"{path}: {key}: {value!r} is not a size like 512M or 4G")
    return int(number) * factor


def _environments(path: Path, data: object) -> EnvironmentOptions | None:
    """``environments``: per-skill Python environments (``true``, ``false`` or a mapping of
    :data:`_ENV_KEYS`; ``enabled: false`` turns a written section off)."""
    if data is None or data is False:
        return None
    if data is True:
        return EnvironmentOptions()
    if not isinstance(data, dict) or set(data) - _ENV_KEYS:
        raise ConfigError(
            f"{path}: environments must be true, false or a mapping with keys {', '.join(sorted(_ENV_KEYS))}"
        )
    if not _flag(path, "environments.enabled", data.get("enabled", True)):
        return None
    values: dict[str, Any] = {
        key: _flag(path, f"environments.{key}", data[key])
        for key in ("no_index", "only_binary", "untrusted_markets")
        if key in data
    }
    for key in ("find_links", "infer_for", "trusted_markets"):
        if key in data:
            values[key] = _strings(path, f"environments.{key}", data[key])
    if data.get("index_url") is not None:
        if not isinstance(data["index_url"], str):
            raise ConfigError(f"{path}: environments.index_url must be a URL, got {data['index_url']!r}")
        values["index_url"] = data["index_url"]
    if "max_size" in data:
        values["max_size"] = _size(path, "environments.max_size", data["max_size"])
    if "timeout" in data:
        values["timeout"] = data["timeout"]
    packages = data.get("packages") or {}
    if not isinstance(packages, dict) or set(packages) - {"skills", "markets"}:
        raise ConfigError(f"{path}: environments.packages must be a mapping with keys skills and markets")
    for kind in ("skills", "markets"):
        given = packages.get(kind) or {}
        if not isinstance(given, dict):
            raise ConfigError(f"{path}: environments.packages.{kind} must map names to lists of packages")
        values[f"{kind[:-1]}_packages"] = {
            str(name): _strings(path, f"environments.packages.{kind}.{name}", listed) for name, listed in given.items()
        }
    try:
        return EnvironmentOptions(**values)
    except ValueError as exc:
        raise ConfigError(f"{path}: environments: {exc}") from None


def _flag(path: Path, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {key} must be true or false, got {value!r}")
    return value


def _strings(path: Path, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _curator(path: Path, value: object) -> CuratorConfig | None:
    """``curator``: run the curator while the agent is entered (``true``, or a mapping of
    ``interval_hours``, ``stale_after_days``, ``archive_after_days``, ``check_every_minutes``,
    ``umbrella_review``); ``false``/``null``: don't."""
    if value is None or value is False:
        return None
    if value is True:
        return CuratorConfig()
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: curator must be true, false or a mapping like {{interval_hours: 24}}")
    try:
        return CuratorConfig.from_data(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: curator: {exc}") from None


def _approval(path: Path, value: object) -> ApprovalPolicy:
    """``approval``: ``allow-all`` or ``{default: ask, rules: [{action, patterns, tools, kinds}]}``."""
    try:
        return policy_from_data(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


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

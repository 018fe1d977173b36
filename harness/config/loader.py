"""Reading ``harness.yaml``: the YAML, then the schema, then each part's own rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from filesystems import SandboxLimits, redact_secrets
from harness.approval import ApprovalPolicy, policy_from_data
from harness.config.config import HarnessConfig, SessionsConfig
from harness.config.problems import problems
from harness.config.schema import (
    AllowAllSection,
    ApprovalSection,
    ConfigFile,
    EnvironmentsSection,
    FilesystemSection,
    SessionsSection,
)
from harness.errors import ConfigError
from harness.learning.schedule import CuratorConfig
from harness.pipeline.environments import EnvironmentOptions
from harness.pipeline.lock import LOCKFILE_NAME
from harness.pipeline.pipeline import check_skill_dirs
from harness.skills.bounded_yaml import YAMLLimitExceeded, load_bounded_yaml
from harness.skills.scanner import MarketScanPolicy

__all__ = ["MAX_CONFIG_BYTES", "load_config"]

#: The largest ``harness.yaml`` read (bytes); a real one is a few kilobytes.
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(path: str | Path) -> HarnessConfig:
    """Read and check ``harness.yaml``; raises :class:`ConfigError` naming each bad key, one
    line per problem (``harness.yaml: max_steps must be an integer ≥ 1, got 'lots'``)."""
    path = Path(path)
    data = _document(path, _text(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration must be a mapping")
    try:
        file = ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(f"{path}: {problem}" for problem in problems(exc))) from None
    try:
        return _config(file, path.parent)
    except ValueError as exc:  # a part's own rule; its message names the key
        raise ConfigError(f"{path}: {redact_secrets(str(exc))}") from None


def _text(path: Path) -> str:
    """The file's text: at most :data:`MAX_CONFIG_BYTES` read, UTF-8 or refused."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB, which no harness.yaml needs; check the file named"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


def _document(path: Path, text: str) -> Any:
    """The YAML document in ``text``, parsed with a safe loader within the limits of
    :func:`~harness.skills.bounded_yaml.load_bounded_yaml` (aliases, nesting, expansion)."""
    try:
        return load_bounded_yaml(text)
    except YAMLLimitExceeded as exc:
        raise ConfigError(f"{path}: the document {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None


def _config(file: ConfigFile, base: Path) -> HarnessConfig:
    """The options ``file`` describes, relative paths resolved against ``base``."""
    folders = file.global_skills_dir
    return HarnessConfig(
        name=file.name,
        workspace=_path(base, file.workspace),
        global_skills_dir=(
            tuple(_path(base, folder) for folder in folders)
            if isinstance(folders, list)
            else _path(base, folders)
            if folders
            else None
        ),
        skill_dirs=check_skill_dirs(file.skill_dirs),
        repositories=tuple(_repo_url(base, url) for url in file.repositories or ()),
        dynamic_skills=file.dynamic_skills,
        model=file.model,
        system_prompt=file.system_prompt,
        max_steps=file.max_steps,
        catalog_budget=file.catalog_budget,
        catalog_format=file.catalog_format,
        market_timeout=file.market_timeout,
        market_check_interval=file.market_check_interval,
        market_scan=_market_scan(file),
        max_file_size=file.max_file_size,
        enforce_allowed_tools=file.enforce_allowed_tools,
        trusted_markets=tuple(file.trusted_markets or ()),
        activation_markets=tuple(file.activation_markets or ()),
        curator=_curator(file),
        approval=_approval(file.approval),
        mcp_tokens=_path(base, file.mcp_tokens) if file.mcp_tokens else None,
        mcp_stateless=file.mcp_stateless,
        environments=_environments(file.environments),
        # Pinning skills: ``lock: true`` is harness.lock beside this file, a string its path.
        lock=_path(base, LOCKFILE_NAME if file.lock is True else file.lock) if file.lock else None,
        sessions=_sessions(file.sessions, base),
        **_filesystem(file.filesystem, base),
    )


def _filesystem(section: FilesystemSection, base: Path) -> dict[str, Any]:
    """The filesystem fields of :class:`HarnessConfig` (``filesystem``, ``store``, ...)."""
    return {
        "filesystem": section.mode,
        "store": _store_url(base, section.store),
        "network": section.network,
        "timeout": section.timeout,
        "sandbox_limits": SandboxLimits(**section.limits.model_dump()) if section.limits else SandboxLimits(),
        "shell_env": tuple((name, str(value)) for name, value in section.env.items()),
        "shell_path": tuple(section.path),
    }


def _market_scan(file: ConfigFile) -> MarketScanPolicy | None:
    if file.market_scan is None:
        return None
    try:
        return MarketScanPolicy.from_data(file.market_scan.model_dump(exclude_unset=True))
    except ValueError as exc:
        raise ValueError(f"market_scan: {exc}") from None


def _curator(file: ConfigFile) -> CuratorConfig | None:
    if file.curator is None:
        return None
    try:
        return CuratorConfig.from_data(file.curator.model_dump(exclude_unset=True, exclude_none=True))
    except ValueError as exc:
        raise ValueError(f"curator: {exc}") from None


def _approval(section: ApprovalSection | None) -> ApprovalPolicy | None:
    """``approval``: ``allow-all`` or ``{default: ask, rules: [{action, patterns, tools, kinds}]}``."""
    if section is None:
        return None
    return policy_from_data(
        "allow-all" if isinstance(section, AllowAllSection) else section.model_dump(exclude_unset=True)
    )


def _environments(section: EnvironmentsSection | None) -> EnvironmentOptions | None:
    """``environments``: per-skill Python environments, unless ``enabled: false``."""
    if section is None or not section.enabled:
        return None
    values = section.model_dump(exclude_unset=True, exclude={"enabled", "packages", "retention_days"})
    if "retention_days" in section.model_fields_set:
        days = section.retention_days
        values["retention"] = None if days is None else days * 86400.0
    packages = section.packages
    if packages is not None:
        values.update(skill_packages=packages.skills or {}, market_packages=packages.markets or {})
    try:
        return EnvironmentOptions(**values)
    except ValueError as exc:
        raise ValueError(f"environments: {exc}") from None


def _sessions(section: SessionsSection, base: Path) -> SessionsConfig:
    """``sessions``: the store's URL (a relative SQLite file against ``base``) and its bounds."""
    days = section.max_age_days
    return SessionsConfig(
        store=_store_url(base, section.store),
        max_messages=section.max_messages,
        max_age=None if days is None else days * 86400.0,
    )


def _path(base: Path, value: str) -> Path:
    return (base / Path(value).expanduser()).resolve()


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

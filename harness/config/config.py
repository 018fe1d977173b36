"""The options of an agent as ``harness.yaml`` gives them (:func:`~harness.config.load_config`
reads the file); ``Harness.from_config`` builds the agent from them."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from filesystems import AbstractFilesystem, SandboxLimits, known_filesystem_modes, open_filesystem, redact_secrets
from filesystems.local import DEFAULT_TIMEOUT
from harness.errors import ConfigError
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET, CatalogFormat, check_catalog_format
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT, DEFAULT_SKILL_DIRS

if TYPE_CHECKING:  # the types of optional parts: a config that names none of them loads none of them
    from harness.approval import ApprovalPolicy
    from harness.learning.schedule import CuratorConfig
    from harness.pipeline.environments import EnvironmentOptions
    from harness.skills.scanner import MarketScanPolicy

__all__ = ["HarnessConfig", "SessionsConfig"]


@dataclass(frozen=True, kw_only=True)
class SessionsConfig:
    """``sessions``: where conversations (and runs paused for approval) live and for how long.

    ``store`` is the store's URL (``memory:``, ``sqlite:///path``, ``mysql://...``);
    ``max_messages`` the messages each conversation keeps; ``max_age`` the retention in seconds
    (``None``: forever).
    """

    store: str = "memory:"
    max_messages: int = 200
    max_age: float | None = None

    def __post_init__(self) -> None:
        if self.max_messages < 2:
            raise ConfigError(f"sessions.max_messages: {self.max_messages!r} must be at least 2")
        if self.max_age is not None and not self.max_age > 0:
            raise ConfigError(f"sessions.max_age_days: {self.max_age!r} must be a positive duration")


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
    catalog_format: CatalogFormat = "auto"
    market_timeout: float = DEFAULT_MARKET_TIMEOUT
    market_check_interval: float | None = None
    market_scan: MarketScanPolicy | None = None
    max_file_size: int = 50 * 1024 * 1024
    enforce_allowed_tools: bool = False
    trusted_markets: tuple[str, ...] = ()
    activation_markets: tuple[str, ...] = ()
    curator: CuratorConfig | None = None
    approval: ApprovalPolicy | None = None
    mcp_tokens: Path | None = None  # harness mcp serve --http: the bearer token -> user file
    mcp_stateless: bool = False  # harness mcp serve --http: no session kept between requests
    environments: EnvironmentOptions | None = None
    # Pinning skills (docs/pinning.md): the lockfile in force, or None.
    lock: Path | None = None
    sessions: SessionsConfig = SessionsConfig()

    def __post_init__(self) -> None:
        if self.filesystem not in known_filesystem_modes():
            modes = known_filesystem_modes()
            guess = "".join(f" (did you mean {m}?)" for m in difflib.get_close_matches(self.filesystem, modes, n=1))
            raise ConfigError(f"filesystem.mode: {self.filesystem!r} is not one of {', '.join(modes)}{guess}")
        try:
            check_catalog_format(self.catalog_format)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
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

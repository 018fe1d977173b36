"""The schema of ``harness.yaml``: every key, its type and its default, as pydantic models.

:class:`ConfigFile` is the whole file and each nested mapping a section model. Validation is
strict (a string is not a number, ``yes`` in quotes is not a flag) and refuses unknown keys;
the errors carry what each key expects, which :mod:`harness.config.problems` turns into
messages. Rules that belong to a part of the agent (skill folders inside the workspace, the
order of the curator's durations, package names) stay with that part and are checked when the
file becomes a :class:`~harness.config.HarnessConfig`. :func:`json_schema` is the same schema
for editors.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    model_validator,
)

from filesystems import SandboxLimits
from harness.approval import ApprovalRule
from harness.config.config import HarnessConfig, SessionsConfig
from harness.config.problems import UnexpectedValue, UnknownKeys
from harness.learning.schedule import CuratorConfig
from harness.pipeline.catalog import CATALOG_FORMATS, CatalogFormat
from harness.pipeline.environments import EnvironmentOptions
from harness.skills.scanner import MarketScanPolicy

__all__ = [
    "ApprovalSection",
    "ConfigFile",
    "CuratorSection",
    "EnvironmentsSection",
    "FilesystemSection",
    "LimitsSection",
    "MarketScanSection",
    "PackagesSection",
    "RuleSection",
    "SessionsSection",
    "json_schema",
]

# A size: bytes, or a whole number with a K/M/G/T suffix (powers of 1024; ``B`` / ``iB`` allowed).
_SIZE_PATTERN = r"^([0-9]+)([KMGTkmgt]([iI]?[bB])?|[bB])?$"
_SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _default(owner: type[Any], name: str) -> Any:
    """The default of the dataclass field ``owner.name``: the schema restates no default."""
    (field,) = [f for f in dataclasses.fields(owner) if f.name == name]
    return field.default


def _expect(expected: str, *, whole: bool = False) -> WrapValidator:
    """Report a value of the wrong type (or out of range) as :class:`UnexpectedValue` naming ``expected``.

    A problem inside the value (an item of a list, a key of a section) keeps its own path and
    message, unless ``whole`` (a union: each of its members failed, the value as a whole is wrong).
    """

    def check(value: object, handler: ValidatorFunctionWrapHandler) -> object:
        try:
            return handler(value)
        except ValidationError as exc:
            if whole or any(not detail["loc"] for detail in exc.errors()):
                raise UnexpectedValue(expected) from None
            raise

    return WrapValidator(check)


def _size(value: object) -> int:
    """``value`` as a number of bytes: a positive integer, or a string such as ``512M`` or ``4GiB``."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    match = re.fullmatch(_SIZE_PATTERN, value.strip()) if isinstance(value, str) else None
    if match and int(match.group(1)) > 0:
        return int(match.group(1)) * _SIZE_UNITS.get((match.group(2) or "")[:1].upper(), 1)
    raise ValueError(f"{value!r} is not a size like 512M or 4G")


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


Text = Annotated[str, _expect("a string")]
Flag = Annotated[bool, _expect("true or false")]
Strings = Annotated[
    list[Annotated[str, Field(min_length=1), _expect("a non-empty string")]], _expect("a list of strings")
]
Size = Annotated[
    int,
    PlainValidator(_size),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": _SIZE_PATTERN}]}),
]
Positive = Annotated[int, Field(ge=1), _expect("an integer ≥ 1")]
Seconds = Annotated[float, Field(gt=0), _expect("a positive number of seconds")]
Amount = Annotated[float, Field(ge=0), _expect("a number ≥ 0")]
Folders = Annotated[str | list[str] | None, _expect("a folder or a list of folders", whole=True)]
Level = Annotated[Literal["report", "block", "enforce", "off", "trusted", False], _expect("one of report, block, off")]


class _Section(BaseModel):
    """A mapping of ``harness.yaml``: strict types, no unknown keys, frozen once read."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True)

    #: What the section may also be written as, for messages ("a mode name or ").
    shorthand: ClassVar[str] = ""

    @classmethod
    def expected(cls) -> str:
        """What the section must be, in words: ``a mapping with keys a, b and c``."""
        return f"{cls.shorthand}a mapping with keys {_and(list(cls.model_fields))}"

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys(cls, data: object, handler: ModelWrapValidatorHandler[_Section]) -> _Section:
        """Refuse a value that is no mapping, and unknown keys along with the known keys' problems."""
        if isinstance(data, BaseModel):
            return handler(data)
        if not isinstance(data, dict):
            raise UnexpectedValue(cls.expected())
        unknown = [str(key) for key in data if key not in cls.model_fields]
        if not unknown:
            return handler(data)
        problem = UnknownKeys(unknown, list(cls.model_fields), cls.expected())
        errors: list[Any] = [{"type": "value_error", "loc": (), "input": data, "ctx": {"error": problem}}]
        try:
            handler({key: value for key, value in data.items() if key in cls.model_fields})
        except ValidationError as exc:
            errors += exc.errors()
        raise ValidationError.from_exception_data(cls.__name__, errors)


class LimitsSection(_Section):
    """``filesystem.limits``: what every sandboxed command may use (``null`` lifts a limit)."""

    processes: Positive | None = _default(SandboxLimits, "processes")
    """Processes of the sandbox user, all sandboxes together."""
    memory: Size | None = _default(SandboxLimits, "memory")
    """Address space per process (bytes, or 512M, 4G, ...)."""
    file_size: Size | None = _default(SandboxLimits, "file_size")
    """Largest file a command may write."""
    open_files: Positive | None = _default(SandboxLimits, "open_files")
    """Open files per process."""
    cpu_seconds: Positive | None = _default(SandboxLimits, "cpu_seconds")
    """CPU seconds per process."""
    tmp_size: Size | None = _default(SandboxLimits, "tmp_size")
    """Size of the private /tmp."""


def _no_path_in_env(env: dict[str, str | int | float]) -> dict[str, str | int | float]:
    if "PATH" in env:
        raise ValueError("set PATH through filesystem.path (extra folders), not env")
    return env


def _one_folder(value: object) -> object:
    return [value] if isinstance(value, str) else value


class FilesystemSection(_Section):
    """``filesystem``: where the workspace lives and how commands run (a mode name alone is
    ``{mode: NAME}``)."""

    shorthand: ClassVar[str] = "a mode name or "

    mode: Text = _default(HarnessConfig, "filesystem")
    """local, local-shell, sandbox, remote, or a mode a plugin registered."""
    store: Text = _default(HarnessConfig, "store")
    """The key-value store of mode remote (sqlite:///..., mysql://...; default: a SQLite file)."""
    network: Flag = _default(HarnessConfig, "network")
    """Whether sandboxed commands reach the network."""
    timeout: Seconds | None = _default(HarnessConfig, "timeout")
    """Seconds a command may run (null: no limit)."""
    limits: LimitsSection | None = None
    """Resource limits of mode sandbox."""
    env: Annotated[
        dict[str, Annotated[str | int | float, _expect("a string or a number", whole=True)]],
        _expect("a mapping of variable names to strings or numbers"),
        AfterValidator(_no_path_in_env),
    ] = {}
    """Variables every shell command gets (not PATH: see path)."""
    path: Annotated[
        list[Annotated[str, Field(pattern=r"^/[^:]*$"), _expect("an absolute folder without ':'")]],
        _expect("a list of absolute folders without ':'"),
        BeforeValidator(_one_folder, json_schema_input_type=str | list[str]),
    ] = []
    """Folders searched before the system ones, as the shell sees them."""

    @model_validator(mode="after")
    def _limits_need_the_sandbox(self) -> FilesystemSection:
        if "limits" in self.model_fields_set and self.mode != "sandbox":
            raise ValueError("filesystem.limits applies only to mode sandbox")
        return self


class PackagesSection(_Section):
    """``environments.packages``: the operator's packages, by skill and by market."""

    skills: dict[str, Strings] | None = None
    """Skill name or id -> requirements added to its environment."""
    markets: dict[str, Strings] | None = None
    """Market slug -> requirements added to each of its skills' environments."""


class EnvironmentsSection(_Section):
    """``environments``: per-skill Python environments (``true``: the defaults)."""

    shorthand: ClassVar[str] = "true, false or "

    enabled: Flag = True
    """false turns a written section off."""
    index_url: Annotated[str | None, _expect("a URL")] = _default(EnvironmentOptions, "index_url")
    """The package index (an offline mirror)."""
    find_links: Strings = list(_default(EnvironmentOptions, "find_links"))
    """Folders or pages of wheels."""
    no_index: Flag = _default(EnvironmentOptions, "no_index")
    """Use only find_links."""
    only_binary: Flag = _default(EnvironmentOptions, "only_binary")
    """Install wheels only (false lets uv build source distributions on the host)."""
    max_size: Size = _default(EnvironmentOptions, "max_size")
    """Largest environment (bytes, or 512M, 4G, ...)."""
    timeout: Annotated[
        int | float,
        _expect("a number of seconds", whole=True),
        WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
    ] = _default(EnvironmentOptions, "timeout")
    """Seconds one build may take (and a command of its skill waits for it)."""
    wait: Flag = _default(EnvironmentOptions, "wait")
    """A command of a skill whose environment is being built waits for it (false: it is refused at once)."""
    retention_days: Annotated[float | None, Field(ge=0), _expect("a number of days ≥ 0 or null")] = (
        _default(EnvironmentOptions, "retention") / 86400
    )
    """Days an environment no running agent needs is kept before it is removed (null: never automatically)."""
    trusted_markets: Strings | None = None
    """Markets whose own requirements are built (default: the agent's trusted_markets)."""
    untrusted_markets: Flag = _default(EnvironmentOptions, "untrusted_markets")
    """Build every market's own requirements."""
    infer_for: Strings = []
    """Sources (market slugs, workspace, global) whose imports are mapped to packages."""
    packages: PackagesSection | None = None
    """The operator's packages."""


class CuratorSection(_Section):
    """``curator``: run the curator while the agent is entered (``true``: the defaults)."""

    shorthand: ClassVar[str] = "true, false or "

    interval_hours: Amount = _default(CuratorConfig, "interval") / timedelta(hours=1)
    """At most one run per this many hours, across replicas."""
    stale_after_days: Amount = _default(CuratorConfig, "stale_after") / timedelta(days=1)
    """Days unused before an agent-created skill is marked stale."""
    archive_after_days: Amount = _default(CuratorConfig, "archive_after") / timedelta(days=1)
    """Days unused before it is archived."""
    check_every_minutes: Amount | None = None
    """How often each replica checks whether a run is due (default: the interval, at most an hour)."""
    umbrella_review: Flag = False
    """Also write the umbrella-merge review after each run."""


class RuleSection(_Section):
    """One rule of ``approval.rules``: ``action`` for the calls it matches."""

    action: Annotated[Literal["allow", "deny", "ask"], _expect("one of allow, deny, ask")]
    """What the rule decides."""
    pattern: Text = "*"
    """One pattern of the call's subject (the command, the path)."""
    patterns: Strings = list(_default(ApprovalRule, "patterns"))
    """Patterns of the call's subject; * is any text, {skill_root} an invoked skill's folder."""
    tool: Text = "*"
    """One tool name pattern."""
    tools: Strings = list(_default(ApprovalRule, "tools"))
    """Tool name patterns."""
    kinds: Annotated[
        list[Annotated[Literal["shell", "write", "tool"], _expect("one of shell, write, tool")]],
        _expect("a list of shell, write, tool"),
    ] = list(_default(ApprovalRule, "kinds"))
    """The kinds of call the rule applies to."""


class ApprovalSection(_Section):
    """``approval``: which tool calls run, ask or are refused (``allow-all``: every call runs)."""

    shorthand: ClassVar[str] = "'allow-all' or "

    default: Annotated[str, _expect("one of allow, deny, ask"), WithJsonSchema({"enum": ["allow", "deny", "ask"]})] = (
        "ask"
    )
    """The action when no rule matches."""
    rules: Annotated[list[RuleSection], _expect("a list of rules")] = []
    """The rules, the first match deciding."""


class AllowAllSection(ApprovalSection):
    """``approval: allow-all``."""


class MarketScanSection(_Section):
    """``market_scan``: how market skills are scanned when they arrive."""

    default: Level = "report"
    """The level of markets not named in sources: report, block or off."""
    sources: Annotated[dict[str, Level], _expect("a mapping of market slugs to report, block or off")] = {}
    """Market slug -> level."""
    scan_limit: Positive = _default(MarketScanPolicy, "scan_limit")
    """Largest file scanned (bytes)."""


class SessionsSection(_Section):
    """``sessions``: where conversations and runs paused for approval live (a URL alone is
    ``{store: URL}``)."""

    shorthand: ClassVar[str] = "a store URL or "

    store: Text = _default(SessionsConfig, "store")
    """memory: (this process only), sqlite:///file (survives restarts), mysql://... (shared by replicas)."""
    max_messages: Annotated[int, Field(ge=2), _expect("an integer ≥ 2")] = _default(SessionsConfig, "max_messages")
    """Messages each conversation keeps (the oldest dropped)."""
    max_age_days: Annotated[float, Field(gt=0), _expect("a positive number of days")] | None = None
    """Days a conversation untouched is kept (null: forever); harness sessions prune deletes older ones."""


def _one_store(value: object) -> object:
    return {"store": value} if isinstance(value, str) else value


def _one_mode(value: object) -> object:
    return {"mode": value} if isinstance(value, str) else value


def _off(value: object) -> object:
    """``false`` is ``null`` for an optional section; ``true`` is the section's defaults."""
    if value is False:
        return None
    return {} if value is True else value


def _approval(value: object) -> object:
    if value == "allow-all":
        return AllowAllSection()
    return value


class ConfigFile(_Section):
    """``harness.yaml``: an agent's options. Relative paths are resolved against the file's folder."""

    model_config = ConfigDict(title="harness.yaml")

    name: Text = _default(HarnessConfig, "name")
    """The agent's name (its id in stores and audit logs)."""
    workspace: Text = str(_default(HarnessConfig, "workspace"))
    """The workspace folder."""
    global_skills_dir: Folders = None
    """Global skills folder (layer 1), or a list of them, a later one winning."""
    skill_dirs: Annotated[list[Text], _expect("a list of folders such as [skills, .agents/skills]")] = list(
        _default(HarnessConfig, "skill_dirs")
    )
    """Folders of the workspace (and of each user's area) read as skills, the first winning."""
    filesystem: Annotated[
        FilesystemSection, BeforeValidator(_one_mode, json_schema_input_type=str | FilesystemSection)
    ] = FilesystemSection()
    """The filesystem mode, or a mapping of its options."""
    repositories: Annotated[list[Annotated[str, _expect("a URL")]] | None, _expect("a list of URLs")] = None
    """Skill markets: git+https://..., pkg:module/folder, dir:folder, a folder, ..."""
    dynamic_skills: Flag = _default(HarnessConfig, "dynamic_skills")
    """Read each user's own skills layer."""
    model: Text = _default(HarnessConfig, "model")
    """The model: demo, openai:MODEL, anthropic:MODEL, ..."""
    system_prompt: Text = _default(HarnessConfig, "system_prompt")
    """The system prompt before the skills catalog."""
    max_steps: Positive = _default(HarnessConfig, "max_steps")
    """Model calls in one turn."""
    catalog_budget: Annotated[int | None, Field(ge=0), _expect("an integer ≥ 0 or null")] = _default(
        HarnessConfig, "catalog_budget"
    )
    """Characters of the skills catalog (null: no bound; past it the turn gets search_skills)."""
    catalog_format: Annotated[CatalogFormat, _expect(f"one of {', '.join(CATALOG_FORMATS)}")] = _default(
        HarnessConfig, "catalog_format"
    )
    """The catalog's form: auto gives each skill an entry with its skill-id and files-root when all fit whole, else groups them by source; explicit shortens descriptions first; compact always groups."""
    market_timeout: Seconds = _default(HarnessConfig, "market_timeout")
    """Seconds a market may take to answer."""
    market_check_interval: Annotated[float | None, Field(ge=0), _expect("a number of seconds ≥ 0 or null")] = None
    """Seconds between two checks of a git market's remote (null: every turn, or the URL's check_interval)."""
    market_scan: MarketScanSection | None = None
    """Scanning of market skills."""
    max_file_size: Positive = _default(HarnessConfig, "max_file_size")
    """Largest skill file staged (bytes)."""
    enforce_allowed_tools: Flag = _default(HarnessConfig, "enforce_allowed_tools")
    """Hold skills to their allowed-tools field."""
    trusted_markets: Annotated[
        list[Annotated[str, _expect("a market slug")]] | None, _expect("a list of market slugs")
    ] = None
    """Markets whose skills' fields (allowed-tools, ...) are trusted, and whose MCP skills run without activation approval."""
    activation_markets: Annotated[
        list[Annotated[str, _expect("a market slug")]] | None, _expect("a list of market slugs")
    ] = None
    """Markets whose skills need the user's activation approval before their scripts run, as MCP markets' do."""
    curator: Annotated[
        CuratorSection | None, BeforeValidator(_off, json_schema_input_type=bool | CuratorSection | None)
    ] = None
    """The self-running curator."""
    approval: Annotated[
        ApprovalSection | None,
        BeforeValidator(_approval, json_schema_input_type=Literal["allow-all"] | ApprovalSection | None),
    ] = None
    """The approval policy of tool calls."""
    mcp_tokens: Annotated[str | None, _expect("a file path")] = None
    """The bearer token -> user file of harness mcp serve --http."""
    mcp_stateless: Flag = _default(HarnessConfig, "mcp_stateless")
    """harness mcp serve --http keeps no session between requests (replicas behind a load balancer)."""
    environments: Annotated[
        EnvironmentsSection | None, BeforeValidator(_off, json_schema_input_type=bool | EnvironmentsSection | None)
    ] = None
    """Per-skill Python environments."""
    # Pinning skills (docs/pinning.md).
    lock: Annotated[bool | str | None, _expect("true, or the path of a lockfile")] = None
    """Serve exactly the locked skills: true for harness.lock beside this file, or a lockfile path."""
    sessions: Annotated[SessionsSection, BeforeValidator(_one_store, json_schema_input_type=str | SessionsSection)] = (
        SessionsSection()
    )
    """Where conversations live: a store URL, or a mapping of its options."""


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``harness.yaml`` (draft 2020-12), as ``harness/harness.schema.json`` ships it."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **ConfigFile.model_json_schema()}

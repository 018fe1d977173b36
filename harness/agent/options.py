"""The option groups of an agent: small frozen values a :class:`~harness.agent.Harness` is built from.

Each group is what one part of the agent needs and nothing else: :class:`PipelineOptions` the
skill pipeline, :class:`TrustOptions` what a skill's fields may choose, :class:`ControlOptions`
how the app takes part in a run (approvals, input hooks, queues), :class:`LearningOptions` the
self-learning loop. :meth:`Harness.from_config <harness.agent.Harness.from_config>` fills every
group from the file by field name (:func:`options_from`), so a new option a file may set is one
field here, one in :class:`~harness.config.HarnessConfig`, and its key in the file's schema
(``harness/config/schema.py``, read by ``harness/config/loader.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from filesystems import AbstractFilesystem
from harness.agent.hooks import BeforeRun, OnInput
from harness.agent.queues import QueueLimits
from harness.agent.relevance import DEFAULT_RELEVANCE_INTERVAL
from harness.models import Model
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET, CatalogFormat
from harness.pipeline.layers import DEFAULT_MAX_FILE_SIZE
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT, DEFAULT_SKILL_DIRS, SkillPipeline
from harness.pipeline.plan import VisibilityPolicy
from harness.tools.skills import UsageHooks
from repositories import SkillRepository

if TYPE_CHECKING:
    from filesystems import ProgressCallback
    from harness.approval import ApprovalPolicy, Approver
    from harness.config import HarnessConfig
    from harness.learning import CuratorConfig, SelfLearning
    from harness.pipeline.environments import EnvironmentOptions
    from harness.pipeline.lock import Lockfile
    from harness.skills.scanner import MarketScanPolicy

__all__ = [
    "ControlOptions",
    "LearningOptions",
    "PipelineOptions",
    "TrustOptions",
    "as_learning",
    "config_options",
    "options_from",
]

Options = TypeVar("Options")


@dataclass(frozen=True, kw_only=True)
class PipelineOptions:
    """How the agent's skill pipeline finds, checks and shows skills.

    ``global_skills_dir`` is layer 1 (one folder or a list, a later one winning); ``skill_dirs``
    are the workspace's (and each user's) skill folders, the first winning. ``dynamic_skills``
    reads each user's own layer; ``watch`` follows folder changes with watchers (``False``:
    only ``refresh()`` / ``invalidate()``). ``catalog_budget`` bounds the catalog's characters
    (``None``: no bound; past it the turn is offered ``search_skills``); ``catalog_format`` is
    its form: ``auto`` (each skill an entry with its ``<skill-id>`` and ``<files-root>`` when
    all fit whole, else grouped by source), ``explicit`` or ``compact`` (see
    :mod:`harness.pipeline.catalog`); ``market_timeout`` is
    the seconds a market may take to answer; ``market_check_interval`` the seconds between two
    checks of a git market's remote (``None``: each market's own, by default every turn);
    ``max_file_size`` the largest skill file staged;
    ``market_scan`` the policy market skills are scanned with; ``visibility`` filters the skills
    of each turn. ``environments`` (``True`` or :class:`~harness.pipeline.EnvironmentOptions`)
    installs each skill's Python requirements in the background (see README, "Environments").
    ``progress`` hears about long work, such as a staging pass that writes many files
    (:class:`filesystems.Progress` reports; the CLI shows them as one updating line).
    ``lock`` (the path of ``harness.lock``, or a :class:`~harness.pipeline.Lockfile`) serves
    exactly the locked skills (see docs/pinning.md).
    """

    global_skills_dir: str | Path | Sequence[str | Path] | None = None
    skill_dirs: Sequence[str] = DEFAULT_SKILL_DIRS
    dynamic_skills: bool = True
    watch: bool = True
    catalog_budget: int | None = DEFAULT_CATALOG_BUDGET
    catalog_format: CatalogFormat = "auto"
    market_timeout: float = DEFAULT_MARKET_TIMEOUT
    market_check_interval: float | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    market_scan: MarketScanPolicy | None = None
    visibility: VisibilityPolicy | None = None
    environments: EnvironmentOptions | bool | None = None
    progress: ProgressCallback | None = None
    lock: str | Path | Lockfile | None = None

    def build(
        self,
        filesystem: AbstractFilesystem,
        repositories: Sequence[SkillRepository],
        *,
        visibility: VisibilityPolicy | None,
        trusted_markets: frozenset[str],
    ) -> SkillPipeline:
        """The pipeline of these options; ``visibility`` applies when the options name none (the
        learning loop's), and environments that name no trusted markets take ``trusted_markets``."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["visibility"] = self.visibility or visibility
        fields["environments"] = _environments(self.environments, trusted_markets)
        return SkillPipeline(filesystem=filesystem, repositories=repositories, **fields)


@dataclass(frozen=True, kw_only=True)
class TrustOptions:
    """What an explicitly invoked skill's own fields may choose.

    ``models`` names models a skill's ``model:`` field may pick (before ``open_model`` specs);
    ``enforce_allowed_tools`` narrows the skill's turn to its ``allowed-tools``. A market skill
    does either only when its market is one of ``trusted_markets`` (market slugs, or a plugin
    marketplace's exact plugin slugs). Running the scripts of an MCP market's skill needs the
    user's activation approval, bound to the skill's content, unless its market is trusted;
    ``activation_markets`` (market slugs) asks the same approval for other markets' skills. That
    approval also lets the skill's ``allowed-tools`` narrow the user's turns (never its model).
    """

    models: Mapping[str, Model] = field(default_factory=dict)
    enforce_allowed_tools: bool = False
    trusted_markets: Collection[str] = frozenset()
    activation_markets: Collection[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "trusted_markets", frozenset(self.trusted_markets))
        object.__setattr__(self, "activation_markets", frozenset(self.activation_markets))


@dataclass(frozen=True, kw_only=True)
class ControlOptions:
    """How the app takes part in a run.

    ``approval`` decides shell commands, writes and tools marked ``requires_approval`` before
    they run; ``approver`` answers the calls it asks about, one question at a time (without one,
    a run pauses for ``resolve_approval``). ``on_input`` and ``before_run`` are the input hooks
    (:mod:`harness.agent.hooks`); ``queue_limits`` bounds the steering and follow-up queues and
    the paused runs each user and all users may keep.
    """

    approval: ApprovalPolicy | None = None
    approver: Approver | None = None
    on_input: OnInput | None = None
    before_run: BeforeRun | None = None
    queue_limits: QueueLimits | None = None


@dataclass(frozen=True, kw_only=True)
class LearningOptions:
    """The self-learning loop and what runs with it.

    ``loop``: ``True`` (or a configured :class:`~harness.learning.SelfLearning`) turns on the
    authoring tools, usage recording, visibility filters, promotion and the curator's methods.
    ``curator`` (a :class:`~harness.learning.CuratorConfig`) runs the curator in its own task
    while the agent is entered, throttled across replicas (with or without the loop).
    ``relevance_interval``: with the loop, the catalog orders skills by their usage counts, read
    in the background at most every that many seconds (``None``: never). ``usage`` are hooks
    the skill tools report views and uses to when there is no loop (the loop's recorder
    otherwise).
    """

    loop: bool | SelfLearning = False
    curator: CuratorConfig | None = None
    relevance_interval: float | None = DEFAULT_RELEVANCE_INTERVAL
    usage: UsageHooks | None = None


def config_options(config: HarnessConfig, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor arguments of :meth:`Harness.from_config <harness.agent.Harness.from_config>`:
    the agent's own fields and every group filled from ``config``, then ``overrides`` (a
    group's field among them changes just that field)."""
    rest = dict(overrides)
    if "learning" in rest and not isinstance(rest["learning"], LearningOptions):
        rest["loop"] = rest.pop("learning")
    options: dict[str, Any] = {key: getattr(config, key) for key in ("name", "model", "system_prompt", "max_steps")}
    options["pipeline"] = options_from(PipelineOptions, config, rest)
    options["trust"] = options_from(TrustOptions, config, rest)
    options["control"] = options_from(ControlOptions, config, rest)
    options["learning"] = options_from(LearningOptions, config, rest)
    return {**options, **rest}


def options_from(kind: type[Options], source: object, overrides: dict[str, Any]) -> Options:
    """``kind`` filled from ``source``'s attributes of the same names, then from ``overrides``
    (the keys used are removed from it)."""
    names = [f.name for f in dataclasses.fields(kind)]  # type: ignore[arg-type]
    values = {name: getattr(source, name) for name in names if hasattr(source, name)}
    values.update({name: overrides.pop(name) for name in names if name in overrides})
    return kind(**values)


def _environments(environments: EnvironmentOptions | bool | None, trusted: frozenset[str]) -> EnvironmentOptions | None:
    """``True`` means the default options; options that name no ``trusted_markets`` take ``trusted``."""
    if environments is None or environments is False:
        return None
    from harness.pipeline.environments import EnvironmentOptions  # loaded when environments are on

    options = EnvironmentOptions() if environments is True else environments
    if options.trusted_markets is None:
        options = dataclasses.replace(options, trusted_markets=trusted)
    return options


def as_learning(learning: LearningOptions | bool | SelfLearning) -> LearningOptions:
    """``learning`` as options: a switch or a loop is sugar for ``LearningOptions(loop=...)``."""
    return learning if isinstance(learning, LearningOptions) else LearningOptions(loop=learning)

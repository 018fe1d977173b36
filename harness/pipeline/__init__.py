"""The per-turn pipeline: layers as sources, merge, staging, catalog, watch and the turn plan."""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
from harness.pipeline.catalog import (
    LOAD_TOOL,
    SHELL_TOOL,
    WORKFLOW_CONTINUE_TOOL,
    WORKFLOW_START_TOOL,
    CatalogEntry,
    entries_for,
    render_catalog,
)
from harness.pipeline.labels import SourceLabels
from harness.pipeline.layers import (
    DEFAULT_MAX_FILE_SIZE,
    LayerEntry,
    LayerResult,
    SkillLayer,
    describe_error,
)
from harness.pipeline.merge import Merged, Shadowing, merge_layers
from harness.pipeline.pipeline import SkillPipeline
from harness.pipeline.plan import (
    CommandEnvironments,
    EnvironmentNotReady,
    EnvironmentWait,
    ResolvedSkill,
    TurnPlan,
    VisibilityPolicy,
)
from harness.pipeline.search import MAX_QUERY_CHARS, MAX_QUERY_TERMS, QueryTooLarge
from harness.pipeline.watch import DEBOUNCE_MS, TreeWatcher, WatchBackend

if TYPE_CHECKING:  # skills' Python environments, the lockfile and staging (a shell's) load on first use
    from harness.pipeline.environments import EnvironmentManager, EnvironmentOptions, SkillEnvironment
    from harness.pipeline.lock import LockChange, LockError, Lockfile
    from harness.pipeline.reclaim import Reclaimed
    from harness.pipeline.staging import StageItem, Stager, StageResult, staged_mode
    from harness.pipeline.uv import EnvironmentBuildError

__all__ = [
    "DEBOUNCE_MS",
    "DEFAULT_MAX_FILE_SIZE",
    "LOAD_TOOL",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "SHELL_TOOL",
    "WORKFLOW_CONTINUE_TOOL",
    "WORKFLOW_START_TOOL",
    "CatalogEntry",
    "CommandEnvironments",
    "EnvironmentBuildError",
    "EnvironmentManager",
    "EnvironmentNotReady",
    "EnvironmentOptions",
    "EnvironmentWait",
    "LayerEntry",
    "LayerResult",
    "LockChange",
    "LockError",
    "Lockfile",
    "Merged",
    "QueryTooLarge",
    "Reclaimed",
    "ResolvedSkill",
    "Shadowing",
    "SkillEnvironment",
    "SkillLayer",
    "SkillPipeline",
    "SourceLabels",
    "StageItem",
    "StageResult",
    "Stager",
    "TreeWatcher",
    "TurnPlan",
    "VisibilityPolicy",
    "WatchBackend",
    "describe_error",
    "entries_for",
    "merge_layers",
    "render_catalog",
    "staged_mode",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use

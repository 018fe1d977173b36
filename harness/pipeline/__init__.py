"""The per-turn pipeline: layers as sources, merge, staging, catalog, watch and the turn plan."""

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
    LayerEntry,
    LayerResult,
    SkillLayer,
    describe_error,
)
from harness.pipeline.merge import Merged, Shadowing, merge_layers
from harness.pipeline.pipeline import SkillPipeline
from harness.pipeline.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.pipeline.staging import DEFAULT_MAX_FILE_SIZE, StageItem, Stager, StageResult, staged_mode
from harness.pipeline.watch import DEBOUNCE_MS, TreeWatcher

__all__ = [
    "DEBOUNCE_MS",
    "DEFAULT_MAX_FILE_SIZE",
    "LOAD_TOOL",
    "SHELL_TOOL",
    "WORKFLOW_CONTINUE_TOOL",
    "WORKFLOW_START_TOOL",
    "CatalogEntry",
    "LayerEntry",
    "LayerResult",
    "Merged",
    "ResolvedSkill",
    "Shadowing",
    "SkillLayer",
    "SkillPipeline",
    "SourceLabels",
    "StageItem",
    "StageResult",
    "Stager",
    "TreeWatcher",
    "TurnPlan",
    "VisibilityPolicy",
    "describe_error",
    "entries_for",
    "merge_layers",
    "render_catalog",
    "staged_mode",
]

"""The workflow engine: deterministic, resumable, guarded multi-step skills.

A skill folder with ``workflow.yaml`` (or the Comet layout ``comet/skill.yaml``) describes a
goal, declared skills/tools/agents, guardrails, runtime checks and either a deterministic step
graph or an adaptive mode. :class:`WorkflowEngine` runs it one persisted action at a time,
pinned to a content-hashed snapshot of the package, through the filesystem abstraction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from filesystems import lazy_exports

if TYPE_CHECKING:
    from harness.engine.action import ACTION_ID_ENV, STEP_READS_ENV, ActionContext, current_action, performing
    from harness.engine.checks import CheckReport, CheckResult
    from harness.engine.comet import COMET_EVENTS, COMET_STATUSES, comet_event, comet_status
    from harness.engine.definition import (
        Action,
        AgentDecl,
        ArtifactDecl,
        Check,
        Goal,
        Guardrails,
        NamedValue,
        SkillDecl,
        StateMachine,
        Step,
        ToolDecl,
        Workflow,
    )
    from harness.engine.engine import WorkflowEngine
    from harness.engine.executor import Executor
    from harness.engine.loader import check_workflow, is_workflow_package, load_workflow
    from harness.engine.package import SkillPackage
    from harness.engine.run import (
        Blocked,
        Event,
        HandoffRecord,
        Outcome,
        PendingAction,
        Run,
        RunStatus,
        action_id,
    )
    from harness.engine.schema import load_schema
    from harness.engine.store import RunKey, run_relative
    from harness.engine.transitions import DECISIONS, Decision
from harness.engine.errors import (
    ChecksFailed,
    EngineError,
    OutcomeConflict,
    OutcomeRefused,
    RequirementUnmet,
    RunConflict,
    RunExists,
    RunNotFound,
    RunRecordCorrupt,
    RunStateError,
    RunTampered,
    SnapshotIntegrityError,
    UpgradeRefused,
    WorkflowDefinitionError,
)

__all__ = [
    "ACTION_ID_ENV",
    "COMET_EVENTS",
    "COMET_STATUSES",
    "DECISIONS",
    "STEP_READS_ENV",
    "Action",
    "ActionContext",
    "AgentDecl",
    "ArtifactDecl",
    "Blocked",
    "Check",
    "CheckReport",
    "CheckResult",
    "ChecksFailed",
    "Decision",
    "EngineError",
    "Event",
    "Executor",
    "Goal",
    "Guardrails",
    "HandoffRecord",
    "NamedValue",
    "Outcome",
    "OutcomeConflict",
    "OutcomeRefused",
    "PendingAction",
    "RequirementUnmet",
    "Run",
    "RunConflict",
    "RunExists",
    "RunKey",
    "RunNotFound",
    "RunRecordCorrupt",
    "RunStateError",
    "RunStatus",
    "RunTampered",
    "SkillDecl",
    "SkillPackage",
    "SnapshotIntegrityError",
    "StateMachine",
    "Step",
    "ToolDecl",
    "UpgradeRefused",
    "Workflow",
    "WorkflowDefinitionError",
    "WorkflowEngine",
    "action_id",
    "check_workflow",
    "comet_event",
    "comet_status",
    "current_action",
    "is_workflow_package",
    "load_schema",
    "load_workflow",
    "performing",
    "run_relative",
]

__getattr__, __dir__ = lazy_exports(__name__)

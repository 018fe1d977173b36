"""The workflow engine: deterministic, resumable, guarded multi-step skills (DESIGN §9).

A skill folder with ``workflow.yaml`` (or the Comet layout ``comet/skill.yaml``) describes a
goal, declared skills/tools/agents, guardrails, runtime checks and either a deterministic step
graph or an adaptive mode. :class:`WorkflowEngine` runs it one persisted action at a time,
pinned to a content-hashed snapshot of the package, through the filesystem abstraction.
"""

from harness.engine.checks import CheckReport, CheckResult
from harness.engine.definition import (
    Action,
    AgentDecl,
    Check,
    Goal,
    Guardrails,
    NamedValue,
    SkillDecl,
    Step,
    ToolDecl,
    Workflow,
)
from harness.engine.engine import WorkflowEngine
from harness.engine.errors import (
    ChecksFailed,
    EngineError,
    OutcomeConflict,
    RunConflict,
    RunExists,
    RunNotFound,
    RunStateError,
    RunTampered,
    SnapshotIntegrityError,
    UpgradeRefused,
    WorkflowDefinitionError,
)
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

__all__ = [
    "Action",
    "AgentDecl",
    "Blocked",
    "Check",
    "CheckReport",
    "CheckResult",
    "ChecksFailed",
    "EngineError",
    "Event",
    "Executor",
    "Goal",
    "Guardrails",
    "HandoffRecord",
    "NamedValue",
    "Outcome",
    "OutcomeConflict",
    "PendingAction",
    "Run",
    "RunConflict",
    "RunExists",
    "RunKey",
    "RunNotFound",
    "RunStateError",
    "RunStatus",
    "RunTampered",
    "SkillDecl",
    "SkillPackage",
    "SnapshotIntegrityError",
    "Step",
    "ToolDecl",
    "UpgradeRefused",
    "Workflow",
    "WorkflowDefinitionError",
    "WorkflowEngine",
    "action_id",
    "check_workflow",
    "is_workflow_package",
    "load_schema",
    "load_workflow",
    "run_relative",
]

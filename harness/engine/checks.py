"""Runtime checks: ``artifact_exists`` and ``state_equals`` at scope step, completion, progress.

Checks are pure functions of the run and the set of files under the run's ``artifacts/``
folder (which the engine lists in one call before evaluating).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from harness.engine.definition import Check, CheckScope, Workflow
from harness.engine.run import Run

__all__ = ["CheckReport", "CheckResult", "evaluate_checks", "run_view"]


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """One check's verdict and a sentence saying why."""

    id: str
    passed: bool
    detail: str


@dataclass(frozen=True, kw_only=True)
class CheckReport:
    """The verdicts of the checks evaluated at one scope; ``passed`` when all passed."""

    scope: CheckScope
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """Whether every check passed (vacuously true without checks)."""
        return all(result.passed for result in self.results)

    @property
    def failed(self) -> tuple[str, ...]:
        """The ids of the checks that did not pass."""
        return tuple(result.id for result in self.results if not result.passed)


def run_view(run: Run) -> dict[str, Any]:
    """What ``state_equals`` field paths read: ``vars``, ``artifacts``, ``status``,
    ``current_step``, ``iteration``, ``skill``, ``domain_state``."""
    return {
        "vars": dict(run.vars),
        "artifacts": dict(run.artifacts),
        "status": run.status,
        "current_step": run.current_step,
        "iteration": run.iteration,
        "skill": run.skill,
        "domain_state": run.domain_state,
    }


def evaluate_checks(
    workflow: Workflow,
    run: Run,
    scope: CheckScope,
    files: frozenset[str],
    *,
    ids: Iterable[str] | None = None,
) -> CheckReport:
    """Evaluate the checks of ``scope`` (or exactly ``ids``) against ``run``.

    ``files`` are the paths present under the run's ``artifacts/`` folder. Completion checks
    see the run as it would be once completed (``status`` = ``completed``).
    """
    if ids is not None:
        checks = [workflow.check(check_id) for check_id in ids]
    else:
        checks = [check for check in workflow.checks if check.scope == scope]
    if scope == "completion":
        run = replace(run, status="completed")
    view = run_view(run)
    return CheckReport(scope=scope, results=tuple(_evaluate(c, run, view, files) for c in checks))


def _evaluate(check: Check, run: Run, view: Mapping[str, Any], files: frozenset[str]) -> CheckResult:
    if check.type == "artifact_exists":
        name = check.artifact or ""
        if name in run.artifacts:
            return CheckResult(id=check.id, passed=True, detail=f"artifact {name!r} was reported")
        if name in files:
            return CheckResult(id=check.id, passed=True, detail=f"artifacts/{name} exists")
        return CheckResult(id=check.id, passed=False, detail=f"no artifact {name!r} reported or stored")
    found, value = _lookup(view, check.field or "")
    if not found:
        return CheckResult(id=check.id, passed=False, detail=f"{check.field} is not set")
    # ``True == 1`` in Python; a check for ``true`` must not pass on ``1``.
    passed = value == check.equals and isinstance(value, bool) == isinstance(check.equals, bool)
    relation = "equals" if passed else "is"
    return CheckResult(
        id=check.id,
        passed=passed,
        detail=f"{check.field} {relation} {value!r}" + ("" if passed else f", expected {check.equals!r}"),
    )


def _lookup(view: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    current: Any = view
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current

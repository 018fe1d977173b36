"""Semantic checks of a parsed workflow: references, duplicates and reachability.

Errors: duplicate ids, an entry / ``next`` / ``on_failure`` naming no step, an action or
``allowed_tools`` naming an undeclared skill, tool or agent, an unknown completion check, a
guardrail allowing something undeclared; for skill groups, a hand-off whose ``produces`` the
next step does not ``accept``, a ``states`` table naming undeclared states or a ``moves_to``
without one. Warnings: steps unreachable from the entry, steps whose action the guardrails will
block, a state check on an unknown field root, a ``requires`` / ``reads`` entry nothing provides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.diagnostics import Diagnostic
from harness.engine.definition import ACTION_TYPES, Step, Workflow
from harness.engine.spelling import Spelling

__all__ = ["STATE_ROOTS", "validate_workflow"]

#: The roots a ``state_equals`` field path may start with (see :func:`harness.engine.checks.run_view`).
STATE_ROOTS = ("vars", "artifacts", "status", "current_step", "iteration", "skill", "domain_state")


@dataclass
class _Findings:
    spelling: Spelling
    items: list[Diagnostic]

    def add(self, severity: str, file: str, path: str, problem: str, code: str) -> None:
        self.items.append(
            Diagnostic(
                severity="error" if severity == "error" else "warning",
                code=code,
                message=f"{path} {problem}",
                location=file,
            )
        )

    def error(self, path: str, problem: str, code: str, *, file: str | None = None) -> None:
        self.add("error", file or self.spelling.definition_file, path, problem, code)

    def warn(self, path: str, problem: str, code: str, *, file: str | None = None) -> None:
        self.add("warning", file or self.spelling.definition_file, path, problem, code)


def validate_workflow(workflow: Workflow, spelling: Spelling) -> list[Diagnostic]:
    """Every semantic problem of ``workflow``, worded in the layout's own spelling."""
    findings = _Findings(spelling, [])
    _duplicates(findings, "skills", (s.id for s in workflow.skills))
    _duplicates(findings, "tools", (t.id for t in workflow.tools))
    _duplicates(findings, "agents", (a.id for a in workflow.agents))
    _duplicates(findings, "orchestration.steps", (s.id for s in workflow.steps))
    _duplicates(findings, spelling.checks_key, (c.id for c in workflow.checks), file=spelling.checks_file)
    _duplicates(findings, "artifacts", (a.name for a in workflow.artifacts), key="name")
    _guardrails(findings, workflow)
    _checks(findings, workflow)
    _states(findings, workflow)
    if workflow.mode == "deterministic":
        _steps(findings, workflow)
        _contracts(findings, workflow)
    return findings.items


def _duplicates(
    findings: _Findings, path: str, ids: Iterable[str], *, file: str | None = None, key: str = "id"
) -> None:
    seen: set[str] = set()
    for index, item_id in enumerate(ids):
        if item_id in seen:
            findings.error(f"{path}[{index}].{key}", f"duplicates {key} {item_id!r}", "workflow-duplicate", file=file)
        seen.add(item_id)


def _guardrails(findings: _Findings, workflow: Workflow) -> None:
    spelling, rails = findings.spelling, workflow.guardrails
    declared = {
        "allowed_skills": ({s.id for s in workflow.skills}, "skill", rails.allowed_skills),
        "allowed_tools": ({t.id for t in workflow.tools}, "tool", rails.allowed_tools),
        "allowed_agents": ({a.id for a in workflow.agents}, "agent", rails.allowed_agents),
    }
    for key, (ids, what, allowed) in declared.items():
        for index, item in enumerate(allowed):
            if item not in ids:
                findings.error(
                    f"{spelling.key(key)}[{index}]",
                    f"allows undeclared {what} {item!r}",
                    "workflow-undeclared",
                    file=spelling.guardrails_file,
                )
    known = {id_ for ids, _, _ in declared.values() for id_ in ids} | set(ACTION_TYPES)
    for index, item in enumerate(rails.confirmation_required_for):
        if item not in known:
            findings.error(
                f"{spelling.key('confirmation_required_for')}[{index}]",
                f"names {item!r}, which is neither a declared skill, tool or agent nor an action type",
                "workflow-undeclared",
                file=spelling.guardrails_file,
            )


def _checks(findings: _Findings, workflow: Workflow) -> None:
    spelling = findings.spelling
    for index, check in enumerate(workflow.checks):
        if check.type == "state_equals" and check.field is not None:
            root = check.field.split(".", 1)[0]
            if root not in STATE_ROOTS:
                findings.warn(
                    f"{spelling.checks_key}[{index}].field",
                    f"starts with {root!r}, which the run view does not have "
                    f"({', '.join(STATE_ROOTS)}); the check can never pass",
                    "workflow-check-field",
                    file=spelling.checks_file,
                )


def _steps(findings: _Findings, workflow: Workflow) -> None:
    spelling = findings.spelling
    step_ids = {s.id for s in workflow.steps}
    if workflow.entry is not None and workflow.entry not in step_ids:
        findings.error("orchestration.entry", f"refers to undefined step {workflow.entry!r}", "workflow-undefined-step")
    check_ids = {c.id for c in workflow.checks}
    tool_ids = {t.id for t in workflow.tools}
    for index, step in enumerate(workflow.steps):
        for key, target in _targets(step):
            if target not in step_ids:
                findings.error(
                    spelling.step_path(index, *key), f"refers to undefined step {target!r}", "workflow-undefined-step"
                )
        for n, check_id in enumerate(step.completion_checks):
            if check_id not in check_ids:
                findings.error(
                    f"{spelling.step_path(index, 'completion_checks')}[{n}]",
                    f"refers to undefined check {check_id!r}",
                    "workflow-undefined-check",
                )
        for n, tool_id in enumerate(step.allowed_tools or ()):
            if tool_id not in tool_ids:
                findings.error(
                    f"{spelling.step_path(index, 'allowed_tools')}[{n}]",
                    f"refers to undeclared tool {tool_id!r}",
                    "workflow-undeclared",
                )
        _step_action(findings, workflow, index, step)
    _unreachable(findings, workflow)


def _targets(step: Step) -> list[tuple[Sequence[str], str]]:
    targets: list[tuple[Sequence[str], str]] = []
    if isinstance(step.next, str):
        targets.append((("next",), step.next))
    elif step.next is not None:
        targets.extend((("next", status), target) for status, target in step.next.items() if target)
    if step.on_failure:
        targets.append((("on_failure",), step.on_failure))
    return targets


def _step_action(findings: _Findings, workflow: Workflow, index: int, step: Step) -> None:
    spelling, action, rails = findings.spelling, step.action, workflow.guardrails
    pools = {
        "invoke_skill": ("ref", "skill", {s.id for s in workflow.skills}, rails.allowed_skills),
        "call_tool": ("ref", "tool", {t.id for t in workflow.tools}, rails.allowed_tools),
        "handoff": ("to", "agent", {a.id for a in workflow.agents}, rails.allowed_agents),
    }
    if action.type not in pools:
        return
    key, what, declared, allowed = pools[action.type]
    target = action.target or ""
    path = spelling.step_path(index, "action", key)
    if target not in declared:
        findings.error(path, f"refers to undeclared {what} {target!r}", "workflow-undeclared")
    elif target not in allowed:
        findings.warn(
            path,
            f"uses {what} {target!r}, which the guardrails do not allow: runs will block here",
            "workflow-blocked-step",
        )
    elif action.type == "call_tool" and step.allowed_tools is not None and target not in step.allowed_tools:
        findings.warn(
            path,
            f"calls tool {target!r}, which the step's allowed tools leave out: runs will block here",
            "workflow-blocked-step",
        )


def _unreachable(findings: _Findings, workflow: Workflow) -> None:
    if workflow.entry is None or not workflow.has_step(workflow.entry):
        return
    by_id = {s.id: s for s in workflow.steps}
    reached = {workflow.entry}
    frontier = [workflow.entry]
    while frontier:
        for _, target in _targets(by_id[frontier.pop()]):
            if target in by_id and target not in reached:
                reached.add(target)
                frontier.append(target)
    for index, step in enumerate(workflow.steps):
        if step.id not in reached:
            findings.warn(
                findings.spelling.step_path(index),
                f"(step {step.id!r}) is unreachable from entry {workflow.entry!r}",
                "workflow-unreachable",
            )


def _states(findings: _Findings, workflow: Workflow) -> None:
    machine = workflow.states
    if machine is None:
        for index, step in enumerate(workflow.steps):
            if step.moves_to:
                findings.error(
                    findings.spelling.step_path(index, "moves_to"),
                    "needs a top-level states table with the legal transitions",
                    "workflow-states",
                )
        return
    known = set(machine.states)
    if machine.initial not in known:
        findings.error(
            "states.initial",
            f"names {machine.initial!r}, which is not a state of states.transitions ({', '.join(machine.states)})",
            "workflow-states",
        )
    for state, targets in machine.transitions.items():
        for n, target in enumerate(targets):
            if target not in known:
                findings.error(
                    f"states.transitions.{state}[{n}]",
                    f"moves to undeclared state {target!r}; list it as a key of states.transitions",
                    "workflow-states",
                )
    for index, step in enumerate(workflow.steps):
        for status, target in step.moves_to.items():
            if target not in known:
                findings.error(
                    f"{findings.spelling.step_path(index, 'moves_to')}.{status}",
                    f"names undeclared state {target!r} ({', '.join(machine.states)})",
                    "workflow-states",
                )


def _contracts(findings: _Findings, workflow: Workflow) -> None:
    """Hand-offs between steps: schema versions along every edge, and what ``requires`` /
    ``reads`` name exists somewhere (a goal input, a declared artifact, a step's writes)."""
    spelling = findings.spelling
    by_id = {s.id: s for s in workflow.steps}
    for index, step in enumerate(workflow.steps):
        for key, target in _targets(step):
            nxt = by_id.get(target)
            if nxt is None or step.produces is None or nxt.accepts is None or step.produces in nxt.accepts:
                continue
            findings.error(
                spelling.step_path(index, *key),
                f"hands off schema {step.produces!r} (produces of step {step.id!r}) to step {target!r}, "
                f"which accepts {', '.join(map(repr, nxt.accepts))}",
                "workflow-schema-mismatch",
            )
    provided = {i.name for i in workflow.goal.inputs} | {a.name for a in workflow.artifacts}
    declared_writes = [step.writes for step in workflow.steps]
    if any(writes is None for writes in declared_writes):
        return  # a step may write anything: nothing to compare against
    provided |= {name for writes in declared_writes for name in writes or ()}
    checks = {c.id for c in workflow.checks}
    for index, step in enumerate(workflow.steps):
        for key, names in (("requires", step.requires), ("reads", step.reads)):
            for n, name in enumerate(names):
                if name in provided or (key == "requires" and name in checks):
                    continue
                findings.warn(
                    f"{spelling.step_path(index, key)}[{n}]",
                    f"names {name!r}, which no goal input, declared artifact or step's writes provides"
                    + (" and no check has as id" if key == "requires" else ""),
                    "workflow-unprovided",
                )

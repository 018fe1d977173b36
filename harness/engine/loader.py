"""Load a workflow definition from a skill package's files, native or Comet layout.

Native layout (snake_case; an unknown key is an error)::

    workflow.yaml     name, version, description, goal, orchestration, skills, tools, agents,
                      artifacts, states, side_files                          (last three optional)
    guardrails.yaml   allowed_skills, allowed_tools, allowed_agents, max_iterations,
                      max_retries_per_action, confirmation_required_for      (optional)
    checks.yaml       checks: [{id, type, scope, artifact | field + equals}]  (optional;
                      or evals.yaml, Comet's name for it — never both)

Comet layout (``apiVersion: comet/v1alpha1``, ``kind: Skill``; camelCase; an unknown key is a
warning and is ignored)::

    comet/skill.yaml  apiVersion, kind, metadata{name, version, description}, goal,
                      orchestration, skills, tools, agents
    comet/guardrails.yaml, comet/checks.yaml or comet/evals.yaml (checks under ``runtime:``)

``skills`` entries are mappings (``{id, source, version}``) or just names (``- comet-open``).

Skill groups (both layouts; see ``schema/workflow.schema.json`` and :mod:`harness.engine.transitions`
for what the engine enforces)::

    artifacts:  [{name, final, description}] or names     a final artifact is written once
    states:     {initial, transitions: {state: [states]}}  the legal domain transitions
    step keys:  reads, writes        state keys / artifacts given to / settable by the step
                requires             check ids or keys that must hold to enter the step
                accepts, produces    schema versions taken / given at hand-offs
                moves_to             state, or {succeeded|failed: state}, entered after the step

``side_files`` (Comet ``sideFiles``) asks for Comet's ``context.md`` / ``checkpoint.json`` next
to the run's record (see :mod:`harness.engine.side_files`).

Key mapping, Comet → native: ``metadata.name/version/description`` → top-level
``name/version/description``; camelCase → snake_case (``maxIterations`` → ``max_iterations``,
``maxRetriesPerAction`` → ``max_retries_per_action``, ``confirmationRequiredFor`` →
``confirmation_required_for``, ``allowedTools`` → ``allowed_tools``, ``sideEffect`` →
``side_effect``, ``requiresConfirmation`` → ``requires_confirmation``, ``onFailure`` →
``on_failure``); ``completionEvals`` → ``completion_checks``; ``runtime`` (checks.yaml) →
``checks``; in actions ``prompt`` → ``instructions`` and, for ``handoff``, ``ref`` → ``to``.

Every problem is a :class:`~harness.diagnostics.Diagnostic` whose ``location`` is the file and
whose message is ``<field path> <problem>``, the path spelled as in the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, cast

import yaml

from filesystems import loose_path_problem
from harness.diagnostics import Diagnostic
from harness.engine.definition import (
    ACTION_TYPES,
    Action,
    AgentDecl,
    ArtifactDecl,
    Check,
    Goal,
    Guardrails,
    NamedValue,
    Next,
    SkillDecl,
    StateMachine,
    Step,
    ToolDecl,
    Workflow,
)
from harness.engine.errors import WorkflowDefinitionError
from harness.engine.side_files import SIDE_FILES
from harness.engine.spelling import COMET, COMET_FILES, EVALS_FILES, NATIVE, NATIVE_FILES, Spelling
from harness.engine.validation import validate_workflow
from harness.skills.bounded_yaml import YAMLLimitExceeded, load_bounded_yaml
from harness.skills.skill import is_workflow_package

__all__ = [
    "COMET_FILES",
    "EVALS_FILES",
    "NATIVE_FILES",
    "check_workflow",
    "definition_files",
    "is_workflow_package",
    "load_workflow",
]

_COMET_API_VERSION = "comet/v1alpha1"
_MAX_FILE_BYTES = 256 * 1024


def definition_files(paths: Iterable[str]) -> tuple[str, ...]:
    """The definition files among ``paths`` (both layouts), sorted."""
    wanted = set(NATIVE_FILES) | set(COMET_FILES) | set(EVALS_FILES)
    return tuple(sorted(p for p in paths if p in wanted))


def load_workflow(files: Mapping[str, bytes], *, name: str) -> Workflow:
    """Load and validate the workflow in a package's ``files`` (relative path → bytes).

    ``name`` names the package (its folder); it is the workflow's name unless the definition
    sets one. Raises :class:`WorkflowDefinitionError` listing every error.
    """
    workflow, problems = check_workflow(files, name=name)
    if workflow is None:
        raise WorkflowDefinitionError(name, problems)
    return workflow


def check_workflow(files: Mapping[str, bytes], *, name: str) -> tuple[Workflow | None, tuple[Diagnostic, ...]]:
    """Load and validate without raising: ``(workflow or None, every error and warning)``.

    The workflow is ``None`` exactly when there is at least one error.
    """
    if NATIVE_FILES[0] in files:
        dialect = NATIVE
    elif COMET_FILES[0] in files:
        dialect = COMET
    else:
        missing = Diagnostic.error(
            code="workflow-missing",
            message=f"document not found (expected {NATIVE_FILES[0]} or {COMET_FILES[0]})",
            location=NATIVE_FILES[0],
        )
        return None, (missing,)
    if dialect.evals_file in files:  # Comet's name for the checks file: read and report it as such
        dialect = replace(dialect, checks_file=dialect.evals_file, evals_file=dialect.checks_file)
    diagnostics: list[Diagnostic] = []
    if dialect.format == "native" and COMET_FILES[0] in files:
        diagnostics.append(
            Diagnostic.warning(
                code="workflow-comet-ignored",
                message=f"document ignored: {NATIVE_FILES[0]} takes precedence",
                location=COMET_FILES[0],
            )
        )
    workflow = _Parser(dialect, diagnostics).parse(files, name)
    if workflow is not None:
        diagnostics.extend(validate_workflow(workflow, dialect))
    failed = any(d.severity == "error" for d in diagnostics)
    return (None if failed else workflow), tuple(diagnostics)


_TOP_KEYS = (
    "name",
    "version",
    "description",
    "goal",
    "orchestration",
    "skills",
    "tools",
    "agents",
    "artifacts",
    "states",
    "side_files",
)
_GOAL_KEYS = ("statement", "inputs", "outputs", "success")
_NAMED_KEYS = ("name", "description", "required")
_ORCHESTRATION_KEYS = ("mode", "entry", "steps")
_STEP_KEYS = (
    "id",
    "action",
    "next",
    "on_failure",
    "completion_checks",
    "allowed_tools",
    "description",
    "reads",
    "writes",
    "requires",
    "accepts",
    "produces",
    "moves_to",
)
_ARTIFACT_KEYS = ("name", "final", "description")
_STATES_KEYS = ("initial", "transitions")
_ACTION_KEYS = ("type", "ref", "args", "instructions", "to", "question", "options", "note")
_SKILL_KEYS = ("id", "source", "version")
_TOOL_KEYS = ("id", "kind", "source", "side_effect", "requires_confirmation", "description")
_AGENT_KEYS = ("id", "role", "instructions")
_GUARDRAIL_KEYS = (
    "allowed_skills",
    "allowed_tools",
    "allowed_agents",
    "max_iterations",
    "max_retries_per_action",
    "confirmation_required_for",
)
_CHECK_KEYS = ("id", "type", "scope", "artifact", "field", "equals", "description")
_OUTCOME_STATUSES = ("succeeded", "failed")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class _Parser:
    """Turns the YAML documents into a :class:`Workflow`, recording problems as it goes."""

    def __init__(self, spelling: Spelling, diagnostics: list[Diagnostic]) -> None:
        self.spelling = spelling
        self.diagnostics = diagnostics
        self.file = spelling.definition_file

    # -- reporting ----------------------------------------------------------------------------

    def error(self, path: str, problem: str, code: str = "workflow-invalid") -> None:
        self.diagnostics.append(Diagnostic.error(code=code, message=f"{path} {problem}", location=self.file))

    def warn(self, path: str, problem: str, code: str) -> None:
        self.diagnostics.append(Diagnostic.warning(code=code, message=f"{path} {problem}", location=self.file))

    def unused(self, path: str, kind: str) -> None:
        """A key the action type does not use: an error natively, a warning for Comet."""
        if self.spelling.strict:
            self.error(path, f"is not used by {kind} actions")
        else:
            self.warn(path, f"is not used by {kind} actions (ignored)", "workflow-unused-key")

    def _errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    # -- documents ----------------------------------------------------------------------------

    def parse(self, files: Mapping[str, bytes], package_name: str) -> Workflow | None:
        before = self._errors()
        spelling = self.spelling
        top = self.document(files, spelling.definition_file, required=True)
        guardrails_doc = self.document(files, spelling.guardrails_file, required=False)
        self.refuse_two_checks_files(files)
        checks_doc = self.document(files, spelling.checks_file, required=False)
        if top is None:
            return None
        self.file = spelling.definition_file
        if spelling.format == "comet":
            top = self.comet_header(top)
        body = self.mapping(top, "", _TOP_KEYS, context="top") or {}
        name = self.string(body, "name", "") or package_name
        goal = self.goal(body.get("goal"), "goal")
        mode, entry, steps = self.orchestration(body.get("orchestration"))
        skills = tuple(self.each(body, "skills", "", self.skill_decl))
        tools = tuple(self.each(body, "tools", "", self.tool_decl))
        agents = tuple(self.each(body, "agents", "", self.agent_decl))
        artifacts = tuple(self.each(body, "artifacts", "", self.artifact_decl))
        states = self.states(body.get("states"))
        side_files = self.side_files(body)
        self.file = spelling.guardrails_file
        guardrails = self.guardrails(guardrails_doc or {}, skills, tools, agents)
        self.file = spelling.checks_file
        checks_body = self.mapping(checks_doc or {}, "", (spelling.checks_key,), context="checks")
        checks = tuple(self.each(checks_body or {}, spelling.checks_key, "", self.check))
        self.file = spelling.definition_file
        if self._errors() > before or goal is None or guardrails is None or mode is None:
            return None
        return Workflow(
            name=name,
            format=cast(Any, spelling.format),
            version=self.string(body, "version", "", text=False) or "",
            description=self.string(body, "description", "", text=False) or "",
            goal=goal,
            mode=mode,
            entry=entry,
            steps=steps,
            skills=skills,
            tools=tools,
            agents=agents,
            guardrails=guardrails,
            checks=checks,
            artifacts=artifacts,
            states=states,
            side_files=side_files,
        )

    def refuse_two_checks_files(self, files: Mapping[str, bytes]) -> None:
        """``checks.yaml`` and its alias ``evals.yaml`` exclude each other."""
        spelling = self.spelling
        if spelling.checks_file in files and spelling.evals_file in files:
            self.file = spelling.checks_file
            self.error(
                "document",
                f"and {spelling.evals_file} both define the runtime checks; keep one of them",
                "workflow-checks-twice",
            )

    def document(self, files: Mapping[str, bytes], path: str, *, required: bool) -> Any:
        self.file = path
        data = files.get(path)
        if data is None:
            if required:
                self.error("document", "is missing", "workflow-missing")
            return None
        if len(data) > _MAX_FILE_BYTES:
            self.error("document", f"is larger than {_MAX_FILE_BYTES} bytes", "workflow-too-large")
            return None
        try:
            # Workflow files may not share nodes: no aliases at all.
            value = load_bounded_yaml(data.decode("utf-8"), max_aliases=0)
            return {} if value is None else value
        except UnicodeDecodeError:
            self.error("document", "is not UTF-8 text", "workflow-yaml")
        except YAMLLimitExceeded as exc:
            self.error("document", str(exc), "workflow-yaml")
        except yaml.YAMLError as exc:
            self.error("document", f"is not valid YAML: {_one_line(exc)}", "workflow-yaml")
        return None

    def comet_header(self, top: Any) -> Any:
        if not isinstance(top, dict):
            return top
        api_version = top.get("apiVersion")
        if api_version != _COMET_API_VERSION:
            self.error("apiVersion", f"must be {_COMET_API_VERSION!r}, got {api_version!r}")
        if top.get("kind") != "Skill":
            self.error("kind", f"must be 'Skill', got {top.get('kind')!r}")
        metadata = self.mapping(top.get("metadata"), "metadata", ("name", "version", "description"))
        flattened = {k: v for k, v in top.items() if k not in ("apiVersion", "kind", "metadata")}
        if metadata:
            for key in ("name", "version", "description"):
                if key in metadata:
                    flattened[key] = metadata[key]
        return flattened

    # -- generic readers ------------------------------------------------------------------------

    def mapping(self, value: Any, path: str, keys: tuple[str, ...], *, context: str = "") -> dict[str, Any] | None:
        """Check ``value`` is a mapping; return it keyed by native names (unknown keys dropped)."""
        if value is None and path:
            self.error(path, "is required")
            return None
        if not isinstance(value, dict):
            self.error(path or "document", f"must be a mapping, got {_kind(value)}")
            return None
        spelled = {self.spelling.key(k, context): k for k in keys}
        result: dict[str, Any] = {}
        for key, item in value.items():
            native = spelled.get(key) if isinstance(key, str) else None
            if native is None:
                where = _join(path, str(key))
                if self.spelling.strict:
                    self.error(where, "is not a known key", "workflow-unknown-key")
                else:
                    self.warn(where, "is not a known key (ignored)", "workflow-unknown-key")
                continue
            result[native] = item
        return result

    def string(
        self,
        body: Mapping[str, Any],
        key: str,
        path: str,
        *,
        required: bool = False,
        text: bool = True,
        context: str = "",
    ) -> str | None:
        """A string field; ``text`` fields (ids, refs, statements) must not be blank."""
        where = _join(path, self.spelling.key(key, context))
        value = body.get(key)
        if value is None:
            if required:
                self.error(where, "is required")
            return None
        if not isinstance(value, str) or (text and not value.strip()):
            wanted = "a non-empty string" if text else "a string"
            self.error(where, f"must be {wanted}, got {_kind(value) if value else 'an empty string'}")
            return None
        return value

    def boolean(self, body: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = body.get(key, default)
        if not isinstance(value, bool):
            self.error(_join(path, self.spelling.key(key)), f"must be true or false, got {_kind(value)}")
            return default
        return value

    def choice(
        self,
        body: Mapping[str, Any],
        key: str,
        path: str,
        choices: tuple[str, ...],
        *,
        default: str | None = None,
    ) -> str | None:
        where = _join(path, self.spelling.key(key))
        value = body.get(key, default)
        if value is None:
            self.error(where, f"is required (one of {', '.join(choices)})")
            return None
        if value not in choices:
            self.error(where, f"must be one of {', '.join(choices)}, got {value!r}")
            return None
        return cast(str, value)

    def strings(self, body: Mapping[str, Any], key: str, path: str, context: str = "") -> tuple[str, ...] | None:
        where = _join(path, self.spelling.key(key, context))
        value = body.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self.error(where, f"must be a list of strings, got {_kind(value)}")
            return None
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.error(_join(where, index), f"must be a non-empty string, got {_kind(item)}")
                return None
        return tuple(value)

    def each(self, body: Mapping[str, Any], key: str, path: str, read: Any) -> Iterable[Any]:
        where = _join(path, self.spelling.key(key))
        value = body.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(where, f"must be a list, got {_kind(value)}")
            return []
        results = []
        for index, item in enumerate(value):
            parsed = read(item, _join(where, index))
            if parsed is not None:
                results.append(parsed)
        return results

    # -- definition parts -----------------------------------------------------------------------

    def named(self, value: Any, path: str) -> NamedValue | None:
        body = self.mapping(value, path, _NAMED_KEYS)
        if body is None:
            return None
        name = self.string(body, "name", path, required=True)
        description = self.string(body, "description", path, text=False) or ""
        required = self.boolean(body, "required", path, False)
        return None if name is None else NamedValue(name=name, description=description, required=required)

    def goal(self, value: Any, path: str) -> Goal | None:
        body = self.mapping(value, path, _GOAL_KEYS)
        if body is None:
            return None
        statement = self.string(body, "statement", path, required=True)
        inputs = tuple(self.each(body, "inputs", path, self.named))
        outputs = tuple(self.each(body, "outputs", path, self.named))
        success = self.strings(body, "success", path) or ()
        if statement is None:
            return None
        return Goal(statement=statement, inputs=inputs, outputs=outputs, success=success)

    def orchestration(self, value: Any) -> tuple[Any, str | None, tuple[Step, ...]]:
        path = "orchestration"
        body = self.mapping(value, path, _ORCHESTRATION_KEYS)
        if body is None:
            return None, None, ()
        mode = self.choice(body, "mode", path, ("deterministic", "adaptive"))
        entry = self.string(body, "entry", path)
        steps = tuple(self.each(body, "steps", path, self.step))
        if mode == "adaptive" and ("entry" in body or "steps" in body):
            self.error(path, "in adaptive mode must not define entry or steps")
        if mode == "deterministic":
            if not body.get("steps"):
                self.error(_join(path, "steps"), "is required in deterministic mode (at least one step)")
            if entry is None:
                self.error(_join(path, "entry"), "is required in deterministic mode")
        return mode, entry, steps

    def step(self, value: Any, path: str) -> Step | None:
        body = self.mapping(value, path, _STEP_KEYS, context="step")
        if body is None:
            return None
        step_id = self.string(body, "id", path, required=True)
        action = self.action(body.get("action"), _join(path, "action"))
        next_step = self.next(body, path)
        on_failure = self.string(body, "on_failure", path)
        checks = self.strings(body, "completion_checks", path, context="step") or ()
        allowed_tools = self.strings(body, "allowed_tools", path)
        description = self.string(body, "description", path, text=False) or ""
        accepts = self.versions(body, path)
        moves_to = self.moves_to(body, path)
        if step_id is None or action is None or next_step is _INVALID or accepts is _INVALID or moves_to is None:
            return None
        return Step(
            id=step_id,
            action=action,
            next=cast(Next, next_step),
            on_failure=on_failure,
            completion_checks=checks,
            allowed_tools=allowed_tools,
            description=description,
            reads=self.strings(body, "reads", path) or (),
            writes=self.strings(body, "writes", path),
            requires=self.strings(body, "requires", path) or (),
            accepts=cast("tuple[str, ...] | None", accepts),
            produces=self.string(body, "produces", path),
            moves_to=moves_to,
        )

    def versions(self, body: Mapping[str, Any], path: str) -> object:
        """``accepts``: one schema version or a list of them (``None`` when absent)."""
        value = body.get("accepts")
        if isinstance(value, str) and value.strip():
            return (value,)
        if value is None:
            return None
        accepted = self.strings(body, "accepts", path)
        if accepted is None or not accepted:
            if accepted is not None:
                self.error(_join(path, "accepts"), "must name at least one schema version")
            return _INVALID
        return accepted

    def moves_to(self, body: Mapping[str, Any], path: str) -> dict[str, str] | None:
        """``moves_to``: a state (entered when the step succeeds) or ``{outcome status: state}``."""
        where = _join(path, self.spelling.key("moves_to"))
        value = body.get("moves_to")
        if value is None:
            return {}
        if isinstance(value, str) and value.strip():
            return {"succeeded": value}
        if not isinstance(value, dict) or not value:
            self.error(where, f"must be a state or a map of outcome status to state, got {_kind(value)}")
            return None
        for status, state in value.items():
            if status not in _OUTCOME_STATUSES:
                self.error(_join(where, str(status)), f"is not an outcome status ({', '.join(_OUTCOME_STATUSES)})")
                return None
            if not isinstance(state, str) or not state.strip():
                self.error(_join(where, status), f"must be a state name, got {_kind(state)}")
                return None
        return dict(value)

    def artifact_decl(self, value: Any, path: str) -> ArtifactDecl | None:
        if isinstance(value, str) and value.strip():
            return ArtifactDecl(name=value)
        body = self.mapping(value, path, _ARTIFACT_KEYS)
        if body is None:
            return None
        name = self.string(body, "name", path, required=True)
        final = self.boolean(body, "final", path, False)
        description = self.string(body, "description", path, text=False) or ""
        return None if name is None else ArtifactDecl(name=name, final=final, description=description)

    def side_files(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """``side_files`` (Comet ``sideFiles``): which of :data:`SIDE_FILES` to keep."""
        names = self.strings(body, "side_files", "") or ()
        for index, name in enumerate(names):
            if name not in SIDE_FILES:
                self.error(
                    f"{self.spelling.key('side_files')}[{index}]",
                    f"names {name!r}; the side files are {', '.join(SIDE_FILES)}",
                )
        return tuple(dict.fromkeys(names))

    def states(self, value: Any) -> StateMachine | None:
        """``states: {initial, transitions: {state: [next states]}}`` (optional)."""
        if value is None:
            return None
        path = "states"
        body = self.mapping(value, path, _STATES_KEYS)
        if body is None:
            return None
        initial = self.string(body, "initial", path, required=True)
        where = _join(path, "transitions")
        table = body.get("transitions")
        if not isinstance(table, dict) or not table:
            self.error(where, f"must map every state to the states it may move to, got {_kind(table)}")
            return None
        transitions: dict[str, tuple[str, ...]] = {}
        for state, targets in table.items():
            if not isinstance(state, str) or not state.strip():
                self.error(where, f"has a state that is not a name: {state!r}")
                return None
            listed = self.strings(table, state, where) if targets is not None else ()
            if listed is None:
                return None
            transitions[state] = listed
        if initial is None:
            return None
        return StateMachine(initial=initial, transitions=transitions)

    def next(self, body: Mapping[str, Any], path: str) -> object:
        where = _join(path, "next")
        value = body.get("next")
        if value is None or (isinstance(value, str) and value):
            return value
        if not isinstance(value, dict):
            self.error(where, f"must be a step id, null or a map of outcome status to step id, got {_kind(value)}")
            return _INVALID
        for status, target in value.items():
            if status not in _OUTCOME_STATUSES:
                self.error(_join(where, str(status)), f"is not an outcome status ({', '.join(_OUTCOME_STATUSES)})")
                return _INVALID
            if target is not None and (not isinstance(target, str) or not target):
                self.error(_join(where, status), f"must be a step id or null, got {_kind(target)}")
                return _INVALID
        return dict(value)

    def action(self, value: Any, path: str) -> Action | None:
        comet = self.spelling.format == "comet"
        # Comet names a handoff's agent with ``ref``; natively it is ``to``.
        keys = tuple(k for k in _ACTION_KEYS if not (comet and k == "to"))
        body = self.mapping(value, path, keys, context="action")
        if body is None:
            return None
        kind = self.choice(body, "type", path, ACTION_TYPES)
        if kind is None:
            return None
        uses_ref = kind in ("invoke_skill", "call_tool") or (comet and kind == "handoff")
        if "ref" in body and not uses_ref:
            self.unused(_join(path, "ref"), kind)
        if "to" in body and kind != "handoff":
            self.unused(_join(path, "to"), kind)
        ref = self.string(body, "ref", path, required=True) if uses_ref else None
        if comet:
            to, ref = (ref, None) if kind == "handoff" else (None, ref)
        else:
            to = self.string(body, "to", path, required=True) if kind == "handoff" else None
        question = self.string(body, "question", path, required=kind == "ask_user")
        args = body.get("args", {})
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            self.error(_join(path, "args"), f"must be a mapping with string keys, got {_kind(args)}")
            return None
        if not _is_json(args):
            self.error(_join(path, "args"), "must hold only JSON values (quote dates and times)")
            return None
        if args and kind != "call_tool":
            self.unused(_join(path, "args"), kind)
            args = {}
        options = self.strings(body, "options", path) or ()
        instructions = self.string(body, "instructions", path, text=False, context="action") or ""
        note = self.string(body, "note", path, text=False) or ""
        try:
            return Action(
                type=cast(Any, kind),
                ref=ref,
                args=args,
                instructions=instructions,
                to=to,
                question=question,
                options=options,
                note=note,
            )
        except ValueError:
            return None  # the missing field was reported above

    def skill_decl(self, value: Any, path: str) -> SkillDecl | None:
        if isinstance(value, str) and value.strip():
            return SkillDecl(id=value)  # Comet lists skills by name
        body = self.mapping(value, path, _SKILL_KEYS)
        if body is None:
            return None
        skill_id = self.string(body, "id", path, required=True)
        source = self.string(body, "source", path)
        version = body.get("version")
        if version is not None and not isinstance(version, str):
            self.error(_join(path, "version"), f"must be a string (quote it), got {_kind(version)}")
            return None
        return None if skill_id is None else SkillDecl(id=skill_id, source=source, version=version)

    def tool_decl(self, value: Any, path: str) -> ToolDecl | None:
        body = self.mapping(value, path, _TOOL_KEYS)
        if body is None:
            return None
        tool_id = self.string(body, "id", path, required=True)
        kind = self.choice(body, "kind", path, ("function", "script", "mcp"))
        side_effect = self.choice(body, "side_effect", path, ("none", "read", "write", "external"))
        source = self.string(body, "source", path)
        confirm = self.boolean(body, "requires_confirmation", path, False)
        description = self.string(body, "description", path, text=False) or ""
        if tool_id is None or kind is None or side_effect is None:
            return None
        if kind == "script" and not _inside_package(source):
            self.error(
                _join(path, "source"),
                f"must be a relative path inside the skill package for a script tool, got {source!r}",
            )
            return None
        return ToolDecl(
            id=tool_id,
            kind=cast(Any, kind),
            side_effect=cast(Any, side_effect),
            source=source,
            requires_confirmation=confirm,
            description=description,
        )

    def agent_decl(self, value: Any, path: str) -> AgentDecl | None:
        body = self.mapping(value, path, _AGENT_KEYS)
        if body is None:
            return None
        agent_id = self.string(body, "id", path, required=True)
        role = self.string(body, "role", path, required=True)
        instructions = self.string(body, "instructions", path, text=False) or ""
        if agent_id is None or role is None:
            return None
        return AgentDecl(id=agent_id, role=role, instructions=instructions)

    def guardrails(
        self,
        value: Any,
        skills: tuple[SkillDecl, ...],
        tools: tuple[ToolDecl, ...],
        agents: tuple[AgentDecl, ...],
    ) -> Guardrails | None:
        body = self.mapping(value, "", _GUARDRAIL_KEYS)
        if body is None:
            return None
        allowed_skills = self.strings(body, "allowed_skills", "")
        allowed_tools = self.strings(body, "allowed_tools", "")
        allowed_agents = self.strings(body, "allowed_agents", "")
        confirm = self.strings(body, "confirmation_required_for", "") or ()
        max_iterations = self.count(body, "max_iterations", 50, minimum=1)
        max_retries = self.count(body, "max_retries_per_action", 3, minimum=0)
        if max_iterations is None or max_retries is None:
            return None
        marked = tuple(t.id for t in tools if t.requires_confirmation)
        return Guardrails(
            allowed_skills=allowed_skills if allowed_skills is not None else tuple(s.id for s in skills),
            allowed_tools=allowed_tools if allowed_tools is not None else tuple(t.id for t in tools),
            allowed_agents=allowed_agents if allowed_agents is not None else tuple(a.id for a in agents),
            max_iterations=max_iterations,
            max_retries_per_action=max_retries,
            confirmation_required_for=tuple(dict.fromkeys(confirm + marked)),
        )

    def count(self, body: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int | None:
        value = body.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.error(self.spelling.key(key), f"must be an integer >= {minimum}, got {value!r}")
            return None
        return value

    def check(self, value: Any, path: str) -> Check | None:
        body = self.mapping(value, path, _CHECK_KEYS)
        if body is None:
            return None
        check_id = self.string(body, "id", path, required=True)
        kind = self.choice(body, "type", path, ("artifact_exists", "state_equals"))
        scope = self.choice(body, "scope", path, ("step", "completion", "progress"))
        artifact = self.string(body, "artifact", path, required=kind == "artifact_exists")
        field_path = self.string(body, "field", path, required=kind == "state_equals")
        if kind == "state_equals" and "equals" not in body:
            self.error(_join(path, "equals"), "is required for state_equals")
            return None
        if not _is_json(body.get("equals")):
            self.error(_join(path, "equals"), "must be a JSON value (quote dates and times)")
            return None
        description = self.string(body, "description", path, text=False) or ""
        if check_id is None or kind is None or scope is None:
            return None
        if (kind == "artifact_exists" and artifact is None) or (kind == "state_equals" and field_path is None):
            return None
        return Check(
            id=check_id,
            type=cast(Any, kind),
            scope=cast(Any, scope),
            artifact=artifact,
            field=field_path,
            equals=body.get("equals"),
            description=description,
        )


_INVALID = object()


def _inside_package(source: str | None) -> bool:
    return bool(source) and loose_path_problem(source or "") is None


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())

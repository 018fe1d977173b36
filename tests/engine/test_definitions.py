"""Loading and validating definitions: the native corpus (validator and JSON Schema), Comet."""

from __future__ import annotations

import pathlib
from typing import Any

import jsonschema
import pytest
import yaml

from harness.engine import WorkflowDefinitionError, check_workflow, load_workflow
from harness.engine.schema import load_schema

from .conftest import example

CORPUS: list[dict[str, Any]] = yaml.safe_load(pathlib.Path(__file__).with_name("corpus.yaml").read_text())
SCHEMAS = {f"{name}.yaml": load_schema(name) for name in ("workflow", "guardrails", "checks")}  # type: ignore[arg-type]


def _files(case: dict[str, Any]) -> dict[str, bytes]:
    return {path: text.encode() for path, text in case["files"].items()}


@pytest.mark.parametrize("case", CORPUS, ids=[c["case"] for c in CORPUS])
def test_validator_on_corpus(case: dict[str, Any]) -> None:
    workflow, problems = check_workflow(_files(case), name="corpus")
    messages = [f"{p.location}: {p.message}" for p in problems]
    errors = [m for p, m in zip(problems, messages) if p.severity == "error"]
    assert (workflow is not None) == case["valid"], messages
    for expected in case.get("errors", []):
        assert any(expected in message for message in errors), (expected, errors)
    for expected in case.get("warnings", []):
        assert any(expected in message for message in messages), (expected, messages)


@pytest.mark.parametrize("case", CORPUS, ids=[c["case"] for c in CORPUS])
def test_json_schema_on_corpus(case: dict[str, Any]) -> None:
    verdicts = []
    for path, text in case["files"].items():
        validator = jsonschema.Draft202012Validator(SCHEMAS[path])
        verdicts.append(not list(validator.iter_errors(yaml.safe_load(text) or {})))
    assert all(verdicts) == case["schema_valid"]
    if case["schema_valid"] is False:
        assert case["valid"] is False  # the schema never rejects what the validator accepts


def test_schemas_are_valid_draft_2020_12() -> None:
    for schema in SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)


async def test_examples_satisfy_the_schemas() -> None:
    package = await example("code-review")
    for path in ("workflow.yaml", "guardrails.yaml", "checks.yaml"):
        jsonschema.validate(yaml.safe_load(package.files[path]), SCHEMAS[path])


def test_load_workflow_raises_with_every_error() -> None:
    bad = next(c for c in CORPUS if c["case"] == "undeclared skill, tool and agent refs")
    with pytest.raises(WorkflowDefinitionError) as caught:
        load_workflow(_files(bad), name="bad")
    assert len([p for p in caught.value.problems if p.severity == "error"]) == 3
    assert "workflow.yaml: orchestration.steps[1].action.ref" in str(caught.value)


def test_yaml_aliases_are_refused() -> None:
    files = {"workflow.yaml": b"goal: &g {statement: x}\nalso: *g\norchestration: {mode: adaptive}\n"}
    _, problems = check_workflow(files, name="alias")
    assert any("aliases" in p.message for p in problems)


def test_python_tags_are_refused() -> None:
    files = {"workflow.yaml": b"goal: !!python/object/apply:os.system ['true']\n"}
    workflow, problems = check_workflow(files, name="tag")
    assert workflow is None and problems[0].code == "workflow-yaml"


async def test_comet_package_maps_to_native_fields() -> None:
    package = await example("release-notes")
    workflow, problems = check_workflow(package.files, name="release-notes")
    assert workflow is not None
    assert [str(p) for p in problems] == [
        "warning: comet/skill.yaml: metadata.labels is not a known key (ignored) [workflow-unknown-key]"
    ]
    assert (workflow.name, workflow.version, workflow.format) == ("release-notes", "2.1.0", "comet")
    rails = workflow.guardrails
    assert (rails.max_iterations, rails.max_retries_per_action) == (12, 1)
    assert rails.confirmation_required_for == ("publish-notes",)
    assert workflow.step("draft").completion_checks == ("draft-exists",)
    assert workflow.step("draft").action.instructions.startswith("Group the commits")
    assert workflow.step("edit").action.to == "editor"
    assert workflow.step("publish").on_failure == "collect"
    assert workflow.tool("publish-notes").side_effect == "external"
    assert workflow.check("published").equals is True


def test_comet_errors_use_comet_spelling() -> None:
    files = {
        "comet/skill.yaml": b"apiVersion: comet/v1\nkind: Skill\nmetadata: {name: x}\ngoal: {statement: s}\n"
        b"orchestration: {mode: deterministic, entry: a, steps: [{id: a, action: {type: checkpoint}, completionEvals: [nope]}]}\n",
        "comet/guardrails.yaml": b"maxIterations: 0\n",
    }
    _, problems = check_workflow(files, name="x")
    messages = [f"{p.location}: {p.message}" for p in problems if p.severity == "error"]
    assert "comet/skill.yaml: apiVersion must be 'comet/v1alpha1', got 'comet/v1'" in messages
    assert any(m.startswith("comet/guardrails.yaml: maxIterations must be an integer >= 1") for m in messages)


def test_comet_defaults_allow_everything_declared_and_confirm_marked_tools() -> None:
    files = {
        "comet/skill.yaml": b"apiVersion: comet/v1alpha1\nkind: Skill\nmetadata: {name: d}\n"
        b"goal: {statement: s}\norchestration: {mode: adaptive}\nskills: [{id: s1}]\n"
        b"tools: [{id: t1, kind: function, sideEffect: read}, {id: t2, kind: function, sideEffect: external, requiresConfirmation: true}]\n",
    }
    workflow = load_workflow(files, name="d")
    assert workflow.guardrails.allowed_tools == ("t1", "t2")
    assert workflow.guardrails.allowed_skills == ("s1",)
    assert (workflow.guardrails.max_iterations, workflow.guardrails.max_retries_per_action) == (50, 3)
    assert workflow.guardrails.confirmation_required_for == ("t2",)

"""Skill-group contracts in the native format: loaded and validated with clear errors, and
enforced on every outcome and hand-off (writes, final artifacts, schema versions, requires,
domain states)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from harness.engine import (
    Outcome,
    OutcomeRefused,
    RequirementUnmet,
    SkillPackage,
    WorkflowEngine,
    check_workflow,
    load_workflow,
)
from harness.engine.schema import load_schema

from .conftest import ScriptedExecutor, answer
from .newsletter import package

GROUP = """\
goal: {statement: Hand work along}
inputs: []
skills: [{id: a}, {id: b}]
artifacts: [{name: report, final: true}]
states:
  initial: new
  transitions: {new: [done], done: []}
orchestration:
  mode: deterministic
  entry: first
  steps:
    - {id: first, action: {type: invoke_skill, ref: a}, writes: [x, report], produces: v/1, moves_to: done, next: second}
    - {id: second, action: {type: invoke_skill, ref: b}, accepts: [v/1], requires: [x]}
"""


def files(text: str = GROUP, **more: str) -> dict[str, bytes]:
    return {"workflow.yaml": text.replace("inputs: []\n", "").encode(), **{k: v.encode() for k, v in more.items()}}


def errors(text: str) -> list[str]:
    workflow, problems = check_workflow(files(text), name="g")
    assert workflow is None
    return [p.message for p in problems if p.severity == "error"]


async def test_the_example_group_loads_and_satisfies_the_schema() -> None:
    pkg = await package()
    workflow = load_workflow(pkg.files, name="newsletter")
    assert workflow.final_artifacts == frozenset({"issue"})
    assert workflow.states is not None and workflow.states.initial == "received"
    qa = workflow.step("qa")
    assert (qa.accepts, qa.produces, dict(qa.moves_to)) == (
        ("draft/v2",),
        "review/v1",
        {"succeeded": "approved", "failed": "rejected"},
    )
    jsonschema.validate(yaml.safe_load(pkg.files["workflow.yaml"]), load_schema("workflow"))


def test_a_hand_off_between_incompatible_schemas_is_a_load_error() -> None:
    [message] = errors(GROUP.replace("accepts: [v/1]", "accepts: [v/2]"))
    assert message == (
        "orchestration.steps[0].next hands off schema 'v/1' (produces of step 'first') to step 'second', "
        "which accepts 'v/2'"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("moves_to: done", "moves_to: gone"),
            "orchestration.steps[0].moves_to.succeeded names undeclared state 'gone'",
        ),
        (("initial: new", "initial: old"), "states.initial names 'old', which is not a state"),
        (("new: [done]", "new: [later]"), "states.transitions.new[0] moves to undeclared state 'later'"),
        (("accepts: [v/1]", "accepts: []"), "orchestration.steps[1].accepts must name at least one schema version"),
        (("writes: [x, report]", "writes: x"), "orchestration.steps[0].writes must be a list of strings"),
        (("moves_to: done", "moves_to: {done: done}"), "orchestration.steps[0].moves_to.done is not an outcome status"),
        (
            ("{name: report, final: true}", "{name: report, final: yes please}"),
            "artifacts[0].final must be true or false",
        ),
    ],
)
def test_invalid_group_keys_are_clear_errors(change: tuple[str, str], expected: str) -> None:
    assert any(m.startswith(expected) for m in errors(GROUP.replace(*change))), errors(GROUP.replace(*change))


def test_moves_to_without_states_is_an_error() -> None:
    text = GROUP.replace("states:\n  initial: new\n  transitions: {new: [done], done: []}\n", "")
    assert "orchestration.steps[0].moves_to needs a top-level states table with the legal transitions" in errors(text)


def test_a_requirement_nothing_provides_is_a_warning() -> None:
    text = (
        GROUP.replace("requires: [x]", "requires: [y]")
        .replace("next: second}", "next: second}")
        .replace("accepts: [v/1],", "accepts: [v/1], writes: [],")
    )
    workflow, problems = check_workflow(files(text), name="g")
    assert workflow is not None
    assert [p.message for p in problems] == [
        "orchestration.steps[1].requires[0] names 'y', which no goal input, declared artifact or step's writes "
        "provides and no check has as id"
    ]


async def start(engine: WorkflowEngine, text: str = GROUP, **inputs: Any) -> None:
    await engine.start(SkillPackage(name="g", files=files(text)), run_id="g1", inputs=inputs)


async def test_an_outcome_writing_undeclared_keys_is_refused_and_nothing_recorded(engine: WorkflowEngine) -> None:
    await start(engine)
    before = await engine.inspect("g1")
    with pytest.raises(OutcomeRefused, match=r"step 'first' may write only x, report; it does not declare 'y'"):
        await engine.resume("g1", answer(before, state={"x": 1, "y": 2}))
    assert await engine.inspect("g1") == before


async def test_an_illegal_reported_transition_is_refused(engine: WorkflowEngine) -> None:
    await start(engine)
    run = await engine.inspect("g1")
    with pytest.raises(OutcomeRefused, match=r"illegal transition 'new' -> 'nowhere' in step 'first'"):
        await engine.resume("g1", answer(run, state={"x": 1}, to_state="nowhere"))


async def test_a_final_artifact_is_written_once(engine: WorkflowEngine) -> None:
    text = GROUP.replace("writes: [x, report], produces: v/1, moves_to: done, next: second", "next: second")
    text = text.replace("accepts: [v/1], requires: [x]", "requires: [x]")
    await start(engine, text.replace("moves_to: done, ", ""))
    run = await engine.resume("g1", answer(await engine.inspect("g1"), state={"x": 1}, artifacts={"report": "r1.md"}))
    with pytest.raises(OutcomeRefused, match=r"artifact 'report' is final and already written \('r1.md'\)"):
        await engine.resume("g1", answer(run, artifacts={"report": "r2.md"}))
    run = await engine.resume("g1", answer(run, artifacts={"report": "r1.md"}))  # the same value is no change
    assert run.status == "completed"


async def test_an_unmet_requirement_of_the_entry_step_refuses_the_start(engine: WorkflowEngine) -> None:
    text = GROUP.replace("entry: first", "entry: second")
    with pytest.raises(
        RequirementUnmet, match=r"step 'second' requires 'x', which is not set: pass the missing inputs"
    ):
        await start(engine, text)
    await start(engine, text, x=1)


async def test_an_unmet_requirement_at_a_hand_off_fails_the_step(engine: WorkflowEngine) -> None:
    await start(engine)
    run = await engine.resume("g1", answer(await engine.inspect("g1")))
    assert (run.current_step, run.pending and run.pending.attempt) == ("first", 2)
    refused = [e.data for e in await engine.events("g1") if e.type == "handoff_refused"]
    assert refused == [
        {"step_id": "first", "to_step": "second", "reason": "step 'second' requires 'x', which is not set"}
    ]
    assert run.domain_state == "new"


async def test_a_reported_schema_the_next_step_does_not_accept_retries(engine: WorkflowEngine) -> None:
    await start(engine, GROUP.replace("produces: v/1, ", ""))
    run = await engine.resume("g1", answer(await engine.inspect("g1"), state={"x": 1}, schema_version="v/0"))
    assert run.current_step == "first" and run.pending is not None and run.pending.attempt == 2
    [retried] = [e.data for e in await engine.events("g1") if e.type == "step_retried"]
    assert retried["reason"].endswith("the hand-off carries schema 'v/0', but step 'second' accepts 'v/1'")
    run = await engine.resume("g1", answer(run, state={"x": 1}, schema_version="v/1"))
    assert (run.current_step, run.domain_state, run.handoffs[-1].schema_version) == ("second", "done", "v/1")


async def test_the_executor_sees_the_action_context(engine: WorkflowEngine) -> None:
    from harness.engine import current_action

    seen: list[Any] = []

    class Recording(ScriptedExecutor):
        async def invoke_skill(self, skill: Any, instructions: str, *, allowed_tools: Any) -> Outcome:
            seen.append(current_action())
            return await super().invoke_skill(skill, instructions, allowed_tools=allowed_tools)

    await start(engine)
    executor = Recording(
        {
            "a": [
                Outcome(status="succeeded", state={"x": 1}, artifacts={"bad": "z"}),
                Outcome(status="succeeded", state={"x": 1}),
            ],
            "b": [Outcome(status="succeeded")],
        }
    )
    run = await engine.run_until_blocked("g1", executor)
    assert run.status == "completed"
    first, retry, second = seen
    assert (first.step_id, first.writes, first.next_states, first.produces) == (
        "first",
        ("x", "report"),
        ("done",),
        "v/1",
    )
    assert retry.attempt == 2 and retry.action_id != first.action_id
    assert second.reads == {} and second.domain_state == "done"
    recorded = [e.data for e in await engine.events("g1") if e.type == "outcome_recorded"]
    assert recorded[0]["status"] == "failed" and "it does not declare 'bad'" in recorded[0]["summary"]


async def test_a_stored_artifact_file_meets_a_requirement(engine: WorkflowEngine) -> None:
    await start(engine, GROUP.replace("requires: [x]", "requires: [notes.md]"))
    await engine.write_artifact("g1", "notes.md", b"notes")
    run = await engine.resume("g1", answer(await engine.inspect("g1")))
    assert run.current_step == "second"

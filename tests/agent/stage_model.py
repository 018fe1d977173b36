"""Scripted models that perform the newsletter example's stages, for the agent's workflow tests.

``stage_model`` plays the stage skills inside ``agent.run_workflow``: it reads the step's
``<workflow-step>`` block and reports through ``workflow_report``. ``driver_model`` plays a model
that drives the whole run with ``workflow_start`` / ``workflow_continue``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from tests.engine.newsletter import REQUEST, report

StepHook = Callable[[dict[str, Any]], None]


def step_block(text: str) -> dict[str, Any]:
    """The JSON contract of a step turn's message."""
    block = text.split("<workflow-step>\n", 1)[1].split("\n</workflow-step>", 1)[0]
    contract: dict[str, Any] = json.loads(block)
    return contract


def _call(name: str, call_id: str, **arguments: Any) -> Message:
    return Message.assistant("", [ToolCall(id=call_id, name=name, arguments=arguments)])


def stage_model(on_step: StepHook | None = None, *, turns: int = 60) -> ScriptedModel:
    """Answers each step turn with the stage's ``workflow_report``, then a short reply."""

    def reply(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message | str:
        last = messages[-1]
        if last.role == "tool":
            return "reported"
        if "<workflow-step>" not in last.content:
            return "not a workflow step"
        step = step_block(last.content)
        if on_step is not None:
            on_step(step)
        fields = report(step["step"], step["attempt"], step["reads"])
        return _call("workflow_report", f"r-{step['action_id']}", **fields)

    return ScriptedModel([reply] * turns)


def driver_model(run_id: str, *, turns: int = 40, on_reply: Callable[[int], None] | None = None) -> ScriptedModel:
    """Starts the run, reports every pending stage, and stops at a block; a second turn after the
    confirmation reports the publish, and sends that report twice (the second is a no-op). Asked
    to "publish" or "continue", it picks the run up with ``workflow_status``. ``on_reply`` is
    called with the number of each reply before it is made."""
    count = 0

    def reply(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> Message | str:
        nonlocal count
        count += 1
        if on_reply is not None:
            on_reply(count)
        last = messages[-1]
        if last.role == "user":
            if "publish" in last.content or "continue" in last.content:
                return _call("workflow_status", "status", run_id=run_id)
            return _call("workflow_start", "start", skill="newsletter", run_id=run_id, inputs={"request": REQUEST})
        answer = json.loads(last.content)
        previous = messages[-2].tool_calls[0]
        if previous.name == "workflow_continue" and previous.arguments.get("artifacts"):
            if previous.id == "publish":
                return Message.assistant(
                    "", [ToolCall(id="publish-again", name=previous.name, arguments=previous.arguments)]
                )
            return "published"
        pending = answer["pending_action"]
        if pending is None:
            return f"the run is {answer['status']}: {answer['next']}"
        if pending["step"] == "publish":
            artifacts = {"issue": f"published/issue-{pending['id']}.md"}
            return _call(
                "workflow_continue",
                "publish",
                run_id=run_id,
                status="succeeded",
                outcome_id=pending["id"],
                artifacts=artifacts,
            )
        fields = report(pending["step"], pending["attempt"], pending["contract"]["reads"])
        return _call("workflow_continue", f"c-{pending['id']}", run_id=run_id, outcome_id=pending["id"], **fields)

    return ScriptedModel([reply] * turns)

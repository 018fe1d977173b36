"""SelfLearning wires the parts with shared defaults over one workspace."""

from __future__ import annotations

import json

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.learning import CanaryFilter, SelfLearning
from tests.support.clock import ManualClock


async def test_tools_act_in_the_callers_area_and_report_changes(
    workspace: LocalFilesystem, alice: RuntimeContext, clock: ManualClock
) -> None:
    changes: list[str | None] = []
    loop = SelfLearning(workspace, on_change=changes.append, clock=clock)
    tools = {tool.name: tool for tool in loop.tools(alice)}
    assert sorted(tools) == ["propose_skill", "request_promotion", "skill_manage"]
    await tools["propose_skill"].call({"name": "x", "description": "d", "body": "b"})
    reply = json.loads(await tools["request_promotion"].call({"name": "x"}))
    assert reply["status"] == "rejected"
    assert (await loop.promote_skill("x", "carol", context=alice)).status == "promoted"
    assert changes == ["alice", "alice"]
    ops = [entry.op for entry in await loop.query_audit()]
    assert ops == ["propose_skill", "promotion.request", "promotion.promote"]


async def test_visibility_is_off_unless_a_filter_is_given(workspace: LocalFilesystem) -> None:
    assert SelfLearning(workspace).visibility is None
    assert SelfLearning(workspace, visibility=CanaryFilter(5)).visibility is not None


async def test_recorder_counts_into_the_sidecars(
    workspace: LocalFilesystem, alice: RuntimeContext, clock: ManualClock
) -> None:
    loop = SelfLearning(workspace, clock=clock)
    await loop.recorder.record_view("x_workspace-namespaced", alice)
    record = await loop.usage.for_scope("alice").get("x_workspace-namespaced")
    assert record is not None and record.views == 1

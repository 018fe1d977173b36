"""The tool calls of one model step run side by side; their events come in the order asked."""

from __future__ import annotations

from pathlib import Path

import anyio

from harness import RuntimeContext
from harness.agent import ControlOptions, Harness, PipelineOptions
from harness.approval import PatternPolicy, ToolRequest
from harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ModelReplied,
    SkillLoaded,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.models import Message, ScriptedModel, ToolCall
from harness.tools.function import tool
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")
NO_WATCH = PipelineOptions(watch=False)


def _step(*calls: tuple[str, str, dict[str, object]]) -> Message:
    """One model step asking for ``calls`` (name, call id, arguments), in that order."""
    return Message.assistant("", [ToolCall(id=i, name=n, arguments=dict(a)) for n, i, a in calls])


def _calls(events: list[Event] | tuple[Event, ...]) -> list[tuple[str, str]]:
    """Each call event as (kind, call id or skill name), without the turn's other events."""
    shown = []
    for event in events:
        if isinstance(event, ToolCalled | ToolReturned):
            shown.append((type(event).__name__, event.call_id))
        elif isinstance(event, SkillLoaded):
            shown.append(("SkillLoaded", event.name))
        elif isinstance(event, ApprovalRequested | ApprovalDecided):
            shown.append((type(event).__name__, event.tool))
        elif not isinstance(event, ModelReplied | TurnPrepared):
            shown.append((type(event).__name__, ""))
    return shown


async def test_two_calls_that_wait_on_each_other_both_finish(tmp_path: Path) -> None:
    ping_ready, pong_ready = anyio.Event(), anyio.Event()

    @tool
    async def ping() -> str:
        """Ping."""
        ping_ready.set()
        await pong_ready.wait()  # run one after the other, this never returns
        return "ping done"

    @tool
    async def pong() -> str:
        """Pong."""
        pong_ready.set()
        await ping_ready.wait()
        return "pong done"

    model = ScriptedModel([_step(("ping", "c1", {}), ("pong", "c2", {})), "both answered"])
    async with Harness(model=model, workspace=tmp_path, tools=[ping, pong], pipeline=NO_WATCH) as agent:
        with anyio.fail_after(10):
            result = await agent.run("go", context=ALICE)
    returned = [(e.call_id, e.content) for e in result.events if isinstance(e, ToolReturned)]
    assert returned == [("c1", "ping done"), ("c2", "pong done")]
    assert result.reply == "both answered"


async def test_each_call_reports_its_own_events_in_the_order_the_model_asked(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "tides", description="Use for tides.")
    released = anyio.Event()

    @tool
    async def slow() -> str:
        """Wait for the release."""
        await released.wait()
        return "slow done"

    @tool
    async def release() -> str:
        """Release the slow call."""
        released.set()
        return "released"

    model = ScriptedModel(
        [
            _step(("slow", "c1", {}), ("load_skill_through_path", "c2", {"skillId": "tides"}), ("release", "c3", {})),
            "done",
        ]
    )
    async with Harness(model=model, workspace=tmp_path, tools=[slow, release], pipeline=NO_WATCH) as agent:
        with anyio.fail_after(10):
            result = await agent.run("go", context=ALICE)
    # The skill was loaded while the first call still waited; its event is the second call's.
    assert _calls(result.events) == [
        ("ToolCalled", "c1"),
        ("ToolReturned", "c1"),
        ("ToolCalled", "c2"),
        ("SkillLoaded", "tides"),
        ("ToolReturned", "c2"),
        ("ToolCalled", "c3"),
        ("ToolReturned", "c3"),
    ]
    assert [m.tool_call_id for m in model.calls[1].messages if m.role == "tool"] == ["c1", "c2", "c3"]


async def test_calls_that_change_state_run_in_the_order_asked(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            _step(
                ("write_file", "c1", {"path": "notes.txt", "content": "first"}),
                ("read_file", "c2", {"path": "notes.txt"}),
                ("write_file", "c3", {"path": "notes.txt", "content": "second"}),
            ),
            "done",
        ]
    )
    async with Harness(model=model, workspace=tmp_path, pipeline=NO_WATCH) as agent:
        result = await agent.run("go", context=ALICE)
    returned = {e.call_id: e for e in result.events if isinstance(e, ToolReturned)}
    assert not any(e.error for e in returned.values())
    assert "first" in returned["c2"].content
    assert (tmp_path / "alice" / "notes.txt").read_text() == "second"


async def test_a_failing_call_does_not_cancel_its_siblings(tmp_path: Path) -> None:
    @tool
    async def broken() -> str:
        """Fail."""
        raise RuntimeError("the disk is on fire")

    @tool
    async def steady() -> str:
        """Take a moment, then answer."""
        await anyio.sleep(0.05)
        return "steady done"

    model = ScriptedModel([_step(("broken", "c1", {}), ("steady", "c2", {})), "done"])
    async with Harness(model=model, workspace=tmp_path, tools=[broken, steady], pipeline=NO_WATCH) as agent:
        result = await agent.run("go", context=ALICE)
    returned = {e.call_id: e for e in result.events if isinstance(e, ToolReturned)}
    assert returned["c1"].error and returned["c1"].error_type == "RuntimeError"
    assert "the disk is on fire" in returned["c1"].content
    assert not returned["c2"].error and returned["c2"].content == "steady done"


async def test_the_approver_is_asked_one_call_at_a_time(tmp_path: Path) -> None:
    asking = 0
    most = 0
    sent: list[str] = []

    @tool(requires_approval=True)
    async def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    async def approver(request: ToolRequest) -> bool:
        nonlocal asking, most
        asking += 1
        most = max(most, asking)
        await anyio.sleep(0.05)  # a person reading the prompt
        asking -= 1
        return True

    model = ScriptedModel([_step(("send", "c1", {"to": "ann"}), ("send", "c2", {"to": "bob"})), "done"])
    control = ControlOptions(approval=PatternPolicy([], default="ask"), approver=approver)
    async with Harness(model=model, workspace=tmp_path, tools=[send], control=control, pipeline=NO_WATCH) as agent:
        result = await agent.run("go", context=ALICE)
    assert most == 1
    assert sorted(sent) == ["ann", "bob"]
    assert _calls(result.events) == [
        ("ToolCalled", "c1"),
        ("ApprovalRequested", "send"),
        ("ApprovalDecided", "send"),
        ("ToolReturned", "c1"),
        ("ToolCalled", "c2"),
        ("ApprovalRequested", "send"),
        ("ApprovalDecided", "send"),
        ("ToolReturned", "c2"),
    ]


async def test_a_single_call_is_reported_before_it_runs(tmp_path: Path) -> None:
    events: list[Event] = []
    seen: list[int] = []

    @tool
    async def note() -> str:
        """Note how many calls were reported when this one ran."""
        seen.append(sum(isinstance(e, ToolCalled) for e in events))
        return "noted"

    model = ScriptedModel([_step(("note", "c1", {})), "done"])
    async with Harness(model=model, workspace=tmp_path, tools=[note], pipeline=NO_WATCH) as agent:
        async for event in agent.stream("go", context=ALICE):
            events.append(event)
    assert seen == [1]

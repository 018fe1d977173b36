"""Message queues never mix users: bob's ``steer`` / ``follow_up`` (even naming alice's session id)
never reach alice's run, and bob cannot decide or resume alice's paused calls."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from harness import RuntimeContext
from harness.agent import ApprovalNotFound, ControlOptions, Harness, NoActiveRun, PatternPolicy
from harness.models import Message, Model, ToolCall
from harness.models.base import ModelReply, ToolSpec, Usage
from harness.tools import tool

ALICE = RuntimeContext(user_id="alice", session_id="shared-name")
BOB = RuntimeContext(user_id="bob", session_id="shared-name")
INJECTED = "BOB-INJECTED-9d1e"


class Holding(Model):
    """Calls ``hold(who=<user>)`` at the start of a turn (the user is named in the message),
    then answers; records what each user's turns received."""

    def __init__(self) -> None:
        super().__init__(name="holding")
        self.seen: dict[str, list[str]] = {"alice": [], "bob": []}

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        who = "alice" if "alice" in messages[1].content else "bob"
        self.seen[who] += [m.content for m in messages]
        if messages[-1].role == "user" and messages[-1].content.startswith("I am"):
            call = ToolCall(id=f"hold-{who}", name="hold", arguments={"who": who})
            return ModelReply(message=Message.assistant("", [call]), usage=Usage())
        return ModelReply(message=Message.assistant(f"done for {who}"), usage=Usage())


async def test_bobs_queued_messages_never_land_in_alices_run(tmp_path: Path) -> None:
    entered = {"alice": anyio.Event(), "bob": anyio.Event()}
    release = anyio.Event()

    @tool
    async def hold(who: str) -> str:
        """Wait until the test lets the run go on."""
        entered[who].set()
        await release.wait()
        return "held"

    model = Holding()
    refusals: list[Exception] = []
    async with Harness(model=model, workspace=tmp_path, tools=[hold]) as agent:

        async def attack() -> None:
            await entered["alice"].wait()
            for method in (agent.steer, agent.follow_up):
                try:  # alice's run is in progress; bob has none yet, even under her session id
                    await method(INJECTED, context=BOB)
                except NoActiveRun as exc:
                    refusals.append(exc)
            await entered["bob"].wait()
            await agent.steer(f"{INJECTED} steer", context=BOB)  # now bob's own run takes it
            await agent.follow_up(f"{INJECTED} follow", context=BOB)
            release.set()

        async with anyio.create_task_group() as group:
            group.start_soon(partial(agent.run, "I am alice", context=ALICE))
            group.start_soon(attack)
            await entered["alice"].wait()
            group.start_soon(partial(agent.run, "I am bob", context=BOB))
        alice = await agent.sessions.get("alice", "shared-name")
        bob = await agent.sessions.get("bob", "shared-name")
    assert len(refusals) == 2 and all("'bob'" in str(e) for e in refusals)
    assert not any(INJECTED in text for text in model.seen["alice"])
    assert not any(INJECTED in m.content for m in alice.messages)
    assert f"{INJECTED} steer" in model.seen["bob"] and f"{INJECTED} follow" in model.seen["bob"]
    assert any(INJECTED in m.content for m in bob.messages)


async def test_bob_cannot_decide_or_resume_alices_paused_call(tmp_path: Path) -> None:
    marker = tmp_path / "alice" / "marker"
    call = ToolCall(id="c1", name="execute_shell_command", arguments={"command": "touch marker"})

    class Once(Model):
        async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
            reply = Message.assistant("", [call]) if messages[-1].role == "user" else Message.assistant("ok")
            return ModelReply(message=reply, usage=Usage())

    async with Harness(
        model=Once(name="once"), workspace=tmp_path, control=ControlOptions(approval=PatternPolicy([], default="ask"))
    ) as agent:
        paused = await agent.run("I am alice", context=ALICE)
        approval_id = paused.approvals[0].approval_id
        assert await agent.pending_approvals(BOB) == []
        with pytest.raises(ApprovalNotFound):
            await agent.resolve_approval(approval_id, approved=True, context=BOB)
        with pytest.raises(ApprovalNotFound):
            await agent.resume(context=BOB)
        assert not marker.exists()
        assert [r.approval_id for r in await agent.pending_approvals(ALICE)] == [approval_id]

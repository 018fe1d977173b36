"""Input hooks (``on_input``, ``before_run``) and the message queues of a run in progress
(``steer``, ``follow_up``), observed through the order of messages a scripted model receives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness import RuntimeContext
from harness.agent import Answer, ControlOptions, Harness, MessageInjected, NoActiveRun, RunStart
from harness.errors import SkillNotFound
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ModelReply, ToolSpec
from harness.tools import Tool, tool

ALICE = RuntimeContext(user_id="alice", session_id="chat")


def _skill(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "haiku"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Write a haiku.\n---\nWrite a haiku about $ARGUMENTS.\n"
    )


def _call(tool_name: str) -> Message:
    return Message.assistant("", [ToolCall(id=f"c-{tool_name}", name=tool_name, arguments={})])


def _said(messages: tuple[Message, ...]) -> list[tuple[str, str]]:
    """The conversation without the system prompt, as (role, text) with tool calls named."""
    return [(m.role, m.content or ",".join(c.name for c in m.tool_calls)) for m in messages if m.role != "system"]


class Counters:
    """Hooks that count their calls and record what they saw."""

    def __init__(self) -> None:
        self.inputs: list[str] = []
        self.starts: list[RunStart] = []

    def on_input(self, text: str, context: RuntimeContext) -> None:
        self.inputs.append(text)

    async def before_run(self, start: RunStart) -> None:
        self.starts.append(start)

    def agent(self, model: ScriptedModel, workspace: Path, act: Callable[[], object]) -> Harness:
        """An agent with these hooks and a ``poke`` tool that runs ``act``."""
        return Harness(
            model=model,
            workspace=workspace,
            tools=[_agent_tool(act)],
            control=ControlOptions(on_input=self.on_input, before_run=self.before_run),
        )


def _agent_tool(act: Callable[[], object]) -> Tool:
    @tool
    async def poke() -> str:
        """Let the test act while the run is in progress."""
        await act()  # type: ignore[misc]
        return "poked"

    return poke


async def test_on_input_sees_the_text_before_skill_expansion_and_may_rewrite_it(tmp_path: Path) -> None:
    _skill(tmp_path)
    seen: list[str] = []

    def on_input(text: str, context: RuntimeContext) -> str:
        seen.append(f"{context.user_id}:{text}")
        return text.replace("/haiku", "/skill:haiku")

    model = ScriptedModel(["a haiku"])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(on_input=on_input)) as agent:
        await agent.run("/haiku autumn", context=ALICE)
    assert seen == ["alice:/haiku autumn"]
    [(role, text)] = _said(model.calls[0].messages)
    assert role == "user" and text.startswith('<skill name="haiku"') and "about autumn" in text


async def test_on_input_may_answer_without_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([])

    async def on_input(text: str, context: RuntimeContext) -> Answer | None:
        return Answer(text="Commands: /help") if text == "/help" else None

    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(on_input=on_input)) as agent:
        result = await agent.run("/help", context=ALICE)
        session = await agent.sessions.get("alice", "chat")
    assert result.reply == "Commands: /help" and model.calls == [] and session.messages == []


async def test_before_run_sees_the_expanded_turn_and_adds_context_before_the_message(tmp_path: Path) -> None:
    _skill(tmp_path)
    starts: list[RunStart] = []

    def before_run(start: RunStart) -> str:
        starts.append(start)
        return "The user lives in Kyoto."

    model = ScriptedModel(["a haiku", "again"])
    async with Harness(model=model, workspace=tmp_path, control=ControlOptions(before_run=before_run)) as agent:
        result = await agent.run("/skill:haiku rain", context=ALICE)
        await agent.run("once more", context=ALICE)
    [start, second] = starts
    assert start.original == "/skill:haiku rain" and start.skill == "haiku"
    assert start.message.startswith('<skill name="haiku"') and "about rain" in start.message
    assert "load_skill_through_path" in start.tools and start.plan.context == ALICE
    assert second.skill is None and second.message == "once more"
    said = _said(model.calls[0].messages)
    assert said[0] == ("user", "The user lives in Kyoto.") and said[1][1].startswith("<skill")
    assert [e for e in result.events if isinstance(e, MessageInjected)] == [
        MessageInjected(kind="context", text="The user lives in Kyoto.")
    ]
    # The context stays in the conversation with the message it came with.
    assert _said(model.calls[1].messages)[:4] == [
        ("user", "The user lives in Kyoto."),
        said[1],
        ("assistant", "a haiku"),
        ("user", "The user lives in Kyoto."),
    ]


async def test_steer_joins_the_run_at_the_next_step_boundary_without_the_hooks(tmp_path: Path) -> None:
    hooks = Counters()
    agent: Harness

    async def steer() -> None:
        await agent.steer("also check the tests", context=ALICE)

    model = ScriptedModel([_call("poke"), "checked"])
    agent = hooks.agent(model, tmp_path, steer)
    async with agent:
        result = await agent.run("review this", context=ALICE)
    assert _said(model.calls[1].messages) == [
        ("user", "review this"),
        ("assistant", "poke"),
        ("tool", "poked"),
        ("user", "also check the tests"),
    ]
    assert result.reply == "checked"
    assert MessageInjected(kind="steer", text="also check the tests") in result.events
    assert hooks.inputs == ["review this"] and len(hooks.starts) == 1


async def test_steer_expands_a_skill_command_first(tmp_path: Path) -> None:
    _skill(tmp_path)
    agent: Harness

    async def steer() -> None:
        await agent.steer("/skill:haiku snow", context=ALICE)

    model = ScriptedModel([_call("poke"), "done"])
    agent = Harness(model=model, workspace=tmp_path, tools=[_agent_tool(steer)])
    async with agent:
        await agent.run("hello", context=ALICE)
    role, text = _said(model.calls[1].messages)[-1]
    assert role == "user" and text.startswith('<skill name="haiku"') and "about snow" in text


class SteerOnAnswer(ScriptedModel):
    """Steers the run while the model is producing its final answer (on call ``at``)."""

    def __init__(self, replies: list[str], *, at: int, steer: Callable[[], object]) -> None:
        super().__init__(replies)
        self.at, self.steer = at, steer

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        if len(self.calls) == self.at:
            await self.steer()  # type: ignore[misc]
        return await super()._complete(messages, tools)


async def test_steering_that_arrives_with_the_final_answer_keeps_the_run_going(tmp_path: Path) -> None:
    agent: Harness

    async def steer() -> None:
        await agent.steer("shorter please", context=ALICE)

    model = SteerOnAnswer(["a long answer", "short"], at=0, steer=steer)
    agent = Harness(model=model, workspace=tmp_path)
    async with agent:
        result = await agent.run("explain", context=ALICE)
    assert _said(model.calls[1].messages) == [
        ("user", "explain"),
        ("assistant", "a long answer"),
        ("user", "shorter please"),
    ]
    assert result.reply == "short"


async def test_follow_up_runs_after_the_run_answers_as_its_own_turn(tmp_path: Path) -> None:
    _skill(tmp_path)
    hooks = Counters()
    agent: Harness

    async def queue() -> None:
        await agent.follow_up("/skill:haiku dusk", context=ALICE)

    model = ScriptedModel([_call("poke"), "first answer", "a dusk haiku"])
    agent = hooks.agent(model, tmp_path, queue)
    async with agent:
        result = await agent.run("start", context=ALICE)
    # The follow-up waited for the first answer, then started a turn of its own.
    assert _said(model.calls[1].messages) == [("user", "start"), ("assistant", "poke"), ("tool", "poked")]
    follow = _said(model.calls[2].messages)
    assert follow[:4] == [("user", "start"), ("assistant", "poke"), ("tool", "poked"), ("assistant", "first answer")]
    assert follow[4][0] == "user" and "about dusk" in follow[4][1]
    assert result.reply == "a dusk haiku"
    assert MessageInjected(kind="follow_up", text="/skill:haiku dusk") in result.events
    assert hooks.inputs == ["start"] and len(hooks.starts) == 1


async def test_steer_and_follow_up_need_a_run_in_progress(tmp_path: Path) -> None:
    async with Harness(model=ScriptedModel(["hi"]), workspace=tmp_path) as agent:
        with pytest.raises(NoActiveRun, match="'alice'"):
            await agent.steer("hello", context=ALICE)
        with pytest.raises(NoActiveRun):
            await agent.follow_up("hello", context=ALICE)
        await agent.run("hi", context=ALICE)
        with pytest.raises(NoActiveRun):  # the run has ended
            await agent.steer("late", context=ALICE)


async def test_an_unknown_skill_in_a_queued_message_is_refused_at_once(tmp_path: Path) -> None:
    agent: Harness
    errors: list[str] = []

    async def queue() -> None:
        for method in (agent.steer, agent.follow_up):
            try:
                await method("/skill:nope", context=ALICE)
            except SkillNotFound as exc:
                errors.append(str(exc))

    model = ScriptedModel([_call("poke"), "done"])
    agent = Harness(model=model, workspace=tmp_path, tools=[_agent_tool(queue)])
    async with agent:
        result = await agent.run("go", context=ALICE)
    assert len(errors) == 2 and all("no skill named 'nope'" in e for e in errors)
    assert result.reply == "done" and len(model.calls) == 2


async def test_queued_messages_of_a_paused_run_wait_for_its_resume(tmp_path: Path) -> None:
    from harness.agent import PatternPolicy

    agent: Harness

    async def queue() -> None:
        await agent.follow_up("and then?", context=ALICE)

    model = ScriptedModel(
        [
            Message.assistant(
                "",
                [
                    ToolCall(id="p", name="poke", arguments={}),
                    ToolCall(id="s", name="execute_shell_command", arguments={"command": "true"}),
                ],
            ),
            "ran",
            "then this",
        ]
    )
    agent = Harness(
        model=model,
        workspace=tmp_path,
        tools=[_agent_tool(queue)],
        control=ControlOptions(approval=PatternPolicy([], default="ask")),
    )
    async with agent:
        paused = await agent.run("go", context=ALICE)
        assert len(model.calls) == 1 and len(paused.approvals) == 1
        await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
        resumed = await agent.resume(context=ALICE)
    assert resumed.reply == "then this"
    assert _said(model.calls[2].messages)[-1] == ("user", "and then?")


async def test_steering_queued_before_a_pause_joins_the_resumed_turn_first(tmp_path: Path) -> None:
    from harness.agent import PatternPolicy

    agent: Harness

    async def steer() -> None:
        await agent.steer("use the staging server", context=ALICE)

    calls = [
        ToolCall(id="p", name="poke", arguments={}),
        ToolCall(id="s", name="execute_shell_command", arguments={"command": "true"}),
    ]
    model = ScriptedModel([Message.assistant("", calls), "deployed to staging"])
    agent = Harness(
        model=model,
        workspace=tmp_path,
        tools=[_agent_tool(steer)],
        control=ControlOptions(approval=PatternPolicy([], default="ask")),
    )
    async with agent:
        paused = await agent.run("deploy", context=ALICE)
        await agent.resolve_approval(paused.approvals[0].approval_id, approved=True, context=ALICE)
        resumed = await agent.resume(context=ALICE)
    assert [role for role, _ in _said(model.calls[1].messages)] == ["user", "assistant", "tool", "tool", "user"]
    assert _said(model.calls[1].messages)[-1] == ("user", "use the staging server")
    assert resumed.reply == "deployed to staging"


async def test_a_hook_returning_something_else_is_a_clear_error(tmp_path: Path) -> None:
    async with Harness(
        model=ScriptedModel(["x"]), workspace=tmp_path, control=ControlOptions(on_input=lambda text, context: 42)
    ) as agent:
        with pytest.raises(TypeError, match="on_input returned int"):
            await agent.run("hi", context=ALICE)
    async with Harness(
        model=ScriptedModel(["x"]), workspace=tmp_path, control=ControlOptions(before_run=lambda start: ["x"])
    ) as agent:
        with pytest.raises(TypeError, match="before_run returned list"):
            await agent.run("hi", context=ALICE)

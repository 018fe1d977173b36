"""The agent loop end to end with a scripted model: skills, tools, users, sessions, subagents."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from filesystems import LocalFilesystem
from harness import RuntimeContext
from harness.agent import Harness, StepLimitExceeded
from harness.agent.sessions import InMemorySessionStore
from harness.errors import SkillNotFound
from harness.events import ShellRan, SkillLoaded, ToolReturned, TurnPrepared
from harness.models import DemoModel, Message, ScriptedModel, ToolCall
from repositories import FileContents, MemoryRepository, SkillBundleContents
from tests.support.catalog import read_catalog
from tests.support.skills import make_skill, served_body

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")


def _market() -> MemoryRepository:
    return MemoryRepository(
        [
            SkillBundleContents(
                folder="weather",
                skill_md=b"---\nname: weather\ndescription: Use when the user asks about the weather forecast.\n---\n"
                b"Run `python3 scripts/forecast.py` and report it.\n",
                files=(FileContents(path="scripts/forecast.py", data=b"print('sunny, 21 C')\n"),),
            ),
            SkillBundleContents(
                folder="secret-ops",
                skill_md=b"---\nname: secret-ops\ndescription: Internal operations.\ndisable-model-invocation: true\n---\nDo the secret thing.\n",
            ),
        ],
        name="acme",
    )


def _call(tool_name: str, **arguments: object) -> Message:
    return Message.assistant("", [ToolCall(id=f"c-{tool_name}", name=tool_name, arguments=dict(arguments))])


async def test_demo_model_picks_loads_and_runs_a_skill(tmp_path: Path) -> None:
    async with Harness(model=DemoModel(), workspace=tmp_path, repositories=[_market()]) as agent:
        result = await agent.run("what is the weather forecast today?", context=ALICE)
    loads = [e for e in result.events if isinstance(e, SkillLoaded)]
    shells = [e for e in result.events if isinstance(e, ShellRan)]
    assert [e.skill_id for e in loads] == ["weather_acme"]
    assert shells and shells[0].exit_code == 0
    assert "sunny, 21 C" in result.reply
    prepared = result.events[0]
    assert isinstance(prepared, TurnPrepared) and prepared.staged_written == 3


async def test_catalog_goes_into_the_system_prompt_after_the_apps_prompt(tmp_path: Path) -> None:
    model = ScriptedModel(["hi"])
    async with Harness(model=model, workspace=tmp_path, repositories=[_market()], system_prompt="Be brief.") as agent:
        await agent.run("hello", context=ALICE)
    system = model.calls[0].messages[0]
    assert system.role == "system" and system.content.startswith("Be brief.\n\n")
    assert [s.skill_id for s in read_catalog(system.content).skills] == ["weather_acme"]
    assert "secret-ops" not in system.content
    assert {"load_skill_through_path", "execute_shell_command", "read_file"} <= set(model.calls[0].tool_names)


async def test_tool_error_goes_back_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([_call("load_skill_through_path", skillId="nope"), "sorry"])
    async with Harness(model=model, workspace=tmp_path) as agent:
        result = await agent.run("x", context=ALICE)
    returned = [e for e in result.events if isinstance(e, ToolReturned)]
    assert returned[0].error and "not available" in returned[0].content
    assert result.reply == "sorry"


async def test_step_limit_is_a_clear_error(tmp_path: Path) -> None:
    model = ScriptedModel([_call("list_files")] * 3)
    async with Harness(model=model, workspace=tmp_path, max_steps=3) as agent:
        with pytest.raises(StepLimitExceeded, match="3 model steps"):
            await agent.run("loop", context=ALICE)


async def test_explicit_invocation_expands_hidden_skill_into_the_user_turn(tmp_path: Path) -> None:
    model = ScriptedModel(["done", "done again"])
    async with Harness(model=model, workspace=tmp_path, repositories=[_market()]) as agent:
        await agent.skill("secret-ops", "now please", context=ALICE)
        await agent.run("/skill:secret-ops go", context=BOB)
    for call in model.calls:
        user = call.messages[-1].content
        assert user.startswith('<skill name="secret-ops" location="')
        assert "Do the secret thing." in user and "</skill>" in user


async def test_unknown_skill_raises_in_api_and_is_reported_in_message_form(tmp_path: Path) -> None:
    model = ScriptedModel([])
    async with Harness(model=model, workspace=tmp_path) as agent:
        with pytest.raises(SkillNotFound):
            await agent.skill("missing", context=ALICE)
        result = await agent.run("/skill:missing args", context=ALICE)
    assert "missing" in result.reply and model.calls == []


async def test_second_load_in_a_conversation_is_a_short_note(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            _call("load_skill_through_path", skillId="weather_acme"),
            "a",
            _call("load_skill_through_path", skillId="weather"),
            "b",
        ]
    )
    async with Harness(model=model, workspace=tmp_path, repositories=[_market()]) as agent:
        first = await agent.run("one", context=ALICE)
        second = await agent.run("two", context=ALICE)
    body = [e for e in first.events if isinstance(e, ToolReturned)][0].content
    note = [e for e in second.events if isinstance(e, ToolReturned)][0].content
    assert served_body(body).startswith("---") and "already loaded" in note


@pytest.mark.parametrize(("max_messages", "served"), [(200, "note"), (4, "body")], ids=["kept", "trimmed"])
async def test_a_load_after_trimming_dropped_the_body_serves_it_again(
    tmp_path: Path, max_messages: int, served: str
) -> None:
    load = _call("load_skill_through_path", skillId="weather")
    model = ScriptedModel([load, "a", "b", load, "c"])
    sessions = InMemorySessionStore(max_messages=max_messages)
    async with Harness(model=model, workspace=tmp_path, repositories=[_market()], sessions=sessions) as agent:
        first = await agent.run("one", context=ALICE)
        await agent.run("two", context=ALICE)
        third = await agent.run("three", context=ALICE)
    body = [e for e in first.events if isinstance(e, ToolReturned)][0].content
    again = [e for e in third.events if isinstance(e, ToolReturned)][0].content
    assert served_body(body).startswith("---")
    assert (again == body) if served == "body" else ("already loaded" in again)


async def test_two_users_in_parallel_keep_separate_histories_and_catalogs(tmp_path: Path) -> None:
    make_skill(tmp_path / "alice" / "skills", "private", description="Alice only.", body="x\n")
    seen: dict[str, list[str]] = {}

    def echo(messages: tuple[Message, ...], tools: object) -> str:
        users = [m.content for m in messages if m.role == "user"]
        seen.setdefault(users[-1], users)
        return "catalog has private" if "Alice only." in messages[0].content else "no private"

    model = ScriptedModel([echo] * 4)
    async with Harness(model=model, workspace=tmp_path) as agent:
        results: dict[str, str] = {}

        async def turn(ctx: RuntimeContext, text: str) -> None:
            results[text] = (await agent.run(text, context=ctx)).reply

        async with anyio.create_task_group() as group:
            group.start_soon(turn, ALICE, "alice-1")
            group.start_soon(turn, BOB, "bob-1")
        async with anyio.create_task_group() as group:
            group.start_soon(turn, ALICE, "alice-2")
            group.start_soon(turn, BOB, "bob-2")
    assert results["alice-1"] == "catalog has private" and results["bob-1"] == "no private"
    assert seen["alice-2"] == ["alice-1", "alice-2"] and seen["bob-2"] == ["bob-1", "bob-2"]


async def test_history_is_bounded(tmp_path: Path) -> None:
    store = InMemorySessionStore(max_messages=4, max_sessions=2)
    model = ScriptedModel(["r"] * 5)
    async with Harness(model=model, workspace=tmp_path, sessions=store) as agent:
        for i in range(5):
            await agent.run(f"m{i}", context=ALICE)
    assert len((await store.get("alice", "default")).messages) == 4
    for ctx in (RuntimeContext(user_id="u1"), RuntimeContext(user_id="u2")):
        await store.append(ctx.user_id, "default", [Message.user("hi")])
    assert (await store.get("alice", "default")).messages == []  # evicted


async def test_subagent_inherits_markets_and_can_be_restricted(tmp_path: Path) -> None:
    market = _market()
    model = ScriptedModel(["child reply"])
    async with Harness(model=model, workspace=tmp_path, repositories=[market]) as agent:
        child = agent.subagent(name="helper", system_prompt="Child.", skills=["weather"])
        assert child.repositories[0] is market and child.pipeline is agent.pipeline
        await child.run("hi", context=ALICE)
        with pytest.raises(SkillNotFound):
            await child.skill("secret-ops", context=ALICE)
    system = model.calls[0].messages[0].content
    assert system.startswith("Child.") and [s.skill_id for s in read_catalog(system).skills] == ["weather_acme"]


async def test_user_tools_from_plain_functions(tmp_path: Path) -> None:
    async def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel([_call("add", a=2, b=3), "five"])
    async with Harness(model=model, workspace=tmp_path, tools=[add]) as agent:
        result = await agent.run("add", context=ALICE)
    assert [e.content for e in result.events if isinstance(e, ToolReturned)] == ["5"]


async def test_file_tools_work_in_the_users_area_only(tmp_path: Path) -> None:
    model = ScriptedModel(
        [_call("write_file", path="notes.txt", content="hi"), "ok", _call("read_file", path="notes.txt"), "no"]
    )
    async with Harness(model=model, filesystem=LocalFilesystem(tmp_path, shell=True)) as agent:
        await agent.run("write", context=ALICE)
        bob = await agent.run("read", context=BOB)
    assert (tmp_path / "alice" / "notes.txt").read_text() == "hi"
    assert [e for e in bob.events if isinstance(e, ToolReturned)][0].error


async def test_learning_loop_drafts_and_operator_promotion(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            _call(
                "propose_skill",
                name="greeter",
                description="Use when greeting people.",
                body="Say hello politely.",
            ),
            "drafted",
            "after promotion",
        ]
    )
    async with Harness(model=model, workspace=tmp_path, learning=True) as agent:
        await agent.run("learn greeting", context=ALICE)
        assert (tmp_path / "alice" / "skills" / "_drafts" / "greeter" / "SKILL.md").exists()
        assert "greeter" not in (await agent.prepare(ALICE)).catalog
        await agent.promote_skill("greeter", "ops", context=ALICE)
        await agent.run("hi", context=ALICE)
        assert await agent.query_audit(predicate=lambda r: r.op == "promotion.promote")
    assert "greeter" in read_catalog(model.calls[-1].messages[0].content).described

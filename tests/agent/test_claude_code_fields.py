"""Skills written for Claude Code work unchanged: argument placeholders, user-invocable,
when_to_use, argument-hint, model, context: fork and allowed-tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness import RuntimeContext
from harness.agent import Harness, PipelineOptions, TrustOptions
from harness.cli import main
from harness.errors import SkillNotFound
from harness.events import SkillWarning
from harness.models import ScriptedModel
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL
from repositories import MemoryRepository
from tests.support.catalog import read_catalog
from tests.support.skills import make_bundle, make_skill

ALICE = RuntimeContext(user_id="alice", session_id="s-42")


def _skill(tmp_path: Path, name: str, *, body: str = "# body\n", extra: str = "") -> Path:
    return make_skill(tmp_path / "skills", name, body=body, extra=extra)


async def _invoked_text(tmp_path: Path, message: str) -> str:
    """The user text the model receives for ``message``."""
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        await agent.run(message, context=ALICE)
    return model.calls[0].messages[-1].content


# -- placeholders ------------------------------------------------------------------------------


async def test_arguments_placeholder_is_the_argument_text_as_typed(tmp_path: Path) -> None:
    _skill(tmp_path, "fix", body="Fix issue $ARGUMENTS now.\n")
    text = await _invoked_text(tmp_path, '/skill:fix 123 "two words"')
    assert 'Fix issue 123 "two words" now.' in text


async def test_indexed_arguments_are_zero_based_and_split_shell_style(tmp_path: Path) -> None:
    _skill(tmp_path, "move", body="from $ARGUMENTS[0] to $ARGUMENTS[1]\n")
    text = await _invoked_text(tmp_path, '/skill:move "my widget" React')
    assert "from my widget to React" in text


async def test_dollar_number_is_the_zero_based_argument_and_missing_ones_are_empty(tmp_path: Path) -> None:
    _skill(tmp_path, "move", body="[$0] [$1] [$2]\n")
    text = await _invoked_text(tmp_path, "/skill:move a b")
    assert "[a] [b] []" in text


async def test_bad_quoting_falls_back_to_whitespace_splitting(tmp_path: Path) -> None:
    _skill(tmp_path, "move", body="[$0] [$1]\n")
    text = await _invoked_text(tmp_path, '/skill:move "open b')
    assert '["open] [b]' in text


async def test_named_arguments_follow_the_arguments_list(tmp_path: Path) -> None:
    _skill(
        tmp_path,
        "migrate",
        body="$component from $source to $target ($other)\n",
        extra="arguments: [component, source, target]\n",
    )
    text = await _invoked_text(tmp_path, "/skill:migrate SearchBar React Vue")
    assert "SearchBar from React to Vue ($other)" in text


async def test_skill_dir_and_session_id_are_filled_in(tmp_path: Path) -> None:
    _skill(tmp_path, "where", body="dir=${CLAUDE_SKILL_DIR} session=${CLAUDE_SESSION_ID}\n")
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        root = (await agent.prepare(ALICE)).invoke("where").files_root
        await agent.run("/skill:where", context=ALICE)
    assert root and f"dir={root} session=s-42" in model.calls[0].messages[-1].content


async def test_skill_dir_names_the_load_tool_when_no_files_root_is_rendered(tmp_path: Path) -> None:
    _skill(tmp_path, "where", body="dir=${CLAUDE_SKILL_DIR}\n")
    model = ScriptedModel(["done"])
    async with Harness(
        model=model, filesystem=LocalFilesystem(tmp_path, shell=False), pipeline=PipelineOptions(watch=False)
    ) as agent:
        await agent.run("/skill:where", context=ALICE)
    assert f"dir={LOAD_TOOL}:where_workspace" in model.calls[0].messages[-1].content


async def test_substituted_text_is_not_substituted_again(tmp_path: Path) -> None:
    _skill(tmp_path, "echo", body="first=$0 all=$ARGUMENTS\n")
    text = await _invoked_text(tmp_path, "/skill:echo $ARGUMENTS $1")
    assert "first=$ARGUMENTS all=$ARGUMENTS $1" in text


async def test_arguments_line_is_appended_when_the_body_has_no_placeholder(tmp_path: Path) -> None:
    _skill(tmp_path, "plain", body="Do the thing.\n")
    text = await _invoked_text(tmp_path, "/skill:plain fast please")
    assert "Do the thing.\n\nARGUMENTS: fast please\n</skill>" in text


async def test_no_arguments_line_without_arguments(tmp_path: Path) -> None:
    _skill(tmp_path, "plain", body="Do the thing.\n")
    assert "ARGUMENTS:" not in await _invoked_text(tmp_path, "/skill:plain")


async def test_agent_skill_fills_placeholders_from_its_instructions(tmp_path: Path) -> None:
    _skill(tmp_path, "fix", body="Fix issue $0.\n")
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        await agent.skill("fix", "77", context=ALICE)
    assert "Fix issue 77." in model.calls[0].messages[-1].content


# -- user-invocable, when_to_use, argument-hint ------------------------------------------------


async def test_user_invocable_false_refuses_the_slash_command_without_calling_the_model(tmp_path: Path) -> None:
    _skill(tmp_path, "internal", extra="user-invocable: false\n")
    _skill(tmp_path, "public")
    model = ScriptedModel([])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:internal", context=ALICE)
    assert "is not user-invocable" in result.reply
    assert "public" in result.reply and "available: public" in result.reply
    assert model.calls == []


async def test_user_invocable_false_stays_in_the_models_catalog(tmp_path: Path) -> None:
    _skill(tmp_path, "internal", extra="user-invocable: false\n")
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        plan = await agent.prepare(ALICE)
    assert "internal" in read_catalog(plan.catalog).described


async def test_when_to_use_is_shown_escaped_with_the_description(tmp_path: Path) -> None:
    _skill(tmp_path, "deploy", extra="when_to_use: the user says ship <it> & go\n")
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        plan = await agent.prepare(ALICE)
    assert "When to use: the user says ship &lt;it&gt; &amp; go</description>" in plan.catalog
    assert read_catalog(plan.catalog).described["deploy"].endswith("When to use: the user says ship <it> & go")


async def test_unknown_skill_reply_lists_argument_hints(tmp_path: Path) -> None:
    _skill(tmp_path, "fix", extra='argument-hint: "[issue-number]"\n')
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:nope", context=ALICE)
    assert "no skill named 'nope'" in result.reply and "fix [issue-number]" in result.reply


async def test_unknown_skill_reply_lists_only_what_this_user_may_invoke(tmp_path: Path) -> None:
    _skill(tmp_path, "fix")
    _skill(tmp_path, "internal", extra="user-invocable: false\n")
    _skill(tmp_path, "quiet", extra="disable-model-invocation: true\n")  # hidden from the model, not the user
    make_skill(tmp_path / "alice" / "skills", "alice-only")
    make_skill(tmp_path / "bob" / "skills", "bob-only")
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:nope", context=ALICE)
    assert result.reply == "no skill named 'nope'; available: alice-only, fix, quiet"


async def test_unknown_skill_reply_of_a_restricted_agent_lists_only_its_skills(tmp_path: Path) -> None:
    _skill(tmp_path, "fix")
    _skill(tmp_path, "deploy")
    async with Harness(
        model=ScriptedModel([]), workspace=tmp_path, skills=["fix"], pipeline=PipelineOptions(watch=False)
    ) as agent:
        result = await agent.run("/skill:deploy", context=ALICE)
    assert result.reply == "no skill named 'deploy'; available: fix"


def _list(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    config = tmp_path / "harness.yaml"
    config.write_text("workspace: .\nfilesystem: local\n")
    assert main(["skills", "list", "--config", str(config), *extra]) == 0
    return capsys.readouterr().out


def test_skills_list_shows_the_argument_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _skill(tmp_path, "fix", extra='argument-hint: "[issue-number]"\n')
    assert "/skill:fix [issue-number]" in _list(tmp_path, capsys)


def test_skills_list_json_has_the_argument_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _skill(tmp_path, "fix", extra='argument-hint: "[issue-number]"\n')
    (skill,) = json.loads(_list(tmp_path, capsys, "--json"))["skills"]
    assert skill["argument_hint"] == "[issue-number]"


# -- model -------------------------------------------------------------------------------------


async def test_model_field_runs_the_skill_turn_with_the_named_model(tmp_path: Path) -> None:
    _skill(tmp_path, "fast", extra="model: quick\n")
    default, quick = ScriptedModel([], name="default"), ScriptedModel(["from quick"], name="quick")
    async with Harness(
        model=default,
        workspace=tmp_path,
        trust=TrustOptions(models={"quick": quick}),
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        result = await agent.run("/skill:fast", context=ALICE)
    assert result.reply == "from quick" and default.calls == []


async def test_model_field_opens_a_spec_the_registry_knows(tmp_path: Path) -> None:
    _skill(tmp_path, "demo-skill", extra="model: demo\n")
    default = ScriptedModel([], name="default")
    async with Harness(model=default, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:demo-skill", context=ALICE)
    assert result.reply and default.calls == []


async def test_unknown_model_warns_and_uses_the_default_model(tmp_path: Path) -> None:
    _skill(tmp_path, "odd", extra="model: nosuch:thing\n")
    default = ScriptedModel(["from default"], name="default")
    async with Harness(model=default, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:odd", context=ALICE)
    warnings = [e for e in result.events if isinstance(e, SkillWarning)]
    assert result.reply == "from default"
    assert [w.code for w in warnings] == ["unknown-model"] and "nosuch:thing" in warnings[0].message


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted-market", "trusted-market"])
async def test_a_market_skill_picks_a_provider_only_from_a_trusted_market(tmp_path: Path, trusted: bool) -> None:
    market = MemoryRepository([make_bundle("hijack", extra="model: demo\n")], name="acme")
    default = ScriptedModel(["from default"], name="default")
    trust = TrustOptions(trusted_markets=frozenset([market.source]) if trusted else frozenset())
    async with Harness(
        model=default, repositories=[market], workspace=tmp_path, trust=trust, pipeline=PipelineOptions(watch=False)
    ) as agent:
        result = await agent.run("/skill:hijack", context=ALICE)
    warnings = [e.code for e in result.events if isinstance(e, SkillWarning)]
    if trusted:
        assert default.calls == [] and warnings == []
    else:
        assert result.reply == "from default" and warnings == ["untrusted-model"]


# -- context: fork -----------------------------------------------------------------------------


async def test_fork_returns_the_subagents_answer_with_the_body_as_its_task(tmp_path: Path) -> None:
    _skill(tmp_path, "research", body="Research $ARGUMENTS.\n", extra="context: fork\nagent: researcher\n")
    model = ScriptedModel(["the findings"])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.run("/skill:research tides", context=ALICE)
        session = await agent.sessions.get("alice", "s-42")
    assert result.reply == "the findings"
    assert "Research tides." in model.calls[0].messages[-1].content
    assert [m.content for m in session.messages] == ["/skill:research tides", "the findings"]


# -- allowed-tools -----------------------------------------------------------------------------

_ALLOWED = "allowed-tools: Bash(git:*) Read\n"


async def _offered(tmp_path: Path, **options: object) -> tuple[str, ...]:
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=tmp_path, **options, pipeline=PipelineOptions(watch=False)) as agent:  # type: ignore[arg-type]
        await agent.run("/skill:narrow", context=ALICE)
    return model.calls[0].tool_names


async def test_allowed_tools_narrow_the_turn_when_enforced(tmp_path: Path) -> None:
    _skill(tmp_path, "narrow", extra=_ALLOWED)
    offered = await _offered(tmp_path, trust=TrustOptions(enforce_allowed_tools=True))
    assert set(offered) == {LOAD_TOOL, SHELL_TOOL, "read_file", "list_files"}


async def test_allowed_tools_are_ignored_when_not_enforced(tmp_path: Path) -> None:
    _skill(tmp_path, "narrow", extra=_ALLOWED)
    assert "write_file" in await _offered(tmp_path)


async def test_allowed_tools_of_an_untrusted_market_skill_are_ignored(tmp_path: Path) -> None:
    market = MemoryRepository([make_bundle("narrow", extra=_ALLOWED)], name="m", writable=False)
    offered = await _offered(tmp_path, trust=TrustOptions(enforce_allowed_tools=True), repositories=[market])
    assert "write_file" in offered


async def test_allowed_tools_of_a_trusted_market_skill_narrow_the_turn(tmp_path: Path) -> None:
    market = MemoryRepository([make_bundle("narrow", extra=_ALLOWED)], name="m", writable=False)
    offered = await _offered(
        tmp_path,
        trust=TrustOptions(enforce_allowed_tools=True, trusted_markets=frozenset([market.source])),
        repositories=[market],
    )
    assert "write_file" not in offered and "read_file" in offered


async def test_forked_skill_turn_gets_only_its_allowed_tools(tmp_path: Path) -> None:
    _skill(tmp_path, "narrow", extra=_ALLOWED + "context: fork\n")
    offered = await _offered(tmp_path, trust=TrustOptions(enforce_allowed_tools=True))
    assert "write_file" not in offered and SHELL_TOOL in offered


async def test_agent_skill_may_invoke_a_skill_that_is_not_user_invocable(tmp_path: Path) -> None:
    _skill(tmp_path, "internal", body="internal steps\n", extra="user-invocable: false\n")
    model = ScriptedModel(["done"])
    async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        result = await agent.skill("internal", context=ALICE)
    assert result.reply == "done" and "internal steps" in model.calls[0].messages[-1].content


async def test_agent_skill_raises_for_an_unknown_skill(tmp_path: Path) -> None:
    async with Harness(model=ScriptedModel([]), workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
        with pytest.raises(SkillNotFound, match="no skill named 'nope'"):
            await agent.skill("nope", context=ALICE)

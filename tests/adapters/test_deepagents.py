"""The deepagents adapter: a real ``create_deep_agent`` graph whose ``SkillsMiddleware`` and file
tools read one user's skills through :class:`SkillsBackend`, driven by langchain_core's fake
chat model."""

from __future__ import annotations

from types import ModuleType

from harness import Harness
from tests.adapters.conftest import ALICE, BOB, BOB_SECRET, BOB_SKILL, FORECAST, MARKET_BODY, MARKET_SKILL, require

require("deepagents", "deepagents")


async def test_skills_middleware_lists_and_the_agent_reads_the_market_skill(agent: Harness, kit: ModuleType) -> None:
    model, tools = await kit.run(
        agent,
        ALICE,
        kit.calls(("read_file", {"file_path": f"/skills/{MARKET_SKILL}/SKILL.md"})),
        kit.calls(("read_file", {"file_path": f"/skills/{MARKET_SKILL}/scripts/forecast.py"})),
        kit.calls(("grep", {"pattern": "sunny", "path": "/skills/"})),
        kit.calls(("glob", {"pattern": "*.py", "path": "/skills/"})),
        kit.AIMessage(content="sunny"),
    )
    assert f"/skills/{MARKET_SKILL}/SKILL.md" in kit.system_prompt(model)
    skill_md, script, grep, glob = tools
    assert MARKET_BODY in skill_md
    assert FORECAST in script
    assert f"/skills/{MARKET_SKILL}/scripts/forecast.py" in grep
    assert f"/skills/{MARKET_SKILL}/scripts/forecast.py" in glob


async def test_another_users_skill_is_neither_listed_nor_readable(agent: Harness, kit: ModuleType) -> None:
    model, tools = await kit.run(
        agent,
        ALICE,
        kit.calls(
            ("read_file", {"file_path": f"/skills/{BOB_SKILL}/SKILL.md"}),
            ("read_file", {"file_path": f"/skills/{BOB_SKILL}/notes.txt"}),
            ("read_file", {"file_path": f"/skills/{MARKET_SKILL}/../{BOB_SKILL}/SKILL.md"}),
            ("ls", {"path": "/skills/"}),
            ("grep", {"pattern": "BOB-SECRET", "path": "/skills/"}),
            ("glob", {"pattern": "**/*", "path": "/skills/"}),
        ),
        kit.AIMessage(content="nothing"),
    )
    assert BOB_SKILL not in kit.system_prompt(model)
    assert BOB_SECRET not in " ".join(tools)
    assert BOB_SKILL not in " ".join(tools[3:])
    assert f"/skills/{MARKET_SKILL}/" in tools[3]


async def test_the_owner_reads_their_own_skill(agent: Harness, kit: ModuleType) -> None:
    model, tools = await kit.run(
        agent,
        BOB,
        kit.calls(("read_file", {"file_path": f"/skills/{BOB_SKILL}/notes.txt"})),
        kit.AIMessage(content="ok"),
    )
    assert f"/skills/{BOB_SKILL}/SKILL.md" in kit.system_prompt(model)
    assert BOB_SECRET in tools[0]


async def test_writes_to_the_skills_are_refused_and_change_nothing(agent: Harness, kit: ModuleType) -> None:
    path = f"/skills/{MARKET_SKILL}/SKILL.md"
    _, tools = await kit.run(
        agent,
        ALICE,
        kit.calls(("write_file", {"file_path": path, "content": "pwned"})),
        kit.calls(("edit_file", {"file_path": path, "old_string": "weather", "new_string": "pwned"})),
        kit.calls(("read_file", {"file_path": path})),
        kit.AIMessage(content="done"),
    )
    assert "read-only" in tools[0] and "read-only" in tools[1]
    assert "pwned" not in tools[2] and MARKET_BODY in tools[2]


async def test_the_synchronous_methods_say_the_backend_is_asynchronous(agent: Harness, kit: ModuleType) -> None:
    backend = kit.SkillsBackend(agent, ALICE)
    assert "ainvoke" in (backend.ls("/").error or "")
    assert "ainvoke" in (backend.read(f"/{MARKET_SKILL}/SKILL.md").error or "")


async def test_the_backend_itself_refuses_climbing_out_of_a_skill(agent: Harness, kit: ModuleType) -> None:
    backend = kit.SkillsBackend(agent, ALICE)
    climbed = await backend.aread(f"/{MARKET_SKILL}/../{BOB_SKILL}/SKILL.md")
    [download] = await backend.adownload_files([f"/{BOB_SKILL}/notes.txt"])
    assert climbed.file_data is None and "not a path inside" in (climbed.error or "")
    assert download.content is None and download.error == "file_not_found"

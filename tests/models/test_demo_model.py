"""DemoModel drives a skill round (choose, load, run the script, summarise) without a network."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.models import Message, ModelReply, ToolSpec, open_model
from harness.models.demo import DemoModel
from harness.pipeline.catalog import LOAD_TOOL, SHELL_TOOL, CatalogEntry, CatalogFormat, render_catalog
from tests.support.skills import make_skill

LOAD = ToolSpec(
    name="load_skill_through_path",
    description="Load a skill file.",
    parameters={"type": "object", "properties": {"skillId": {"type": "string"}}, "required": ["skillId"]},
)
SHELL = ToolSpec(
    name="execute_shell_command",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)

WEATHER_MD = """---
name: weather-report
description: Use when the user asks about the weather or a forecast for a city.
---
# Weather report

Print the forecast:

```bash
python3 scripts/forecast.py --city <city>
```
"""
FORECAST_PY = "import sys\nprint('forecast for', sys.argv[2], ': sunny, 21 C')\n"
NOTES_MD = """---
name: meeting-notes
description: Turn a meeting transcript into notes & action items.
---
Summarise the transcript as bullet points, then list action items with owners.
"""


def write_skill(root: Path, name: str, body: str, scripts: dict[str, str] | None = None) -> Path:
    folder = make_skill(
        root, name, text=body, files={f"scripts/{file}": text for file, text in (scripts or {}).items()}
    )
    (folder / "scripts").mkdir(exist_ok=True)
    return folder


def catalog(skills: list[tuple[str, str, Path | None]], catalog_format: CatalogFormat = "auto") -> str:
    """A system prompt carrying the catalog as the pipeline renders it."""
    entries = [
        CatalogEntry(name=name, description=desc, source="workspace", files_root=str(root) if root else None)
        for name, desc, root in skills
    ]
    text = render_catalog(entries, load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, catalog_format=catalog_format)
    return f"You are helpful.\n\nSkills:\n{text}"


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    write_skill(tmp_path, "weather-report", WEATHER_MD, {"forecast.py": FORECAST_PY})
    write_skill(tmp_path, "meeting-notes", NOTES_MD)
    return tmp_path


def system_prompt(skills_dir: Path, *, roots: bool = True, catalog_format: CatalogFormat = "auto") -> Message:
    return Message.system(
        catalog(
            [
                (
                    "meeting-notes",
                    "Turn a meeting transcript into notes & action items.",
                    skills_dir / "meeting-notes" if roots else None,
                ),
                (
                    "weather-report",
                    "Use when the user asks about the weather or a forecast for a city.",
                    skills_dir / "weather-report" if roots else None,
                ),
            ],
            catalog_format,
        )
    )


async def run_turn(
    model: DemoModel, conversation: list[Message], tools: list[ToolSpec], skills_dir: Path
) -> ModelReply:
    """A minimal agent loop: real files for loads, a real shell for commands."""
    for _ in range(6):
        reply = await model.complete(conversation, tools)
        conversation.append(reply.message)
        if not reply.message.tool_calls:
            return reply
        for call in reply.message.tool_calls:
            if call.name == "load_skill_through_path":
                name = call.arguments["skillId"].removesuffix("_workspace")
                result = (skills_dir / name / "SKILL.md").read_text()
            else:
                done = subprocess.run(call.arguments["command"], shell=True, capture_output=True, text=True, timeout=30)
                result = f"exit code {done.returncode}\n{done.stdout}{done.stderr}"
            conversation.append(Message.tool_result(call, result))
    raise AssertionError("the demo model did not finish within 6 steps")


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
async def test_chooses_loads_runs_and_summarises(skills_dir: Path, catalog_format: CatalogFormat) -> None:
    prompt = system_prompt(skills_dir, catalog_format=catalog_format)
    conversation = [prompt, Message.user("What's the weather forecast in Oslo?")]
    reply = await run_turn(DemoModel(), conversation, [LOAD, SHELL], skills_dir)
    load_call = conversation[2].tool_calls[0]
    assert (load_call.name, load_call.arguments) == ("load_skill_through_path", {"skillId": "weather-report_workspace"})
    shell_call = conversation[4].tool_calls[0]
    assert shell_call.arguments["command"] == (
        f"python3 {skills_dir}/weather-report/scripts/forecast.py --city 'What'\"'\"'s the weather forecast in Oslo?'"
    )
    assert "Used the weather-report skill" in reply.message.content
    assert "forecast for What's the weather forecast in Oslo? : sunny, 21 C" in reply.message.content
    assert reply.usage.input_tokens > 0


async def test_skill_without_script_is_summarised_after_loading(skills_dir: Path) -> None:
    conversation = [system_prompt(skills_dir), Message.user("Make notes from this meeting transcript")]
    reply = await run_turn(DemoModel(), conversation, [LOAD, SHELL], skills_dir)
    assert conversation[2].tool_calls[0].arguments == {"skillId": "meeting-notes_workspace"}
    assert reply.message.content.startswith("Skill meeting-notes: Summarise the transcript")


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
async def test_without_a_match_it_answers_plainly(skills_dir: Path, catalog_format: CatalogFormat) -> None:
    prompt = system_prompt(skills_dir, catalog_format=catalog_format)
    reply = await DemoModel().complete([prompt, Message.user("Tell me a joke")], [LOAD, SHELL])
    assert reply.message.tool_calls == ()
    assert reply.message.content == (
        "None of my skills fits that request. Skills I can use: meeting-notes, weather-report."
    )


async def test_without_skills_it_says_so() -> None:
    reply = await DemoModel().complete([Message.user("weather?")], [LOAD, SHELL])
    assert reply.message.content.startswith("I have no skills available")


async def test_without_a_shell_tool_it_summarises_instead_of_running(skills_dir: Path) -> None:
    conversation = [system_prompt(skills_dir), Message.user("weather in Rome")]
    reply = await run_turn(DemoModel(), conversation, [LOAD], skills_dir)
    assert [c.name for m in conversation for c in m.tool_calls] == ["load_skill_through_path"]
    assert reply.message.content == "Skill weather-report: Print the forecast:"


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
async def test_without_files_root_it_does_not_run_scripts(skills_dir: Path, catalog_format: CatalogFormat) -> None:
    prompt = system_prompt(skills_dir, roots=False, catalog_format=catalog_format)
    conversation = [prompt, Message.user("weather in Rome")]
    await run_turn(DemoModel(), conversation, [LOAD, SHELL], skills_dir)
    assert [c.name for m in conversation for c in m.tool_calls] == ["load_skill_through_path"]


async def test_without_the_load_tool_it_only_names_the_skill(skills_dir: Path) -> None:
    reply = await DemoModel().complete([system_prompt(skills_dir), Message.user("weather in Rome")], [SHELL])
    assert reply.message.tool_calls == ()
    assert reply.message.content.startswith("The skill weather-report fits")


async def test_a_repeat_load_answered_with_a_note_reuses_the_earlier_load(skills_dir: Path) -> None:
    model = DemoModel()
    conversation = [system_prompt(skills_dir), Message.user("weather in Oslo")]
    await run_turn(model, conversation, [LOAD, SHELL], skills_dir)
    conversation.append(Message.user("and the weather in Rome?"))
    reply = await model.complete(conversation, [LOAD, SHELL])
    (load,) = reply.message.tool_calls
    assert load.id not in {c.id for m in conversation for c in m.tool_calls}
    conversation += [reply.message, Message.tool_result(load, "weather-report is already loaded.")]
    reply = await model.complete(conversation, [LOAD, SHELL])
    (shell,) = reply.message.tool_calls
    assert shell.arguments["command"].endswith("--city 'and the weather in Rome?'")


async def test_explicit_invocation_runs_the_skill_without_loading(skills_dir: Path) -> None:
    root = skills_dir / "weather-report"
    body = WEATHER_MD.replace("<city>", "&lt;city&gt;")
    invoked = f'<skill name="weather-report" location="{root}">\n{body}\n</skill>\nLisbon'
    conversation = [Message.system("You are helpful."), Message.user(invoked)]
    reply = await run_turn(DemoModel(), conversation, [LOAD, SHELL], skills_dir)
    (shell,) = conversation[2].tool_calls
    assert shell.arguments["command"] == f"python3 {root}/scripts/forecast.py --city Lisbon"
    assert "forecast for Lisbon : sunny, 21 C" in reply.message.content


async def test_command_in_a_code_block_wins_over_prose(skills_dir: Path, tmp_path: Path) -> None:
    body = (
        "---\nname: tool\ndescription: d\n---\nThe helper scripts/old.sh is deprecated.\n\n"
        "Run `bash {files-root}/scripts/new.sh --fast` to build.\n"
    )
    root = write_skill(tmp_path / "more", "builder", body, {"new.sh": "echo built fast\n"})
    conversation = [
        Message.system(catalog([("builder", "Build the project", root)])),
        Message.user("build the project"),
    ]
    reply = await run_turn(DemoModel(), conversation, [LOAD, SHELL], tmp_path / "more")
    assert conversation[4].tool_calls[0].arguments["command"] == (f"bash {root}/scripts/new.sh --fast")
    assert "built fast" in reply.message.content


async def test_replies_depend_only_on_the_conversation(skills_dir: Path) -> None:
    conversation = [system_prompt(skills_dir), Message.user("forecast for Paris")]
    first = await DemoModel().complete(conversation, [LOAD, SHELL])
    second = await DemoModel().complete(conversation, [LOAD, SHELL])
    assert first == second


async def test_open_model_demo() -> None:
    async with open_model("demo") as model:
        assert isinstance(model, DemoModel)
        assert model.name == "demo"

"""Give an OpenAI Agents SDK ``Agent`` the harness's skills, resolved per run for the run's user.

The harness merges a market (here the ``examples/skills`` folder, served as a directory market)
with each user's own skills; ``OpenAIAgentsSkills`` turns that into dynamic instructions and
function tools for a plain ``Agent``. The user comes from the run's context
(``Runner.run(..., context=RuntimeContext(user_id=...))``): alice sees the market's skills, bob
also sees his private ``bob-diary`` skill, and neither can load the other's.

The model is the SDK's own scripted test model, so the example runs offline: it loads the
``hello-world`` skill, runs its script from the files-root the catalog names and replies with
the script's line. Swap in a real model (``model="gpt-5-mini"`` with ``OPENAI_API_KEY``) and
the rest stays the same. Needs ``pip install 'agent-skill-harness[openai-agents]'``. Run::

    python examples/openai_agents_skills.py [WORKDIR]
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from _two_users import open_harness, print_what_each_user_sees
from _workdir import run_in_workdir
from agents import Agent, RunConfig, Runner
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from harness import RuntimeContext
from harness.adapters.openai_agents import OpenAIAgentsSkills


def run_greeting(call: ModelCall) -> list[Any]:
    """What a real model does after reading SKILL.md: run the script under the files-root."""
    root = re.search(r"<skill-id>hello-world_[^<]*</skill-id>\n<files-root>([^<]*)<", call.system_instructions or "")
    command = f'python3 {root[1] if root else "."}/scripts/greet.py "Alice"'
    return [function_call("execute_shell_command", {"command": command}, call_id="greet")]


def reply_with_output(call: ModelCall) -> list[Any]:
    output = next(item["output"] for item in reversed(call.input) if item.get("type") == "function_call_output")
    return [assistant_message(output.splitlines()[-1])]


def offline_model() -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("load_skill_through_path", {"skillId": "hello-world"}, call_id="load")],
            ModelStep.respond(run_greeting),
            ModelStep.respond(reply_with_output),
        ]
    )


async def main(workdir: Path) -> None:
    async with open_harness(workdir) as harness:
        skills = OpenAIAgentsSkills(harness)
        model = offline_model()
        agent = Agent(
            name="assistant", instructions=skills.instructions("You are terse."), tools=skills.tools(), model=model
        )
        offline = RunConfig(tracing_disabled=True)  # nothing leaves the machine
        result = await Runner.run(
            agent, "Greet me, I am Alice.", context=RuntimeContext(user_id="alice"), run_config=offline
        )
        print(f"alice's reply: {result.final_output}")
        await print_what_each_user_sees(harness)


if __name__ == "__main__":
    run_in_workdir(main)

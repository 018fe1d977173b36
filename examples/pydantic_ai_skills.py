"""Give a pydantic-ai ``Agent`` the harness's skills, resolved per run from the run's ``deps``.

``SkillsToolset`` is a pydantic-ai toolset: when a run starts it runs the harness's pipeline
for the user its ``deps`` name and offers that user's skill catalog (as instructions) and the
harness's skill tools for the whole run. The market is the ``examples/skills`` folder; bob
also owns a private ``bob-diary`` skill that alice never sees.

The model is pydantic-ai's ``FunctionModel`` so the example runs offline: it loads the
``hello-world`` skill, runs its script from the files-root the catalog names and replies with
the script's line. Swap in a real model (``Agent("openai:gpt-5-mini", ...)``) and the rest stays
the same. Needs ``pip install 'agent-skill-harness[pydantic-ai]'``. Run::

    python examples/pydantic_ai_skills.py [WORKDIR]
"""

from __future__ import annotations

import re
from pathlib import Path

from _two_users import open_harness, print_what_each_user_sees
from _workdir import run_in_workdir
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from harness import RuntimeContext
from harness.adapters.pydantic_ai import SkillsToolset


def offline_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Load the skill, run its script, then reply with the script's output."""
    returned = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
    if not returned:
        return ModelResponse(parts=[ToolCallPart("load_skill_through_path", {"skillId": "hello-world"})])
    if len(returned) == 1:
        root = re.search(r"<skill-id>hello-world_[^<]*</skill-id>\n<files-root>([^<]*)<", info.instructions or "")
        command = f'python3 {root[1] if root else "."}/scripts/greet.py "Alice"'
        return ModelResponse(parts=[ToolCallPart("execute_shell_command", {"command": command})])
    return ModelResponse(parts=[TextPart(str(returned[-1].content).splitlines()[-1])])


async def main(workdir: Path) -> None:
    async with open_harness(workdir) as harness:
        skills = SkillsToolset(harness)
        agent = Agent(FunctionModel(offline_model), deps_type=RuntimeContext, toolsets=[skills])
        result = await agent.run("Greet me, I am Alice.", deps=RuntimeContext(user_id="alice"))
        print(f"alice's reply: {result.output}")
        await print_what_each_user_sees(harness)


if __name__ == "__main__":
    run_in_workdir(main)

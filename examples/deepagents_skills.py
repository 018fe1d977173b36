"""Serve one user's merged skills to a LangChain deep agent through a read-only backend.

``SkillsBackend`` implements deepagents' backend protocol over the skills the harness gives one
user (here the ``examples/skills`` folder as a market, plus bob's private ``bob-diary``).
Routed under ``/skills/`` of a ``CompositeBackend`` and named as the skills source,
deepagents' ``SkillsMiddleware`` lists them in the system prompt and the agent's file tools
read them; writes are refused.

The model is a scripted stand-in built on langchain_core's fake chat model so the example runs
offline: it reads ``/skills/hello-world/SKILL.md``, tries to overwrite it, and stops. Swap in a
real chat model (``create_deep_agent(model="openai:gpt-5-mini", ...)``) and the rest stays the
same. Needs ``pip install 'agent-skill-harness[deepagents]'``. Run::

    python examples/deepagents_skills.py [WORKDIR]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _two_users import open_harness
from _workdir import run_in_workdir
from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage

from harness import RuntimeContext
from harness.adapters.deepagents import SkillsBackend

SKILL_MD = "/skills/hello-world/SKILL.md"


class OfflineChatModel(GenericFakeChatModel):
    """Replies from a fixed list; accepts the agent's tools as a real chat model would."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OfflineChatModel:
        return self


def tool_call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


async def main(workdir: Path) -> None:
    async with open_harness(workdir) as harness:
        for user in ("alice", "bob"):
            listing = await SkillsBackend(harness, RuntimeContext(user_id=user)).als("/")
            print(f"{user} sees: {', '.join(e['path'].strip('/') for e in listing.entries or [])}")

        skills = SkillsBackend(harness, RuntimeContext(user_id="alice"))
        backend = CompositeBackend(default=StateBackend(), routes={"/skills/": skills})
        model = OfflineChatModel(
            messages=iter(
                [
                    tool_call("read_file", file_path=SKILL_MD),
                    tool_call("write_file", file_path=SKILL_MD, content="overwritten"),
                    AIMessage(content="I read the hello-world skill."),
                ]
            )
        )
        agent = create_deep_agent(model=model, backend=backend, skills=["/skills/"])
        state = await agent.ainvoke({"messages": [{"role": "user", "content": "Greet me, I am Alice."}]})
        read, write = (str(m.content) for m in state["messages"] if isinstance(m, ToolMessage))
        print(f"alice read {SKILL_MD}: {next(line for line in read.splitlines() if '# Hello world' in line).strip()}")
        print(f"alice's write was refused: {write}")
        print(f"reply: {state['messages'][-1].content}")


if __name__ == "__main__":
    run_in_workdir(main)

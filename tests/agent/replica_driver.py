"""One replica of an agent, as its own process, for the multi-replica tests.

``python tests/agent/replica_driver.py STORE WORKSPACE USER SESSION turn MESSAGE [KEY]`` runs one
turn (with the idempotency key ``KEY``, if given) and prints ``{"reply": ..., "approvals": [...],
"replayed": ...}``; ``... resolve APPROVAL_ID`` approves a paused call and resumes the run,
printing the same. The model answers ``seen: <every user message of the conversation, joined by
|>``; a message ``hold X`` first calls the tool ``hold``, which writes ``held-X`` in the
workspace, adds a line to ``held-X.log`` and waits for a file ``release`` there; a message
``touch NAME`` first runs ``touch NAME`` in the shell, which the approval policy asks about.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import anyio

from harness import RuntimeContext
from harness.agent import ControlOptions, Harness, PatternPolicy, PipelineOptions, RunResult
from harness.models import Message, Model, ToolCall
from harness.models.base import ModelReply, ToolSpec, Usage
from harness.tools import tool


class Recall(Model):
    """Answers with the user messages it was shown; ``hold`` / ``touch`` first call a tool."""

    def __init__(self) -> None:
        super().__init__(name="recall")

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        last = messages[-1]
        if last.role == "user" and last.content.startswith(("hold ", "touch ")):
            verb, _, what = last.content.partition(" ")
            if verb == "hold":
                call = ToolCall(id=f"hold-{what}", name="hold", arguments={"name": what})
            else:
                call = ToolCall(
                    id=f"touch-{what}", name="execute_shell_command", arguments={"command": f"touch {what}"}
                )
            return ModelReply(message=Message.assistant("", [call]), usage=Usage())
        seen = "|".join(m.content for m in messages if m.role == "user")
        return ModelReply(message=Message.assistant(f"seen: {seen}"), usage=Usage())


async def main(
    store: str, workspace: Path, user: str, session: str, command: str, argument: str, key: str | None
) -> None:
    @tool
    async def hold(name: str) -> str:
        """Hold the turn until the test releases it."""
        with (workspace / f"held-{name}.log").open("a", encoding="utf-8") as log:
            log.write("held\n")
        (workspace / f"held-{name}").write_text("", encoding="utf-8")
        while not (workspace / "release").exists():
            await anyio.sleep(0.02)
        return f"held {name}"

    context = RuntimeContext(user_id=user, session_id=session)
    async with Harness(
        model=Recall(),
        workspace=workspace,
        sessions=store,
        tools=[hold],
        pipeline=PipelineOptions(watch=False),
        control=ControlOptions(approval=PatternPolicy([], default="ask")),
    ) as agent:
        result: RunResult
        if command == "turn":
            result = await agent.run(argument, context=context, idempotency_key=key)
        else:
            await agent.resolve_approval(argument, approved=True, context=context, reviewer="ops")
            result = await agent.resume(context=context)
    approvals = [a.approval_id for a in result.approvals]
    print(json.dumps({"reply": result.reply, "approvals": approvals, "replayed": result.replayed}), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # stderr: what the test waits for
    store, workspace, user, session, command, argument = sys.argv[1:7]
    key = sys.argv[7] if len(sys.argv) > 7 else None
    anyio.run(main, store, Path(workspace), user, session, command, argument, key)

"""``harness chat``: a conversation on the terminal, one turn per line.

The reply of each turn streams as the model writes it. Ctrl-C (SIGINT) cancels the turn in
progress, which then leaves nothing in the conversation (a turn is stored whole when it ends);
at the prompt it only reminds how to leave. Ctrl-D (the end of the input) exits.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import cast

import anyio

from harness.agent import Harness
from harness.context import RuntimeContext
from harness.events import ApprovalDecided, EnvironmentWaited, Event, RunFinished, ShellRan, SkillLoaded, ToolCalled
from harness.models import TextDelta
from harness.terminal import echo, escape_control, escape_line

__all__ = ["PROMPT", "chat"]

#: What the chat writes before reading a line.
PROMPT = "you> "


async def chat(agent: Harness, context: RuntimeContext, *, verbose: bool = False) -> int:
    """Run the conversation of ``context`` with ``agent`` on stdin and stdout until the end of
    the input; returns the exit code."""
    echo(
        f"chatting with {agent.name} as {context.user_id}, session {context.session_id}; "
        "Ctrl-C cancels a turn, Ctrl-D exits",
        file=sys.stderr,
    )
    turns: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as group:
        with anyio.open_signal_receiver(signal.SIGINT) as interrupts:

            async def interrupt() -> None:
                async for _ in interrupts:
                    if turns:
                        turns[-1].cancel()
                    else:
                        echo("\n(Ctrl-D exits)", file=sys.stderr)
                        _prompt()

            group.start_soon(interrupt)
            while True:
                _prompt()
                line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
                if not line:
                    break
                text = line.strip()
                if not text:
                    continue
                with anyio.CancelScope() as scope:
                    turns.append(scope)
                    try:
                        await _turn(agent, text, context, verbose=verbose)
                    finally:
                        turns.remove(scope)
                if scope.cancelled_caught:
                    echo("\n[turn cancelled]", file=sys.stderr)
            group.cancel_scope.cancel()
    echo(file=sys.stdout)
    return 0


def _prompt() -> None:
    sys.stdout.write(PROMPT)
    sys.stdout.flush()


async def _turn(agent: Harness, text: str, context: RuntimeContext, *, verbose: bool) -> None:
    """One turn: its reply's pieces as they come, and what it did when ``verbose``."""
    streamed = False
    stream = cast(AsyncGenerator[Event, None], agent.stream(text, context=context))  # closed when cancelled
    async with aclosing(stream) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                sys.stdout.write(escape_control(event.text))
                sys.stdout.flush()
                streamed = True
            elif verbose and isinstance(event, (ToolCalled, SkillLoaded, EnvironmentWaited, ShellRan, ApprovalDecided)):
                echo("\n" + escape_line(f"[{type(event).__name__}] {event}"), file=sys.stderr)
            elif isinstance(event, RunFinished) and not streamed:
                echo(event.reply, end="")
    echo()

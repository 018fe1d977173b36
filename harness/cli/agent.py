"""``harness run`` (one turn against a configured model), ``harness chat`` (an interactive
conversation) and ``harness demo`` (offline)."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from harness.cli.common import (
    JSON_OPTION,
    SESSION_OPTIONS,
    WORKSPACE_OPTIONS,
    context_from_args,
    harness_from_args,
    print_json,
)
from harness.events import ApprovalDecided, EnvironmentWaited, RunFinished, ShellRan, SkillLoaded, ToolCalled
from harness.terminal import echo, escape_line

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``run``, ``chat`` and ``demo``."""
    run = sub.add_parser(
        "run",
        parents=[WORKSPACE_OPTIONS, SESSION_OPTIONS, JSON_OPTION],
        help="run one turn of the agent",
        description="Run one turn as --user (default cli) and print the reply. When harness.yaml has an "
        "approval policy, the calls it asks about are put to you on the terminal (y/N on stdin). The turn "
        "writes to the workspace (./workspace unless --workspace or --config says otherwise): a folder that "
        "does not exist yet is created, and the command says so on stderr.",
    )
    run.add_argument("message", help="what the user says")
    run.add_argument(
        "--session",
        metavar="ID",
        help="the conversation to continue (default: default); it is kept where the config's sessions say, "
        "or --sessions",
    )
    run.add_argument("--model", help="e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, demo (default from config)")
    run.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="a key unique to this message: a script that runs the command again after a failure gets the reply "
        "already stored for KEY (the model does not run again, the turn is stored once); the same KEY with "
        "another message is an error",
    )
    run.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print tool calls, skill loads and approval decisions (--json always lists them)",
    )
    run.set_defaults(handler=_run)

    chat = sub.add_parser(
        "chat",
        parents=[WORKSPACE_OPTIONS, SESSION_OPTIONS],
        help="talk with the agent, one turn per line",
        description="An interactive conversation as --user (default cli) in --session (default chat): each line "
        "you type is a turn, its reply streams as the model writes it, and /skill:NAME invokes a skill. Ctrl-C "
        "cancels the turn in progress (the conversation keeps only finished turns); Ctrl-D (end of input) exits. "
        "Calls an approval policy asks about are put to you as in harness run.",
    )
    chat.add_argument("--session", metavar="ID", default="chat", help="the conversation to continue (default: chat)")
    chat.add_argument("--model", help="the model (default from config)")
    chat.add_argument("--verbose", "-v", action="store_true", help="print tool calls, skill loads and approvals")
    chat.set_defaults(handler=lambda args: anyio.run(_chat, args))

    demo = sub.add_parser(
        "demo",
        help="build a demo workspace and run offline turns for two users",
        description="Builds a global dir, a git market, the package market, workspace skills and two users, "
        "then runs turns with the offline demo model.",
    )
    demo.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=Path("demo-workspace"),
        help="where to build the demo (default ./demo-workspace)",
    )
    demo.set_defaults(handler=lambda args: anyio.run(_demo, args.directory))


def _run(args: argparse.Namespace) -> int:
    async def main() -> int:
        from harness.approval import StdinApprover  # the commands that build no agent never load approval

        overrides: dict[str, object] = {"model": args.model} if args.model else {}
        overrides["approver"] = StdinApprover()  # the policy's "ask" is a question on the terminal
        async with harness_from_args(args, **overrides) as agent:
            context = context_from_args(args)
            reply, seen = "", []
            async for event in agent.stream(args.message, context=context, idempotency_key=args.idempotency_key):
                if isinstance(event, (ToolCalled, SkillLoaded, EnvironmentWaited, ShellRan, ApprovalDecided)):
                    seen.append({"type": type(event).__name__, "event": str(event)})
                    if args.verbose and not args.json:
                        echo(escape_line(f"[{type(event).__name__}] {event}"))
                if isinstance(event, RunFinished):
                    reply = event.reply
        if args.json:
            print_json({"user": context.user_id, "reply": reply, "events": seen})
        else:
            echo(reply)
        return 0

    return anyio.run(main)


async def _chat(args: argparse.Namespace) -> int:
    from harness.approval import StdinApprover
    from harness.cli.chat import chat

    overrides: dict[str, object] = {"model": args.model} if args.model else {}
    overrides["approver"] = StdinApprover()
    async with harness_from_args(args, **overrides) as agent:
        return await chat(agent, context_from_args(args), verbose=args.verbose)


async def _demo(directory: Path) -> int:
    from harness.cli.demo import command_name, run_demo

    return await run_demo(directory, command=command_name())

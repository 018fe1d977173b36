"""``harness mcp serve``: one user's merged skills over MCP (stdio, or streamable HTTP with tokens).

The MCP SDK is an optional extra: it is imported when the command runs, so the rest of the CLI
works without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from filesystems import AbstractFilesystem
from harness.cli.common import WORKSPACE_OPTIONS, config_from_args, context_from_args
from harness.errors import ConfigError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` command group."""
    parser = sub.add_parser("mcp", help="serve skills over the Model Context Protocol")
    commands = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        parents=[WORKSPACE_OPTIONS],
        help="serve a user's merged skills over MCP (stdio or streamable HTTP)",
        description="Serve merged skills over MCP with the Skills extension (skills/list, skills/get, "
        "skill:// resources, directory reads), the load_skill and read_skill_resource tools and one prompt "
        "per user-invocable skill. On stdio (the default) it serves --user, which is required there (a host "
        "configuration names whose skills it gets); with --http it serves the user each bearer token maps to (--tokens FILE and/or HARNESS_MCP_TOKENS) and answers 401 without one; --stateless lets several servers share one load balancer.",
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    serve.add_argument(
        "--tokens", type=Path, metavar="FILE", help="YAML mapping of user ids to bearer tokens (default: mcp_tokens)"
    )
    serve.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="with --http, keep no MCP session between requests: any replica answers any request, so several "
        "servers over one workspace or store can sit behind a load balancer without session affinity; the "
        "session bounds then bound each user's requests in flight (default: mcp_stateless in harness.yaml, else off)",
    )
    serve.add_argument(
        "--max-sessions-per-user",
        type=int,
        default=16,
        metavar="N",
        help="HTTP sessions one token's user may hold open; past it their longest-idle session is closed; with "
        "--stateless, requests one user may have in flight (default 16)",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=1000,
        metavar="N",
        help="HTTP sessions open in all; past it the longest-idle session of the user holding the most is "
        "closed; with --stateless, requests in flight in all (default 1000)",
    )
    serve.add_argument(
        "--allow-shell",
        action="store_true",
        help="also offer the execute_shell_command tool in the user's workspace (off by default); every command "
        "is decided by the approval: block of harness.yaml (all allowed without one) and recorded in the audit log",
    )
    serve.add_argument(
        "--trust-local-shell",
        action="store_true",
        help="with --http and --allow-shell, serve a host shell (a filesystem mode that isolates nothing) to "
        "several users: each token holder's commands can then read and change every other user's area",
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        from harness.agent import AllowAll, Harness
        from harness.mcp import SessionLimits, SkillServer, TokenMap
    except ImportError as exc:  # harness.mcp's message names the extra to install
        print(f"harness: error: {exc}", file=sys.stderr)
        return 1
    if args.http and args.user:
        raise ConfigError("--user is for stdio; over HTTP each token's user is served (see --tokens)")
    if not args.http and not args.user:
        raise ConfigError(
            "harness mcp serve over stdio needs --user ID: the user whose merged skills the host gets "
            "(e.g. harness mcp serve --user alice); over HTTP, --http serves each token's user"
        )
    config = config_from_args(args)
    stateless = config.mcp_stateless if args.stateless is None else args.stateless
    if args.stateless and not args.http:
        raise ConfigError("--stateless is for --http: over stdio one client holds the server's one connection")
    tokens = TokenMap.load(args.tokens or config.mcp_tokens) if args.http else None
    if tokens is not None and not tokens:
        raise ConfigError(
            "--http needs a token mapping (--tokens FILE, mcp_tokens in harness.yaml or HARNESS_MCP_TOKENS): "
            "no token, no skills"
        )
    user = None if args.http else context_from_args(args).user_id
    filesystem = config.open_filesystem()
    if args.allow_shell and tokens is not None:
        _check_shared_shell(
            filesystem, config.filesystem, len(set(tokens.users.values())), trusted=args.trust_local_shell
        )
    approval = (config.approval or AllowAll()) if args.allow_shell else config.approval
    try:
        sessions = SessionLimits(per_principal=args.max_sessions_per_user, total=args.max_sessions)
    except ValueError as exc:
        raise ConfigError(f"--max-sessions-per-user / --max-sessions: {exc}") from None

    async def main() -> None:
        async with Harness.from_config(config, model="demo", filesystem=filesystem, approval=approval) as agent:
            server = SkillServer(agent.pipeline, shell=agent.tools_for if args.allow_shell else None)
            if tokens is not None:
                how = " (stateless)" if stateless else ""
                print(f"harness: serving MCP on http://{args.host}:{args.port}/mcp{how}", file=sys.stderr, flush=True)
                await server.serve_http(tokens, host=args.host, port=args.port, sessions=sessions, stateless=stateless)
            else:
                assert user is not None
                await server.serve_stdio(user)

    anyio.run(main)
    return 0


def _check_shared_shell(filesystem: AbstractFilesystem, mode: str, principals: int, *, trusted: bool) -> None:
    """Refuse to serve one shell to several users of a filesystem that does not keep them apart,
    unless the operator said ``--trust-local-shell`` (then warn, loudly, on every start)."""
    if principals < 2 or filesystem.shell_isolated:
        return
    if not trusted:
        raise ConfigError(
            f"--allow-shell over HTTP would give {principals} users one shell in filesystem mode {mode!r}, which "
            "does not isolate them: any token holder could read and change the others' areas (cat ../<user>/...). "
            "Use filesystem mode 'sandbox', or serve one user per server (stdio, or a token file with one user), "
            "or pass --trust-local-shell if every token holder may see everything this host account can"
        )
    print(
        f"harness: WARNING: --trust-local-shell: {principals} users share a host shell (filesystem mode {mode!r}); "
        "each of them can read and change every other user's area and whatever this host account can reach",
        file=sys.stderr,
        flush=True,
    )

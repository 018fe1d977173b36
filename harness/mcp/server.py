"""``harness mcp serve``: one user's merged skills over MCP, stdio or streamable HTTP.

The server implements the MCP Skills extension on the SDK's low-level :class:`mcp.server.Server`
(the SDK ships no types for it; its extension hooks add methods, which is what this does):

- **capability**: ``capabilities.extensions["io.modelcontextprotocol/skills"] = {"directoryRead": true}``
  next to ``resources``, ``tools`` and ``prompts``. A client that negotiates a revision before
  2026-07-28 (the ``initialize`` handshake) has no ``extensions`` field in its schema, so the same
  entry is also given there under ``capabilities.experimental``, the field those revisions keep
  for capabilities outside the base protocol; the methods answer the same on every revision.
- **``serverInfo``**: ``{"name": "agent-skill-harness", "version": harness.__version__}``.
- **``skills/list``** (params ``{cursor?}``) → ``{"skills": [Skill...], "nextCursor"?, "ttlMs": 0,
  "cacheScope": "private"}``, ``page_size`` skills a page (the cursor is the next position). A ``Skill`` is ``{"uri": "skill://<path>/SKILL.md",
  "frontmatter": {...verbatim...}, "resources": [{"uri", "digest": "sha256:<hex>", "size"}...]}``
  (``"resources": "dynamic"`` for a skill that reached the harness as dynamic content).
  Skills the extension does not allow are left out and named with the reason in
  ``_meta["agent-skill-harness/omitted"]: [{"uri", "reason"}]``: those over its limits (512
  files, 16 MiB per skill), and those whose frontmatter ``name`` is missing or breaks the Agent
  Skills naming rules (the URI's last segment must be that name).
- **``skills/get``** (params ``{uri}``, the SKILL.md URI) → ``{"skill": Skill, "ttlMs": 0,
  "cacheScope": "private"}``; an unknown or left-out skill is error -32602 saying why (so are
  ``resources/read`` and ``resources/directory/read`` of a left-out skill's files).
- **``resources/read``** of ``skill://<path>/<file>`` → the file as text (UTF-8) or a base64 blob;
  ``resources/list`` lists each skill's SKILL.md.
- **``resources/directory/read``** (params ``{uri, cursor?}``) of ``skill://<path>`` or a folder of
  it → ``{"resources": [{"uri", "name", "mimeType"}...]}``, folders as ``inode/directory``.
- **tools**, for clients without the extension: ``load_skill(name)`` (SKILL.md, paged, plus the
  list of the skill's files) and ``read_skill_resource(skill_name, path, offset?, limit?)``; the
  shell tool ``execute_shell_command`` only when the operator allows it: the server is given an
  agent's tools (``Harness.tools_for``), so the shell it offers is behind that agent's approval
  policy and audit log, and ``{skill_root}`` stands for any skill served to the user but their own.
- **prompts**: one per user-invocable skill, named for it; its arguments are the skill's
  ``arguments:`` names, else one free-text ``arguments``; ``$ARGUMENTS`` and friends are filled in
  as a ``/skill:`` command would, the arguments kept exactly as given
  (:func:`harness.tools.skill_text.render_invoked_skill`).

Every request runs :meth:`SkillPipeline.prepare` for its user, so an edit shows on the next
request and a warm request reads nothing (the pipeline's cached views and the manifest cache
of :class:`~harness.mcp.catalog.SkillCatalog`). Results carry ``ttlMs: 0`` so clients do not
cache them past an edit.

Who the user is: on stdio the operator names one (``--user``); over HTTP it is the principal of
the bearer token (:class:`~harness.mcp.tokens.TokenMap`); the SDK's bearer middleware answers
401 to a request without a known token, and a request that somehow has no principal sees no
skills at all. Each user holds a bounded number of sessions (:mod:`harness.mcp.sessions`), or,
served stateless for replicas behind a load balancer, a bounded number of requests in flight;
nothing this server answers depends on an earlier request reaching the same process.
"""

from __future__ import annotations

import base64
import importlib.metadata
import logging
import shlex
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol
from xml.sax.saxutils import quoteattr

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from harness.context import RuntimeContext
from harness.errors import SkillNotFound
from harness.mcp.catalog import EXTENSION, SCHEME, SkillCatalog
from harness.mcp.cursors import CursorSigner, position
from harness.mcp.errors import McpServerError, SkillRequestError
from harness.mcp.health import Health
from harness.mcp.sessions import SessionLimits, session_app
from harness.mcp.tokens import TokenMap
from harness.pipeline import ResolvedSkill, SkillPipeline, TurnPlan
from harness.pipeline.catalog import SHELL_TOOL
from harness.skills.arguments import ArgumentsTooLarge, argument_hint, argument_names, user_invocable
from harness.tools import Tool, looks_binary, tool_from_function
from harness.tools.skill_text import render_invoked_skill
from harness.tools.skills import render_skill_file

__all__ = ["OMITTED_META", "SkillServer", "ToolSource"]

log = logging.getLogger(__name__)

#: ``_meta`` key of ``skills/list`` naming the skills left out and why.
OMITTED_META = "agent-skill-harness/omitted"


def _version() -> str:
    """The installed distribution's version (the same lookup as ``harness.__version__``, which
    this part, on a lower floor, does not import)."""
    try:
        return importlib.metadata.version("agent-skill-harness")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


#: How many (skill, reason) pairs the server remembers having logged.
_REPORTED = 4096

_Principal = Callable[[ServerRequestContext[Any, Any]], str | None]


class _UriParams(types.RequestParams):
    uri: str


class _DirectoryParams(types.RequestParams):
    uri: str
    cursor: str | None = None


class ToolSource(Protocol):
    """An agent's tools for one plan, put together behind its approval gate
    (:meth:`harness.agent.Harness.tools_for`): ``only`` names the tools wanted, ``current``
    the skills ``{skill_root}`` may stand for."""

    def __call__(
        self, plan: TurnPlan, *, only: Collection[str] | None = None, current: Iterable[ResolvedSkill] = ()
    ) -> list[Tool]: ...


def _no_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    return None


def _bearer_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The user of the request's verified bearer token (set by the SDK's auth middleware)."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


class _TokenVerifier:
    """The SDK's ``TokenVerifier`` over a :class:`TokenMap`: the token's user is its client id."""

    def __init__(self, tokens: TokenMap) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        user = self.tokens.user_for(token)
        return None if user is None else AccessToken(token=token, client_id=user, scopes=[], subject=user)


class _SkillsServer(Server[Any]):
    """The SDK's server, also naming its extensions under ``capabilities.experimental`` in the
    ``initialize`` result: revisions before 2026-07-28 have no ``extensions`` field, and the SDK
    drops it from what such a client receives."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The ``initialize`` result's options (see the class docstring)."""
        given = self.extensions if extensions is None else extensions
        experimental = {**given, **(experimental_capabilities or {})}
        return super().create_initialization_options(notification_options, experimental, extensions)


def _invalid(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message)


class SkillServer:
    """An MCP server over a :class:`SkillPipeline`, serving each request's user their merged skills.

    Serve it once, over one transport: :meth:`serve_stdio` for one named user, or
    :meth:`http_app` / :meth:`serve_http` for the users of a token mapping. ``shell`` offers the
    shell tool of an agent over the same pipeline (``shell=agent.tools_for``): the server never
    builds a shell of its own, so every command passes that agent's approval gate.
    """

    def __init__(
        self,
        pipeline: SkillPipeline,
        *,
        shell: ToolSource | None = None,
        page_size: int = 100,
        name: str = "agent-skill-harness",
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.pipeline = pipeline
        self.page_size = page_size
        self.shell = shell
        self.allow_shell = shell is not None
        self.catalog = SkillCatalog()
        self.cursors = CursorSigner(pipeline.filesystem)
        self._principal: _Principal = _no_principal
        self._reported: set[tuple[str, str]] = set()
        self.server: Server[Any] = _SkillsServer(
            name,
            version=_version(),
            instructions="Agent skills: list them with skills/list (or the load_skill tool), read their "
            f"files as {SCHEME}<skill>/<path> resources (or read_skill_resource).",
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )
        self.server.extensions[EXTENSION] = {"directoryRead": True}
        self.server.add_request_handler("skills/list", types.PaginatedRequestParams, self._skills_list)
        self.server.add_request_handler("skills/get", _UriParams, self._skills_get)
        self.server.add_request_handler("resources/directory/read", _DirectoryParams, self._directory_read)

    # -- transports --------------------------------------------------------------------------

    def bind_user(self, user: str) -> None:
        """Serve ``user``'s skills to every request (stdio, or an in-process client)."""
        RuntimeContext(user_id=user)  # refuse a bad id before serving anything
        self._principal = lambda ctx: user

    async def serve_stdio(self, user: str) -> None:
        """Serve ``user``'s skills over this process's stdin and stdout until the client leaves."""
        self.bind_user(user)
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(
        self,
        tokens: TokenMap,
        *,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        sessions: SessionLimits | None = None,
        stateless: bool = False,
    ) -> Starlette:
        """The streamable HTTP app (an ASGI app for any server) whose users are ``tokens``'
        principals, each holding at most ``sessions.per_principal`` sessions, or with
        ``stateless`` none at all (each request stands alone, so replicas need no session
        affinity) and at most that many requests in flight (see :mod:`harness.mcp.sessions`).
        ``GET /healthz`` and ``GET /readyz`` answer without a token (:mod:`harness.mcp.health`)."""
        self._principal = _bearer_principal
        return session_app(
            self.server,
            verifier=_TokenVerifier(tokens),
            limits=sessions or SessionLimits(),
            host=host,
            path=path,
            stateless=stateless,
            health=Health(self.pipeline),
        )

    async def serve_http(
        self,
        tokens: TokenMap,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        sessions: SessionLimits | None = None,
        stateless: bool = False,
    ) -> None:
        """Serve :meth:`http_app` with uvicorn until interrupted; raises :class:`McpServerError`
        when it cannot start."""
        import uvicorn

        app = self.http_app(tokens, host=host, sessions=sessions, stateless=stateless)
        try:
            await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()
        except SystemExit as exc:  # uvicorn exits when it cannot start (the port taken, say)
            raise McpServerError(f"cannot serve HTTP on {host}:{port} (uvicorn exit status {exc.code})") from None

    # -- the request's user ------------------------------------------------------------------

    async def _plan(self, ctx: ServerRequestContext[Any, Any]) -> TurnPlan | None:
        user = self._principal(ctx)
        if user is None:
            return None
        return await self.pipeline.prepare(RuntimeContext(user_id=user), stage=self.allow_shell)

    async def _need_plan(self, ctx: ServerRequestContext[Any, Any]) -> TurnPlan:
        plan = await self._plan(ctx)
        if plan is None:
            raise _invalid("no skills are served without an authenticated user")
        return plan

    # -- the Skills extension ----------------------------------------------------------------

    async def _skills_list(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        plan = await self._plan(ctx)
        result: dict[str, Any] = {"skills": [], "ttlMs": 0, "cacheScope": "private"}
        if plan is None:
            return result
        user, start = plan.context.user_id, 0
        if params.cursor:  # the skill the page before ended with (see harness.mcp.cursors)
            try:
                start = position(list(self.catalog.paths(plan).values()), await self.cursors.read(user, params.cursor))
            except SkillRequestError as exc:
                raise _invalid(str(exc)) from None
        listing = await self.catalog.listing(plan, start, self.page_size)
        result["skills"] = list(listing.skills)
        if listing.next is not None:
            last = list(self.catalog.paths(plan).values())[listing.next - 1].skill
            result["nextCursor"] = await self.cursors.give(user, (last.name, last.source))
        if listing.omitted:
            for item in listing.omitted:
                if (item["uri"], item["reason"]) not in self._reported:  # once, not on every request
                    if len(self._reported) >= _REPORTED:  # bounded: forget, and log them again
                        self._reported.clear()
                    self._reported.add((item["uri"], item["reason"]))
                    log.warning("skill %s is not listed: %s", item["uri"], item["reason"])
            result["_meta"] = {OMITTED_META: list(listing.omitted)}
        return result

    async def _skills_get(self, ctx: ServerRequestContext[Any, Any], params: _UriParams) -> dict[str, Any]:
        plan = await self._need_plan(ctx)
        try:
            skill = await self.catalog.get(plan, params.uri)
        except SkillRequestError as exc:
            raise _invalid(str(exc)) from None
        return {"skill": skill, "ttlMs": 0, "cacheScope": "private"}

    async def _directory_read(self, ctx: ServerRequestContext[Any, Any], params: _DirectoryParams) -> dict[str, Any]:
        plan = await self._need_plan(ctx)
        try:
            return {"resources": await self.catalog.directory(plan, params.uri)}
        except SkillRequestError as exc:
            raise _invalid(str(exc)) from None

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        plan = await self._plan(ctx)
        resources = [
            types.Resource(
                uri=f"{SCHEME}{path}/SKILL.md",
                name=resolved.skill.name,
                description=resolved.skill.description,
                mime_type="text/markdown",
            )
            for path, resolved in (self.catalog.paths(plan).items() if plan is not None else ())
            if self.catalog.name_problem(resolved.skill) is None  # a URI cannot carry its name
        ]
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        plan = await self._need_plan(ctx)
        try:
            data, mime = await self.catalog.read(plan, params.uri)
        except SkillRequestError as exc:
            raise _invalid(str(exc)) from None
        except OSError as exc:
            raise _invalid(f"{params.uri} cannot be read: {exc}") from None
        contents: types.TextResourceContents | types.BlobResourceContents
        if looks_binary(data):
            contents = types.BlobResourceContents(uri=params.uri, mime_type=mime, blob=base64.b64encode(data).decode())
        else:
            contents = types.TextResourceContents(uri=params.uri, mime_type=mime, text=data.decode("utf-8"))
        return types.ReadResourceResult(contents=[contents])

    # -- tools -------------------------------------------------------------------------------

    def _tools(self, plan: TurnPlan) -> dict[str, Tool]:
        async def load_skill(name: str) -> str:
            """Load a skill's instructions (its SKILL.md) by name, with the list of its other files.

            Args:
                name: The skill's name.
            """
            text = await render_skill_file(plan, name, shell=self._shell(plan))
            resolved = plan.find(name)
            files = await resolved.list_files() if resolved is not None else ()
            return text + (f"\n\nFiles of this skill (read_skill_resource): {', '.join(files)}" if files else "")

        async def read_skill_resource(skill_name: str, path: str, offset: int = 1, limit: int | None = None) -> str:
            """Read one file of a skill, paged by lines.

            Args:
                skill_name: The skill's name.
                path: A path relative to the skill folder, e.g. "references/guide.md".
                offset: The first line to return (1-based), to continue a long file.
                limit: The most lines to return.
            """
            return await render_skill_file(plan, skill_name, path, offset, limit, shell=self._shell(plan))

        tools = [tool_from_function(load_skill), tool_from_function(read_skill_resource)]
        if self.shell is not None:  # the client reads skills as resources: each one served counts as loaded
            tools += self.shell(plan, only={SHELL_TOOL}, current=plan.available())
        return {t.name: t for t in tools}

    def _shell(self, plan: TurnPlan) -> bool:
        """Whether this server offers the shell tool for ``plan`` (what a loaded skill's header says)."""
        return self.allow_shell and plan.filesystem.has_shell

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        plan = await self._plan(ctx)
        tools = self._tools(plan).values() if plan is not None else ()
        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.parameters) for t in tools]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        plan = await self._need_plan(ctx)
        tool = self._tools(plan).get(params.name)
        if tool is None:
            raise _invalid(f"there is no tool named {params.name!r}")
        try:
            text, failed = await tool.call(params.arguments or {}), False
        except Exception as exc:  # a tool's failure goes back to the client, never ends the server
            text, failed = f"error: {type(exc).__name__}: {exc}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=failed)

    # -- prompts -----------------------------------------------------------------------------

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        plan = await self._plan(ctx)
        prompts: dict[str, types.Prompt] = {}
        for resolved in self.catalog.paths(plan).values() if plan is not None else ():
            skill = resolved.skill
            if not user_invocable(skill.metadata) or skill.name in prompts:
                continue
            names = argument_names(skill.metadata)
            hint = argument_hint(skill.metadata) or None
            arguments = [types.PromptArgument(name=n, required=False) for n in names] or [
                types.PromptArgument(name="arguments", description=hint, required=False)
            ]
            prompts[skill.name] = types.Prompt(name=skill.name, description=skill.description, arguments=arguments)
        return types.ListPromptsResult(prompts=list(prompts.values()))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        plan = await self._need_plan(ctx)
        try:
            resolved = plan.invoke(params.name)
        except SkillNotFound as exc:
            raise _invalid(str(exc)) from None
        skill = resolved.skill
        if not user_invocable(skill.metadata):
            raise _invalid(f"skill {skill.name!r} is not user-invocable")
        given = params.arguments or {}
        names = argument_names(skill.metadata)
        text = " ".join(shlex.quote(given.get(n, "")) for n in names) if names else given.get("arguments", "")
        # The folder a shell would use, only when the client may run one; else where the files are read.
        path = next(p for p, s in self.catalog.paths(plan).items() if s is resolved)
        location = (resolved.files_root if self.allow_shell else None) or f"{SCHEME}{path}"
        try:
            text = render_invoked_skill(plan, resolved, text.strip(), skill_dir=location, shell=self._shell(plan))
        except ArgumentsTooLarge as exc:
            raise _invalid(str(exc)) from None
        block = f"<skill name={quoteattr(skill.name)} location={quoteattr(location)}>\n{text}\n</skill>"
        return types.GetPromptResult(
            description=skill.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=block))],
        )

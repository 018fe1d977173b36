"""The tools of a turn, put together in one place: tool families, then wrappers.

A *family* gives some of a turn's tools (:data:`FAMILIES`: the skill tools, search, the file
tools, the learning tools, the workflow tools, the user's tools); adding a built-in family is
one entry there. :meth:`Toolset.build` lists every family's tools for a :class:`TurnScope` and
wraps them, in this order:

1. **gated**: behind the approval policy (:class:`~harness.approval.ApprovalGate`), every
   decision an event of the call that asked and an audit record;
2. **filtered**: only the tools of the names asked for (``only=``);
3. **narrowed**: what a workflow step or an invoked skill's ``allowed-tools`` offers
   (a :data:`ToolOffer`, see :func:`skill_offer`).

The agent's turns, ``context: fork`` subagents, workflow steps and actions, and
:meth:`Harness.tools_for <harness.agent.Harness.tools_for>` (the MCP server's ``ToolSource`` and
the framework adapters' bridge) all get their tools here.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from filesystems import AbstractFilesystem, CommandResult
from harness.agent.calls import CallEvents, CallResult, call_context
from harness.agent.model_choice import trusted
from harness.agent.options import TrustOptions
from harness.agent.sessions import Session
from harness.agent.workflow_tools import WORKFLOW_TOOL_NAMES, workflow_tools
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.events import EnvironmentWaited, ShellRan, SkillLoaded
from harness.pipeline.catalog import LOAD_TOOL, SEARCH_TOOL, SHELL_TOOL, WORKFLOW_REPORT_TOOL
from harness.pipeline.plan import EnvironmentWait, ResolvedSkill, TurnPlan
from harness.skills.arguments import allowed_tools
from harness.tools.context import calling
from harness.tools.files import file_tools
from harness.tools.function import Tool
from harness.tools.search import search_tools
from harness.tools.skills import UsageHooks, skill_tools

if TYPE_CHECKING:  # the approval module loads with the agent's gate (see Harness), if it has one
    from harness.approval import ApprovalGate, Approver, Decision, Gating, ToolRequest, Waiting
    from harness.engine import WorkflowEngine
    from harness.learning import SelfLearning

__all__ = ["FAMILIES", "Family", "ToolOffer", "Toolset", "TurnScope", "TurnTools", "serialised", "skill_offer"]

#: Narrows the tools a turn offers (a workflow step's guardrails, a skill's ``allowed-tools``).
ToolOffer = Callable[[list[Tool]], list[Tool]]

# Claude Code's tool names in ``allowed-tools`` and the harness tools they stand for.
_CLAUDE_TOOLS = {
    "Bash": (SHELL_TOOL,),
    "Read": ("read_file", "list_files"),
    "Write": ("write_file",),
    "Edit": ("write_file",),
    "Glob": ("list_files",),
    "Grep": ("list_files",),
    "LS": ("list_files",),
}


@dataclass(frozen=True, kw_only=True)
class TurnScope:
    """What a turn's tools are bound to: its plan and session, where they report, the list of
    calls that wait for the app (``None``: the turn cannot pause, an undecided call is denied),
    the skills ``{skill_root}`` stands for besides those the conversation loaded, and whether
    the shell is offered."""

    plan: TurnPlan
    session: Session = dataclasses.field(default_factory=Session)
    events: CallEvents = dataclasses.field(default_factory=CallEvents)
    waiting: list[Waiting] | None = None
    current: tuple[ResolvedSkill, ...] = ()
    shell: bool = True


@dataclass(frozen=True, kw_only=True)
class Family:
    """A family of tools: ``tools`` gives a turn's, ``reserved`` names the family offers on
    other turns only (refused as names of the user's tools too). The calls of a ``sequential``
    family change state a later call may read (files, drafts, workflow runs): in one model step
    they run one after another, in the order asked (see :mod:`harness.agent.calls`)."""

    tools: Callable[[Toolset, TurnScope], Sequence[Tool]]
    reserved: tuple[str, ...] = ()
    builtin: bool = True
    sequential: bool = False


@dataclass(frozen=True, kw_only=True)
class TurnTools:
    """The tools of a turn, and the names of those whose calls run in order (``sequential``)."""

    tools: tuple[Tool, ...]
    sequential: frozenset[str]


def _skills(toolset: Toolset, scope: TurnScope) -> list[Tool]:
    plan, pending = scope.plan, scope.events

    async def on_load(skill_id: str, path: str) -> None:
        resolved = plan.by_id(skill_id)
        if resolved is not None:
            skill = resolved.skill
            pending.append(SkillLoaded(skill_id=skill_id, path=path, name=skill.name, location=skill.location))

    async def on_shell(command: str, result: CommandResult) -> None:
        pending.append(ShellRan(command=command, exit_code=result.exit_code, duration=result.duration))

    async def on_wait(wait: EnvironmentWait) -> None:
        pending.append(EnvironmentWaited(skill_id=wait.skill_id, seconds=wait.seconds, state=wait.state))

    session = scope.session
    return skill_tools(
        plan,
        usage=toolset.usage,
        on_load=on_load,
        on_shell=on_shell,
        on_wait=on_wait,
        loaded=session.loaded,
        history=session.messages,
        shell=scope.shell,
        hidden=lambda: toolset.hidden_folders(plan),
    )


def _workflows(toolset: Toolset, scope: TurnScope) -> list[Tool]:
    plan = scope.plan
    if not any(s.workflow for s in plan.available()):
        return []
    from harness.agent.workflows import resolver  # the engine loads with the first workflow

    return workflow_tools(
        toolset.workflow_engine(plan.context),
        resolver(plan, toolset.filesystem, toolset.gate.activations if toolset.gate is not None else None),
    )


class Toolset:
    """The tools of one agent's turns (see the module docstring).

    ``agent`` names the agent in approval requests and its workflow engine; ``skill_dirs`` are
    the skill folders the file tools keep out; ``usage`` and ``learning`` feed the skill and
    learning tools; ``user_tools`` are the agent's own tools; ``gate`` the approval gate."""

    def __init__(
        self,
        *,
        agent: str,
        filesystem: AbstractFilesystem,
        skill_dirs: Sequence[str],
        usage: UsageHooks | None = None,
        learning: SelfLearning | None = None,
        user_tools: Sequence[Tool] = (),
        gate: ApprovalGate | None = None,
    ) -> None:
        self.agent = agent
        self.filesystem = filesystem
        self.skill_dirs = skill_dirs
        self.usage = usage
        self.learning = learning
        self.user_tools = tuple(user_tools)
        self.gate = gate
        self._engine: WorkflowEngine | None = None

    def renamed(self, agent: str) -> Toolset:
        """The same tools for an agent of another name (a forked subagent)."""
        return Toolset(
            agent=agent,
            filesystem=self.filesystem,
            skill_dirs=self.skill_dirs,
            usage=self.usage,
            learning=self.learning,
            user_tools=self.user_tools,
            gate=self.gate,
        )

    def workflow_engine(self, context: RuntimeContext) -> WorkflowEngine:
        """The workflow engine over ``context.user_id``'s own area (built on first use)."""
        if self._engine is None:
            from harness.engine import WorkflowEngine

            self._engine = WorkflowEngine(self.filesystem, agent=self.agent)
        return self._engine.for_user(context.user_id)

    def build(
        self, scope: TurnScope, *, only: Collection[str] | None = None, offer: ToolOffer | None = None
    ) -> list[Tool]:
        """Every family's tools for ``scope``, gated, filtered to ``only`` and narrowed by ``offer``."""
        return list(self.for_turn(scope, only=only, offer=offer).tools)

    def for_turn(
        self, scope: TurnScope, *, only: Collection[str] | None = None, offer: ToolOffer | None = None
    ) -> TurnTools:
        """Like :meth:`build`, with the names of the sequential families' tools."""
        built = [(family, family.tools(self, scope)) for family in FAMILIES]
        sequential = frozenset(t.name for family, tools in built if family.sequential for t in tools)
        tools = self._gated([tool for _, tools in built for tool in tools], scope)
        if only is not None:
            tools = [t for t in tools if t.name in only]
        return TurnTools(tools=tuple(offer(tools) if offer is not None else tools), sequential=sequential)

    async def run_decided(
        self, scope: TurnScope, request: ToolRequest, *, offered: Collection[str], call_id: str, skill: str | None
    ) -> CallResult:
        """Run a call the app allowed while its run was paused, in the resumed turn's ``scope``,
        with exactly the arguments that were judged. The gate already decided it; a tool the
        resumed turn does not offer (``offered``) is an error result and does not run."""
        tool = None
        if request.tool in offered:
            tool = next((t for f in FAMILIES for t in f.tools(self, scope) if t.name == request.tool), None)
        if tool is None:
            content = f"error: ToolError: {request.tool} is not offered in this turn any more; it was not run"
            return CallResult(content=content, error_type="ToolError")
        if self.gate is not None:
            refused = self.gate.activate_decided(request, self._gating(scope))
            if refused is not None:
                return CallResult(
                    content=f"error: ToolDenied: {request.tool} was not run: {refused}", error_type="ToolDenied"
                )
        began = time.perf_counter()
        with scope.events.collecting() as reported:
            try:
                with calling(call_context(scope.plan.context, call_id=call_id, tool=request.tool, skill=skill)):
                    result = await tool.function(**request.arguments)
                content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
                error = None
            except Exception as exc:  # as in the turn: a tool's failure goes back to the model
                content, error = f"error: {type(exc).__name__}: {exc}", type(exc).__name__
        return CallResult(content=content, error_type=error, events=reported, duration=time.perf_counter() - began)

    def use_tools(self, tools: Sequence[Tool]) -> None:
        """Offer ``tools`` as the user's tools from the next turn on, once :meth:`check_names`
        passes for them (else nothing changes)."""
        self.check_names(tools)
        self.user_tools = tuple(tools)

    def check_names(self, tools: Sequence[Tool]) -> None:
        """Refuse (:class:`ConfigError`) two user tools of ``tools`` with one name, or one named
        like a built-in tool: the model would be offered both and one would silently shadow the
        other. The built-in tools are listed for an empty turn, so the check touches no file."""
        probe = TurnPlan(
            context=RuntimeContext(user_id="tool-names"),
            filesystem=self.filesystem,
            skills={},
            catalog="",
            shadowed=(),
            diagnostics=(),
            staged=None,
        )
        scope = TurnScope(plan=probe)
        builtin = {WORKFLOW_REPORT_TOOL}  # offered only in a workflow step's skill turn
        for family in FAMILIES:
            if family.builtin:
                builtin.update(family.reserved, (t.name for t in family.tools(self, scope)))
        seen: set[str] = set()
        for tool in tools:
            if tool.name in builtin:
                raise ConfigError(f"tools: {tool.name!r} is the name of a built-in tool; rename your tool")
            if tool.name in seen:
                raise ConfigError(f"tools: two tools are named {tool.name!r}; give each tool its own name")
            seen.add(tool.name)

    async def admit_script(self, plan: TurnPlan, command: str, workflow: ResolvedSkill) -> None:
        """Raise ``ToolDenied`` unless the approval policy allows a workflow script's command
        (``workflow``: the workflow skill, its ``{skill_root}`` unless the user wrote it)."""
        if self.gate is not None:
            from harness.approval import Gating, skill_roots

            gating = Gating(context=plan.context, agent=self.agent, events=[], roots=lambda: skill_roots([workflow]))
            await self.gate.admit(SHELL_TOOL, "shell", {"command": command}, gating)

    def hidden_folders(self, plan: TurnPlan) -> tuple[str, ...]:
        """The staged folders the shell of ``plan``'s user must not see now: those of skills
        that need an activation approval the user has not given at their current content."""
        if self.gate is None:
            return ()
        return self.gate.activations.hidden_folders(plan.context.user_id, plan.cache_items, plan.latest_cache_items())

    def unlocked(self, context: RuntimeContext, skill: ResolvedSkill) -> bool:
        """Whether ``context``'s user approved acting on ``skill`` (one that needs it) at its
        current content: its ``allowed-tools`` are then honoured for that user."""
        return self.gate is not None and self.gate.activations.unlocked(context.user_id, skill)

    def _gated(self, tools: list[Tool], scope: TurnScope) -> list[Tool]:
        """``tools`` behind the approval policy; calls wait for the app only in a run it started.
        ``{skill_root}`` is a ``current`` skill's (the invoked one) or one the conversation loaded."""
        if self.gate is None:
            return tools
        return self.gate.wrap(tools, self._gating(scope))

    def _gating(self, scope: TurnScope) -> Gating:
        """What the gate knows of a turn: its caller, events, ``{skill_root}`` and the skills a
        call acts on (the ``current`` ones, those the conversation loaded, and any named).
        Called only with a gate, which loaded the approval module."""
        from harness.approval import Gating, skill_roots

        plan, session = scope.plan, scope.session

        def roots() -> tuple[str, ...]:
            return skill_roots([*scope.current, *(plan.find(skill_id) for skill_id in sorted(session.loaded))])

        def acting_on(arguments: Mapping[str, Any]) -> list[ResolvedSkill | None]:
            command, skill = arguments.get("command"), arguments.get("skill")
            found = [*scope.current, *(plan.find(skill_id) for skill_id in sorted(session.loaded))]
            if isinstance(skill, str):
                found.append(plan.find(skill))
            if isinstance(command, str):
                every = (*plan.skills.values(), *plan.shadowed_skills.values())
                found += [s for s in every if s.files_root and s.files_root in command]
            return found

        return Gating(
            context=plan.context,
            agent=self.agent,
            events=scope.events,
            roots=roots,
            waiting=scope.waiting,
            acting_on=acting_on,
        )


def _search(toolset: Toolset, scope: TurnScope) -> list[Tool]:
    return search_tools(scope.plan)


def _files(toolset: Toolset, scope: TurnScope) -> list[Tool]:
    return file_tools(scope.plan.filesystem, skill_dirs=toolset.skill_dirs)


def _learning(toolset: Toolset, scope: TurnScope) -> list[Tool]:
    return toolset.learning.tools(scope.plan.context) if toolset.learning is not None else []


def _user(toolset: Toolset, scope: TurnScope) -> Sequence[Tool]:
    return toolset.user_tools


#: Every family of a turn's tools, in the order the model is offered them.
FAMILIES: tuple[Family, ...] = (
    Family(tools=_skills),
    Family(tools=_search, reserved=(SEARCH_TOOL,)),
    Family(tools=_files, sequential=True),
    Family(tools=_learning, sequential=True),
    Family(tools=_workflows, reserved=WORKFLOW_TOOL_NAMES, sequential=True),
    Family(tools=_user, builtin=False),
)


def skill_offer(
    resolved: ResolvedSkill, trust: TrustOptions, offer: ToolOffer | None, *, unlocked: bool = False
) -> ToolOffer | None:
    """``offer`` further narrowed to the invoked skill's ``allowed-tools`` when the agent
    enforces them and trusts the skill's source, or ``unlocked``: the user approved acting on
    the skill at its current content (:meth:`Toolset.unlocked`). The load tool always stays:
    the skill's own files."""
    allowed = allowed_tools(resolved.skill.metadata)
    if not trust.enforce_allowed_tools or allowed is None:
        return offer
    if not unlocked and not trusted(resolved, trust.trusted_markets):
        return offer
    names = {LOAD_TOOL, *allowed}
    for alias in allowed:
        names.update(_CLAUDE_TOOLS.get(alias, ()))

    def narrow(tools: list[Tool]) -> list[Tool]:
        kept = [t for t in tools if t.name in names]
        return offer(kept) if offer is not None else kept

    return narrow


def serialised(approver: Approver | None) -> Approver | None:
    """``approver`` asked one question at a time: tool calls of a step run side by side, but a
    person answers their prompts one after another."""
    if approver is None:
        return None
    lock = anyio.Lock()

    async def ask(request: ToolRequest) -> bool | Decision:
        async with lock:
            return await approver(request)

    return ask

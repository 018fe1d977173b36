"""The harness agent: per-turn skill pipeline + model ↔ tools loop, per user and session."""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self
from xml.sax.saxutils import quoteattr

from filesystems import AbstractFilesystem, AsyncResource, CommandResult, LocalFilesystem
from harness.agent.hooks import Answer, BeforeRun, OnInput, RunStart, call_hook
from harness.agent.queues import MessageQueues, QueueLimits, RunControl
from harness.agent.relevance import DEFAULT_RELEVANCE_INTERVAL, UsageRelevance
from harness.agent.sessions import InMemorySessionStore, Session, SessionStore
from harness.agent.streaming import ModelStep, framed
from harness.agent.workflow_tools import workflow_tools
from harness.agent.workflows import AgentExecutor, call_context, package_for, resolve_workflow, resolver
from harness.approval import (
    ApprovalGate,
    ApprovalNotFound,
    ApprovalPolicy,
    Approver,
    Decision,
    Gating,
    ToolRequest,
    skill_roots,
)
from harness.config import HarnessConfig, load_config
from harness.context import RuntimeContext
from harness.engine import Decision as WorkflowDecision
from harness.engine import Outcome, Run, WorkflowEngine
from harness.errors import ConfigError, HarnessError, SkillNotFound
from harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    MessageInjected,
    ModelReplied,
    RunTally,
    ShellRan,
    SkillLoaded,
    SkillWarning,
    SubagentFinished,
    SubagentStarted,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.learning import (
    AuditLog,
    AuditRecord,
    CuratorConfig,
    CuratorReport,
    MarketScanPolicy,
    PromotionResult,
    SelfLearning,
)
from harness.models import Message, Model, ModelError, ToolCall, Usage, open_model
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import (
    DEFAULT_CATALOG_BUDGET,
    LOAD_TOOL,
    SEARCH_TOOL,
    SHELL_TOOL,
    WORKFLOW_REPORT_TOOL,
)
from harness.pipeline.environments import EnvironmentOptions
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT, DEFAULT_SKILL_DIRS
from harness.pipeline.plan import ResolvedSkill, TurnPlan, VisibilityPolicy
from harness.pipeline.staging import DEFAULT_MAX_FILE_SIZE
from harness.skills.arguments import (
    allowed_tools,
    argument_hint,
    argument_names,
    substitute,
    text_field,
    user_invocable,
)
from harness.skills.skill import Layer
from harness.tools.context import calling
from harness.tools.files import file_tools
from harness.tools.function import Tool, tool_from_function
from harness.tools.search import search_tools
from harness.tools.skill_text import render_skill_text
from harness.tools.skills import UsageHooks, skill_tools
from harness.tracing import RunTracer
from repositories import SkillRepository, exact_sub_source, open_repository

__all__ = ["Harness", "RunResult", "StepLimitExceeded"]

log = logging.getLogger(__name__)
#: Narrows the tools a turn offers (a workflow step's guardrails).
ToolOffer = Callable[[list[Tool]], list[Tool]]
_SKILL_COMMAND = re.compile(r"^/skill:(?P<name>[^\s]+)(?:\s+(?P<args>.*))?$", re.DOTALL)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class _Invocation:
    """A turn's user text, and the skill it invokes explicitly (``None`` for a plain message)."""

    text: str
    skill: ResolvedSkill | None = None


class StepLimitExceeded(HarnessError):
    """The model kept calling tools past ``max_steps``."""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """The final reply of a turn with its usage and everything that happened on the way.

    ``approvals`` are the gated calls the run stopped at, waiting for the app
    (:meth:`Harness.resolve_approval`, then :meth:`Harness.resume`)."""

    reply: str
    usage: Usage
    steps: int
    events: tuple[Event, ...] = field(default=())
    approvals: tuple[ApprovalRequested, ...] = field(default=())


class Harness(AsyncResource):
    """An agent with skills. Configure with keywords (or :meth:`from_config`), then use as an
    async context manager::

        async with Harness(name="assistant", model="demo", workspace="./ws") as agent:
            result = await agent.run("hello", context=RuntimeContext(user_id="alice"))

    ``name`` is the agent id. ``filesystem`` defaults to a local workspace with a shell at
    ``workspace``. ``repositories`` are the markets (later wins), ``global_skills_dir`` is layer 1
    (one folder or a list, a later one winning). ``skill_dirs`` are the workspace's (and each
    user's) skill folders, the first winning (default ``skills``, ``.agents/skills``,
    ``.claude/skills``).
    ``tools`` are extra tools: ``Tool`` objects or plain typed (async) functions.
    ``skills`` restricts the catalog to those names (used by subagents); ``pipeline`` shares
    another agent's pipeline with its filesystem and markets (see :meth:`subagent`). ``learning=True`` (or a
    configured :class:`~harness.learning.SelfLearning`) turns on the self-learning loop: the
    authoring tools, usage recording, visibility filters, promotion and the curator.
    ``models`` names extra models a skill's ``model:`` field may pick (before ``open_model``
    specs). ``enforce_allowed_tools`` narrows an explicitly invoked skill's turn to its
    ``allowed-tools``; market skills only from the ``trusted_markets`` (market slugs, or a
    plugin marketplace's plugin slugs).
    ``tracer_provider`` is the OpenTelemetry tracer provider runs are traced with (default: the
    global one; see :class:`~harness.tracing.RunTracer`).
    ``curator`` (a :class:`~harness.learning.CuratorConfig`) runs the curator in its own task
    while the agent is entered, throttled across replicas, stopped on exit.
    ``approval`` decides shell commands, writes and tools marked ``requires_approval`` before
    they run; ``approver`` answers the calls it asks about (without one, a run pauses for
    :meth:`resolve_approval`). ``on_input`` and ``before_run`` are the input hooks
    (:mod:`harness.agent.hooks`); :meth:`steer` and :meth:`follow_up` queue messages for a run
    in progress. ``queue_limits`` (a :class:`~harness.agent.queues.QueueLimits`) bounds those
    queues and the paused runs each user and all users may keep.
    ``environments`` (``True`` or :class:`~harness.pipeline.EnvironmentOptions`) installs each
    skill's Python requirements into a shared, content-addressed folder in the background, which
    becomes the skill's ``ResolvedSkill.environment`` (see README, "Environments").
    ``relevance_interval``: with the self-learning loop, the catalog orders skills by their
    usage counts, read in the background at most every that many seconds (``None``: never;
    see :class:`~harness.agent.relevance.UsageRelevance`, which is :attr:`usage_relevance`).
    """

    def __init__(
        self,
        *,
        name: str = "assistant",
        model: Model | str = "demo",
        workspace: str | Path | None = None,
        filesystem: AbstractFilesystem | None = None,
        repositories: Sequence[SkillRepository] = (),
        global_skills_dir: str | Path | Sequence[str | Path] | None = None,
        dynamic_skills: bool = True,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        system_prompt: str = "You are a helpful assistant.",
        max_steps: int = 20,
        sessions: SessionStore | None = None,
        catalog_budget: int | None = DEFAULT_CATALOG_BUDGET,
        market_timeout: float = DEFAULT_MARKET_TIMEOUT,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        visibility: VisibilityPolicy | None = None,
        usage: UsageHooks | None = None,
        skills: Collection[str] | None = None,
        watch: bool = True,
        learning: bool | SelfLearning = False,
        pipeline: SkillPipeline | None = None,
        market_scan: MarketScanPolicy | None = None,
        skill_dirs: Sequence[str] = DEFAULT_SKILL_DIRS,
        models: Mapping[str, Model] | None = None,
        enforce_allowed_tools: bool = False,
        trusted_markets: Collection[str] = (),
        tracer_provider: Any | None = None,
        curator: CuratorConfig | None = None,
        approval: ApprovalPolicy | None = None,
        approver: Approver | None = None,
        on_input: OnInput | None = None,
        before_run: BeforeRun | None = None,
        queue_limits: QueueLimits | None = None,
        environments: EnvironmentOptions | bool | None = None,
        relevance_interval: float | None = DEFAULT_RELEVANCE_INTERVAL,
    ) -> None:
        super().__init__()
        if filesystem is None:
            if workspace is None:
                raise ValueError("give a workspace folder or a filesystem")
            filesystem = LocalFilesystem(Path(workspace), shell=True)
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.name = name
        self.model = open_model(model) if isinstance(model, str) else model
        self.filesystem = filesystem
        self.repositories = tuple(repositories)
        self.global_skills_dir = global_skills_dir
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.sessions = sessions or InMemorySessionStore()
        self.learning = (
            SelfLearning(self.filesystem, on_change=lambda user_id: self.pipeline.invalidate(user_id))
            if learning is True
            else learning or None
        )
        if self.learning is not None:
            usage = usage or self.learning.recorder
            visibility = visibility or self.learning.visibility
        self.usage = usage
        self.models = dict(models or {})
        self.enforce_allowed_tools = enforce_allowed_tools
        self.trusted_markets = frozenset(trusted_markets)
        self.tracer = RunTracer(tracer_provider)
        self.skill_names = frozenset(skills) if skills is not None else None
        self.tools = [t if isinstance(t, Tool) else tool_from_function(t) for t in tools]
        self.pipeline = pipeline or SkillPipeline(
            filesystem=self.filesystem,
            repositories=self.repositories,
            global_skills_dir=global_skills_dir,
            dynamic_skills=dynamic_skills,
            market_timeout=market_timeout,
            max_file_size=max_file_size,
            catalog_budget=catalog_budget,
            visibility=visibility,
            watch=watch,
            market_scan=market_scan,
            skill_dirs=skill_dirs,
            environments=self._environment_options(environments),
        )
        self._workflows = WorkflowEngine(self.filesystem, agent=self.name)
        self._stack = AsyncExitStack()
        # An agent built around another's pipeline (a subagent) shares its resources: the
        # owner opens and closes them.
        self._owns_resources = pipeline is None
        self._check_tool_names()
        self.curator = curator
        self.usage_relevance = (
            UsageRelevance(self.pipeline, self.learning.usage, interval=relevance_interval)
            if self.learning is not None and relevance_interval is not None and self._owns_resources
            else None
        )
        """Keeps the catalog's order in step with the usage counts (``None`` without learning)."""
        # Tool approval, input hooks and the per-(user, session) message queues.
        self.approval, self.approver = approval, approver
        self._gate = None if approval is None else ApprovalGate(policy=approval, approver=approver, audit=self._audit())
        self.on_input, self.before_run = on_input, before_run
        self._queues = MessageQueues(limits=queue_limits)

    def _environment_options(self, environments: EnvironmentOptions | bool | None) -> EnvironmentOptions | None:
        """The options of skills' environments: ``True`` means the defaults, and options that
        name no ``trusted_markets`` take the agent's."""
        if environments is None or environments is False:
            return None
        options = EnvironmentOptions() if environments is True else environments
        if options.trusted_markets is None:
            options = dataclasses.replace(options, trusted_markets=self.trusted_markets)
        return options

    @classmethod
    def from_config(cls, config: HarnessConfig | str | Path, **overrides: Any) -> Harness:
        """The agent a ``harness.yaml`` (a path, or a loaded :class:`HarnessConfig`) describes.

        Keyword ``overrides`` are constructor arguments and win over the file (``watch=False``,
        ``model=...``, ``tools=[...]``). Raises :class:`ConfigError` for a bad file, store or mode.
        """
        if not isinstance(config, HarnessConfig):
            config = load_config(config)
        options: dict[str, Any] = {
            "name": config.name,
            "model": config.model,
            "global_skills_dir": config.global_skills_dir,
            "dynamic_skills": config.dynamic_skills,
            "system_prompt": config.system_prompt,
            "max_steps": config.max_steps,
            "catalog_budget": config.catalog_budget,
            "market_timeout": config.market_timeout,
            "market_scan": config.market_scan,
            "max_file_size": config.max_file_size,
            "skill_dirs": config.skill_dirs,
            "enforce_allowed_tools": config.enforce_allowed_tools,
            "trusted_markets": config.trusted_markets,
            "curator": config.curator,
            "approval": config.approval,
            "environments": config.environments,
            **overrides,
        }
        # Open resources only for what the overrides leave to the file.
        if "filesystem" not in options:
            options["filesystem"] = config.open_filesystem()
        if "repositories" not in options:
            options["repositories"] = [open_repository(url) for url in config.repositories]
        return cls(**options)

    async def __aenter__(self) -> Self:
        if self._owns_resources:
            await self._stack.enter_async_context(self.filesystem)
            for repository in self.repositories:
                await self._stack.enter_async_context(repository)
            await self._stack.enter_async_context(self.model)
            await self._stack.enter_async_context(self.pipeline)
        if self.usage_relevance is not None:
            await self._stack.enter_async_context(self.usage_relevance)
        if self.curator is not None:  # the curator runs itself while the agent is entered
            learning = self.learning or SelfLearning(self.filesystem, on_change=self.pipeline.invalidate)
            await self._stack.enter_async_context(learning.curator_task(self.curator, model=self.model))
        return await super().__aenter__()

    async def _aclose(self) -> None:
        """Close the pipeline, model, markets and filesystem this agent owns."""
        await self._stack.aclose()

    # -- turns -------------------------------------------------------------------------------

    async def prepare(self, context: RuntimeContext) -> TurnPlan:
        """Run the per-turn pipeline for ``context`` (what every turn does first)."""
        plan = await self.pipeline.prepare(context)
        if self.skill_names is not None:
            plan.skills = {k: v for k, v in plan.skills.items() if v.skill.name in self.skill_names}
            plan.shadowed_skills = {k: v for k, v in plan.shadowed_skills.items() if v.skill.name in self.skill_names}
            plan.catalog = self.pipeline.render(plan.skills, plan.shadowed_skills)
        return plan

    async def run(self, message: str, *, context: RuntimeContext) -> RunResult:
        """One user turn: returns the final reply with usage and the turn's events."""
        return await self._collect(self._traced(message, context, self._controlled(message, context)))

    @staticmethod
    async def _collect(stream: AsyncIterator[Event]) -> RunResult:
        events = [event async for event in stream]
        tally = RunTally.of(events)
        decided = {e.approval_id for e in events if isinstance(e, ApprovalDecided)}
        waiting = tuple(e for e in events if isinstance(e, ApprovalRequested) and e.approval_id not in decided)
        return RunResult(
            reply=tally.reply, usage=tally.usage, steps=tally.steps, events=tuple(events), approvals=waiting
        )

    def _traced(self, message: str, context: RuntimeContext, turn: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """``turn`` traced as one run of this agent."""
        return self.tracer.trace(turn, agent=self.name, model=self.model.name, context=context, message=message)

    async def skill(self, name: str, instructions: str = "", *, context: RuntimeContext) -> RunResult:
        """Invoke a skill explicitly (hidden skills too); raises ``SkillNotFound`` if unknown."""
        message = f"/skill:{name} {instructions}".rstrip()
        turn = self._controlled(message, context, strict=True, user_input=False)
        return await self._collect(self._traced(message, context, turn))

    async def _step_turn(
        self, name: str, instructions: str, *, context: RuntimeContext, offer: ToolOffer | None = None
    ) -> RunResult:
        """A skill turn (:meth:`skill`); a workflow step's offers only ``offer(tools)``."""
        message = f"/skill:{name} {instructions}".rstrip()
        return await self._collect(
            self._traced(message, context, self._turn(message, context, strict=True, offer=offer))
        )

    def stream(self, message: str, *, context: RuntimeContext) -> AsyncIterator[Event]:
        """Like :meth:`run`, yielding typed events as they happen: :class:`RunStarted` first,
        the model's replies as :class:`TextDelta` / :class:`ToolCallDelta` pieces as the model
        writes them, and :class:`RunFinished` with the run's usage last.

        A message ``/skill:<name> args`` invokes that skill explicitly; an unknown name is
        reported as the reply without calling the model.
        """
        turn = self._controlled(message, context, stream=True)
        return framed(self._traced(message, context, turn), agent=self.name, context=context)

    async def _turn(
        self,
        message: str,
        context: RuntimeContext,
        *,
        strict: bool,
        offer: ToolOffer | None = None,
        stream: bool = False,
        control: RunControl | None = None,
    ) -> AsyncIterator[Event]:
        plan = await self.prepare(context)
        yield TurnPrepared.of(plan)
        log.debug(
            "turn of agent %s for user %s (session %s): %d skills, %d diagnostics",
            self.name,
            context.user_id,
            context.session_id,
            len(plan.skills),
            len(plan.diagnostics),
        )
        session = await self.sessions.get(context.user_id, context.session_id)
        try:
            invocation = self._expand(message, plan, user=not strict)
        except SkillNotFound as exc:
            if strict:
                raise
            yield ModelReplied(content=str(exc), usage=Usage(), final=True)
            return
        model = self.model
        if invocation.skill is not None:
            model, warning = await self._skill_model(invocation.skill)
            if warning is not None:
                yield warning
            offer = self._narrowed(invocation.skill, offer)
            if invocation.skill.skill.metadata.get("context") == "fork":
                fork = self._fork(invocation.skill, invocation.text, message, context, model, offer, stream=stream)
                async for event in fork:
                    yield event
                return
        pending: list[Event] = []
        current = () if invocation.skill is None else (invocation.skill,)
        tools = self._tools(plan, session, pending, control, current)
        if offer is not None:
            tools = offer(tools)
        by_name = {t.name: t for t in tools}
        specs = [t.spec for t in tools]
        system = "\n\n".join(part for part in (self.system_prompt, plan.catalog) if part)
        turn: list[Message] = [Message.user(invocation.text)]
        if control is not None:  # before_run's context, or a resumed run's turn so far
            skill = invocation.skill.skill.name if invocation.skill is not None else None
            start = RunStart(
                context=context, message=invocation.text, original=message, skill=skill, plan=plan, tools=tuple(by_name)
            )
            async for event in control.opening(turn, start):
                yield event
        for _ in range(self.max_steps):
            step = ModelStep(model, [Message.system(system), *session.messages, *turn], specs, stream=stream)
            async for delta in step:
                yield delta
            reply = step.reply
            turn.append(reply.message)
            final = not reply.message.tool_calls
            yield ModelReplied(content=reply.message.content, usage=reply.usage, final=final, model=model.name)
            if final and not (control is not None and control.steering):
                session.messages.extend(turn)
                await self.sessions.save(context.user_id, context.session_id, session)
                return
            for call in reply.message.tool_calls:
                log.debug("agent %s calls tool %s for user %s", self.name, call.name, context.user_id)
                yield ToolCalled(call_id=call.id, name=call.name, arguments=dict(call.arguments))
                content, error_type = await self._call(by_name, call, context, invocation.skill)
                for event in pending:
                    yield event
                pending.clear()
                error = error_type is not None
                yield ToolReturned(call_id=call.id, name=call.name, content=content, error=error, error_type=error_type)
                turn.append(Message.tool_result(call, content))
            if control is not None:  # a step boundary: pause for approvals, or take steering
                if control.pause(turn, message=message, strict=strict):
                    return
                for text in control.take_steering():
                    yield MessageInjected(kind="steer", text=text)
                    turn.append(Message.user(text))
        session.messages.extend(turn)
        await self.sessions.save(context.user_id, context.session_id, session)
        raise StepLimitExceeded(
            f"agent {self.name!r} stopped after {self.max_steps} model steps without a final answer "
            "(raise max_steps if the task needs more)"
        )

    def subagent(
        self,
        *,
        name: str,
        system_prompt: str | None = None,
        skills: Sequence[str] | None = None,
        model: Model | None = None,
        tools: Sequence[Tool | Callable[..., Any]] | None = None,
    ) -> Harness:
        """A child agent with its own id and prompt that shares this agent's markets, global
        dir, filesystem and pipeline (the same instances), optionally restricted to ``skills``.
        Close the parent, not the child, to release them."""
        return Harness(
            name=name,
            model=model or self.model,
            filesystem=self.filesystem,
            repositories=self.repositories,
            global_skills_dir=self.global_skills_dir,
            tools=self.tools if tools is None else tools,
            system_prompt=self.system_prompt if system_prompt is None else system_prompt,
            max_steps=self.max_steps,
            usage=self.usage,
            skills=skills if skills is not None else self.skill_names,
            learning=self.learning or False,
            pipeline=self.pipeline,
            models=self.models,
            enforce_allowed_tools=self.enforce_allowed_tools,
            trusted_markets=self.trusted_markets,
            tracer_provider=self.tracer.tracer_provider,
            approval=self.approval,
            approver=self.approver,
        )

    # -- input hooks, message queues, approvals --------------------------------------------

    async def _controlled(
        self,
        message: str | None,
        context: RuntimeContext,
        *,
        strict: bool = False,
        user_input: bool = True,
        stream: bool = False,
    ) -> AsyncIterator[Event]:
        """A run the app started: ``on_input`` (for user input), the turn, then the steering it
        could not take and the follow-ups, each as a turn. ``message=None`` resumes the paused run."""
        if message is not None:
            await self._discard_paused(context)
            if user_input and self.on_input is not None:
                answer = await call_hook(self.on_input(message, context))
                if isinstance(answer, Answer):
                    yield ModelReplied(content=answer.text, usage=Usage(), final=True)
                    return
                if answer is not None and not isinstance(answer, str):
                    raise TypeError(f"on_input returned {type(answer).__name__}; return None, text or Answer(text=...)")
                message = message if answer is None else answer
        with self._queues.open(context, before_run=self.before_run, resume=message is None) as control:
            paused = control.resumed
            text, strict = (paused.message, paused.strict) if paused is not None else (message or "", strict)
            async for event in self._turn(text, context, strict=strict, control=control, stream=stream):
                yield event
            while (queued := control.next_queued()) is not None:
                kind, text = queued
                yield MessageInjected(kind=kind, text=text)
                async for event in self._turn(text, context, strict=False, control=control, stream=stream):
                    yield event

    async def _discard_paused(self, context: RuntimeContext) -> None:
        """A new message moves the conversation on: a paused run's turn joins the session as it
        stood (its waiting calls never run)."""
        paused = self._queues.discard(context)
        if paused is not None:
            session = await self.sessions.get(context.user_id, context.session_id)
            session.messages.extend(paused.turn)
            await self.sessions.save(context.user_id, context.session_id, session)

    async def steer(self, text: str, *, context: RuntimeContext) -> None:
        """Inject ``text`` (a ``/skill:`` command is expanded first) as a user message into the
        run in progress for ``context``'s user and session, at its next step boundary. Raises
        :class:`~harness.agent.queues.NoActiveRun` when there is none and ``SkillNotFound`` for
        an unknown skill. ``on_input`` and ``before_run`` do not run for it."""
        control, expanded = await self._queued(text, context)
        control.steer(expanded)

    async def follow_up(self, text: str, *, context: RuntimeContext) -> None:
        """Queue ``text`` to run as a turn of its own after the run in progress for ``context``'s
        user and session has answered (in the same run: its events join the run's stream).
        Raises like :meth:`steer`."""
        control, _ = await self._queued(text, context)
        control.follow_up(text)

    async def _queued(self, text: str, context: RuntimeContext) -> tuple[RunControl, str]:
        plan = self._queues.active(context).plan or await self.prepare(context)
        expanded = self._expand(text, plan, user=True).text
        return self._queues.active(context), expanded  # the run may have ended meanwhile

    def pending_approvals(self, context: RuntimeContext) -> list[ToolRequest]:
        """The calls of ``context``'s paused run that wait for :meth:`resolve_approval`."""
        return [w.request for w in self._queues.waiting(context) if w.decision is None]

    async def resolve_approval(
        self, approval_id: str, *, approved: bool, context: RuntimeContext, reviewer: str = "app", reason: str = ""
    ) -> None:
        """The app's decision on a waiting call (an event and an audit record by
        ``operator:<reviewer>``); the call runs, or is refused, on :meth:`resume`. Raises
        :class:`~harness.approval.ApprovalNotFound` for an id that does not wait for this
        user and session."""
        if self._gate is None:
            raise ApprovalNotFound(f"agent {self.name!r} has no approval policy")
        default = "approved by the app" if approved else "refused by the app"
        decision = Decision(action="allow" if approved else "deny", reason=reason or default, by=f"operator:{reviewer}")
        await self._queues.decide(approval_id, decision, context=context, gate=self._gate)

    async def resume(self, *, context: RuntimeContext) -> RunResult:
        """Continue the paused run of ``context``'s user and session once every waiting call is
        decided: allowed calls run, denied ones return their refusal, and the model goes on."""
        return await self._collect(self._traced("", context, self._controlled(None, context)))

    def resume_stream(self, *, context: RuntimeContext) -> AsyncIterator[Event]:
        """Like :meth:`resume`, yielding typed events as they happen (framed like :meth:`stream`)."""
        turn = self._controlled(None, context, stream=True)
        return framed(self._traced("", context, turn), agent=self.name, context=context)

    # -- helpers -----------------------------------------------------------------------------

    def _expand(self, message: str, plan: TurnPlan, *, user: bool) -> _Invocation:
        """The user text of a turn: a ``/skill:`` command becomes the skill's body with its
        placeholders filled in. ``user`` commands cannot invoke ``user-invocable: false`` skills."""
        match = _SKILL_COMMAND.match(message.strip())
        if match is None:
            return _Invocation(text=message)
        try:
            resolved = plan.invoke(match["name"])
        except SkillNotFound:
            raise SkillNotFound(f"no skill named {match['name']!r}; {_invocable_list(plan, user)}") from None
        if self.skill_names is not None and resolved.skill.name not in self.skill_names:
            raise SkillNotFound(f"skill {match['name']!r} is not available to agent {self.name!r}")
        skill = resolved.skill
        if user and not user_invocable(skill.metadata):
            raise SkillNotFound(
                f"skill {match['name']!r} is not user-invocable (the model may still use it); "
                f"{_invocable_list(plan, user)}"
            )
        location = resolved.files_root or skill.skill_id
        body = substitute(
            skill.body.rstrip(),
            (match["args"] or "").strip(),
            names=argument_names(skill.metadata),
            skill_dir=resolved.files_root or f"{LOAD_TOOL}:{skill.skill_id}",
            session_id=plan.context.session_id,
        )
        text = render_skill_text(plan, resolved, body, shell=plan.filesystem.has_shell)
        block = f"<skill name={quoteattr(skill.name)} location={quoteattr(location)}>\n{text}\n</skill>"
        return _Invocation(text=block, skill=resolved)

    async def _skill_model(self, resolved: ResolvedSkill) -> tuple[Model, SkillWarning | None]:
        """The model an invoked skill's ``model:`` names (opened once, kept until the agent
        closes), or this agent's model and a warning when nobody knows the name."""
        skill = resolved.skill
        spec = text_field(skill.metadata, "model")
        if not spec or spec == "inherit":
            return self.model, None
        if spec not in self.models and not _trusted(resolved, self.trusted_markets):
            # A market is not trusted to send the conversation to a provider the app did not pick.
            folded = (
                f" (its plugin {resolved.entry.plugin!r} only folds to that slug; trust matches exact slugs)"
                if skill.source in self.trusted_markets
                else ""
            )
            message = (
                f"skill {skill.name!r}: model {spec!r} ignored: market {skill.source!r} is not in trusted_markets"
                f"{folded} and the model is not one of the agent's models; using {self.model.name!r}"
            )
            log.warning("%s", message)
            return self.model, SkillWarning(skill_id=skill.skill_id, code="untrusted-model", message=message)
        if spec not in self.models:
            try:
                model = open_model(spec)
            except ModelError as exc:
                message = f"skill {skill.name!r}: model {spec!r} is not available ({exc}); using {self.model.name!r}"
                log.warning("%s", message)
                return self.model, SkillWarning(skill_id=skill.skill_id, code="unknown-model", message=message)
            self.models[spec] = await self._stack.enter_async_context(model)
        return self.models[spec], None

    def _narrowed(self, resolved: ResolvedSkill, offer: ToolOffer | None) -> ToolOffer | None:
        """``offer`` further narrowed to the skill's ``allowed-tools`` when this agent enforces
        them and trusts the skill's source (the load tool always stays: the skill's own files)."""
        skill = resolved.skill
        allowed = allowed_tools(skill.metadata)
        if not self.enforce_allowed_tools or allowed is None:
            return offer
        if not _trusted(resolved, self.trusted_markets):
            return offer
        names = {LOAD_TOOL, *allowed}
        for alias in allowed:
            names.update(_CLAUDE_TOOLS.get(alias, ()))

        def narrow(tools: list[Tool]) -> list[Tool]:
            kept = [t for t in tools if t.name in names]
            return offer(kept) if offer is not None else kept

        return narrow

    async def _fork(
        self,
        resolved: ResolvedSkill,
        task: str,
        message: str,
        context: RuntimeContext,
        model: Model,
        offer: ToolOffer | None,
        *,
        stream: bool = False,
    ) -> AsyncIterator[Event]:
        """Run a ``context: fork`` skill as a subagent turn with the skill's body as its task;
        the subagent's answer ends this turn and joins this session. Its events come between
        :class:`SubagentStarted` and :class:`SubagentFinished`, streamed (deltas) when ``stream``."""
        skill = resolved.skill
        name = text_field(skill.metadata, "agent") or f"{self.name}.{skill.name}"
        child = self.subagent(name=name, model=model)
        child_context = dataclasses.replace(context, session_id=f"{context.session_id}/fork/{skill.name}")
        run_id = uuid.uuid4().hex
        yield SubagentStarted(run_id=run_id, agent=name, skill=skill.name, session_id=child_context.session_id)
        answer = ""
        async for event in child._turn(task, child_context, strict=True, offer=offer, stream=stream):
            if isinstance(event, ModelReplied) and event.final:
                answer = event.content
            yield event
        session = await self.sessions.get(context.user_id, context.session_id)
        session.messages.extend([Message.user(message), Message.assistant(answer)])
        await self.sessions.save(context.user_id, context.session_id, session)
        yield SubagentFinished(run_id=run_id, agent=name, reply=answer)

    def tools_for(
        self, plan: TurnPlan, *, only: Collection[str] | None = None, current: Iterable[ResolvedSkill] = ()
    ) -> list[Tool]:
        """The tools a turn of ``plan`` offers (skill, file, learning, workflow and user tools),
        put together and gated exactly as in a turn, for the call paths outside one: a
        workflow's ``call_tool`` action, the framework adapters, ``harness mcp serve``. A gated
        call made through them cannot wait for the app (a policy's *ask* without an approver
        denies it). ``only`` keeps just the tools of those names; ``current`` are skills whose
        files-roots ``{skill_root}`` stands for besides those the tools load (a caller that
        cannot follow which skill its model read — an MCP client reads skills as resources, a
        framework may prepare each call afresh — passes the skills it serves)."""
        shell = only is None or SHELL_TOOL in only  # a load result says whether a shell is offered
        tools = self._tools(plan, Session(), [], current=tuple(current), shell=shell)
        return tools if only is None else [t for t in tools if t.name in only]

    def workflow_engine(self, context: RuntimeContext) -> WorkflowEngine:
        """The workflow engine over ``context.user_id``'s own area (their runs)."""
        return self._workflows.for_user(context.user_id)

    async def run_workflow(
        self, skill: str, *, context: RuntimeContext, run_id: str | None = None, inputs: dict[str, Any] | None = None
    ) -> Run:
        """Start a run of the workflow skill ``skill`` and perform its actions until it needs a
        person (``ask_user``, a handoff, a confirmation) or ends."""
        plan = await self.prepare(context)
        resolved = resolve_workflow(plan, skill, workspace=self.filesystem)
        engine = self.workflow_engine(context)
        run = await engine.start(await package_for(resolved), run_id=run_id, inputs=inputs or {})
        return await engine.run_until_blocked(run.run_id, AgentExecutor(self, context, workflow_skill=skill))

    async def continue_workflow(
        self,
        run_id: str,
        *,
        context: RuntimeContext,
        outcome: Outcome | None = None,
        confirm: str | None = None,
        decision: WorkflowDecision | None = None,
        note: str = "",
    ) -> Run:
        """Report an outcome, a confirmation or a decision, then perform actions until blocked or done.

        ``confirm`` is the application's (or operator's) confirmation of the blocked action with
        that id; ``decision`` (``retry``, ``skip``, ``abort``, with ``note``) lifts a block by an
        exhausted retry budget, like :meth:`~harness.engine.WorkflowEngine.resolve`. The model's
        workflow tools can give neither. A run record edited outside the engine raises
        :class:`~harness.engine.RunTampered` before anything is performed.
        """
        engine = self.workflow_engine(context)
        run = await engine.resume(run_id, outcome, confirm=confirm)
        if decision is not None:
            run = await engine.resolve(run_id, decision, note=note)
        return await engine.run_until_blocked(run.run_id, AgentExecutor(self, context, workflow_skill=run.skill))

    def _check_tool_names(self) -> None:
        """Refuse (:class:`ConfigError`) two tools with one name: the model would be offered
        both and one would silently shadow the other. The built-in tools are listed for an
        empty turn, so the check touches no file."""
        context = RuntimeContext(user_id="tool-names")
        probe = TurnPlan(
            context=context, filesystem=self.filesystem, skills={}, catalog="", shadowed=(), diagnostics=(), staged=None
        )
        workflows = workflow_tools(self.workflow_engine(context), resolver(probe, self.filesystem))
        builtin = {
            t.name
            for t in [
                *skill_tools(probe),
                *file_tools(self.filesystem, skill_dirs=self.pipeline.skill_dirs),
                *self._learning_tools(context),
                *workflows,
            ]
        }
        builtin.add(SEARCH_TOOL)  # offered only on turns whose catalog is cut
        builtin.add(WORKFLOW_REPORT_TOOL)  # offered only in a workflow step's skill turn
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in builtin:
                raise ConfigError(f"tools: {tool.name!r} is the name of a built-in tool; rename your tool")
            if tool.name in seen:
                raise ConfigError(f"tools: two tools are named {tool.name!r}; give each tool its own name")
            seen.add(tool.name)

    def _tools(
        self,
        plan: TurnPlan,
        session: Session,
        pending: list[Event],
        control: RunControl | None = None,
        current: Sequence[ResolvedSkill] = (),
        shell: bool = True,
    ) -> list[Tool]:
        async def on_load(skill_id: str, path: str) -> None:
            resolved = plan.by_id(skill_id)
            if resolved is None:
                return
            skill = resolved.skill
            pending.append(SkillLoaded(skill_id=skill_id, path=path, name=skill.name, location=skill.location))

        async def on_shell(command: str, result: CommandResult) -> None:
            pending.append(ShellRan(command=command, exit_code=result.exit_code, duration=result.duration))

        tools = [
            *skill_tools(
                plan,
                usage=self.usage,
                on_load=on_load,
                on_shell=on_shell,
                loaded=session.loaded,
                history=session.messages,
                shell=shell,
            ),
            *search_tools(plan),
        ]
        workflows = (
            workflow_tools(self.workflow_engine(plan.context), resolver(plan, self.filesystem))
            if any(s.workflow for s in plan.available())
            else []
        )
        files = file_tools(plan.filesystem, skill_dirs=self.pipeline.skill_dirs)
        tools = [*tools, *files, *self._learning_tools(plan.context), *workflows, *self.tools]
        return self._gated(tools, plan, session, pending, control, current)

    def _gated(
        self,
        tools: list[Tool],
        plan: TurnPlan,
        session: Session,
        pending: list[Event],
        control: RunControl | None,
        current: Sequence[ResolvedSkill],
    ) -> list[Tool]:
        """``tools`` behind the approval policy; calls wait for the app only in a run it started.
        ``{skill_root}`` is a ``current`` skill's (the invoked one) or one the conversation loaded."""
        if self._gate is None:
            return tools

        def roots() -> tuple[str, ...]:
            return skill_roots([*current, *(plan.find(skill_id) for skill_id in sorted(session.loaded))])

        waiting = control.waiting if control is not None else None
        gating = Gating(context=plan.context, agent=self.name, events=pending, roots=roots, waiting=waiting)
        return self._gate.wrap(tools, gating)

    def _audit(self) -> AuditLog:
        """Where approval decisions are recorded: the learning loop's audit log, else one on the
        shared workspace (``skills/.audit/``)."""
        return self.learning.audit if self.learning is not None else AuditLog(self.filesystem)

    async def _admit_script(self, plan: TurnPlan, command: str, workflow: ResolvedSkill) -> None:
        """Raise ``ToolDenied`` unless the approval policy allows a workflow script's command
        (``workflow``: the workflow skill, its ``{skill_root}`` unless the user wrote it)."""
        if self._gate is not None:
            gating = Gating(context=plan.context, agent=self.name, events=[], roots=lambda: skill_roots([workflow]))
            await self._gate.admit(SHELL_TOOL, "shell", {"command": command}, gating)

    def _learning_tools(self, context: RuntimeContext) -> list[Tool]:
        return self.learning.tools(context) if self.learning is not None else []

    # -- self-learning ---------------------------------------------------------------------
    # The operator's side of the loop, documented on the agent; each method forwards to
    # ``self.learning`` through the one check in ``_learning()``.

    def _learning(self) -> SelfLearning:
        if self.learning is None:
            raise HarnessError(f"agent {self.name!r} has no self-learning loop (create it with learning=True)")
        return self.learning

    async def request_promotion(self, name: str, *, context: RuntimeContext, reason: str = "") -> PromotionResult:
        """Ask the configured gate to promote the caller's draft ``name``."""
        return await self._learning().request_promotion(name, context=context, reason=reason)

    async def promote_skill(
        self, name: str, reviewer: str, *, context: RuntimeContext | None = None
    ) -> PromotionResult:
        """An operator's explicit promotion of a draft (no gate; audited)."""
        return await self._learning().promote_skill(name, reviewer, context=context)

    async def run_curator_once(self, *, dry_run: bool = False) -> CuratorReport:
        """Run the curator now, bypassing its throttle."""
        return await self._learning().run_curator_once(dry_run=dry_run)

    async def query_audit(
        self, day: str | None = None, predicate: Callable[[AuditRecord], bool] | None = None
    ) -> list[AuditRecord]:
        """Audit records of a UTC day (``YYYY-MM-DD``; all days when None) matching ``predicate``."""
        return await self._learning().query_audit(day, predicate)

    async def _call(
        self, tools: dict[str, Tool], call: ToolCall, context: RuntimeContext, skill: ResolvedSkill | None
    ) -> tuple[str, str | None]:
        """The call's result, and what failed (None when it did not); the tool runs with the
        call's :class:`ToolContext` (``skill``: the turn's invoked skill)."""
        tool = tools.get(call.name)
        if tool is None:
            return f"error: there is no tool named {call.name!r}; available: {', '.join(sorted(tools))}", "unknown_tool"
        name = skill.skill.name if skill is not None else None
        try:
            with calling(call_context(context, call_id=call.id, tool=call.name, skill=name)):
                return await tool.call(call.arguments), None
        except Exception as exc:  # a tool's failure goes back to the model, never ends the run
            log.info("tool %s failed: %s", call.name, exc)
            return f"error: {type(exc).__name__}: {exc}", type(exc).__name__


def _trusted(resolved: ResolvedSkill, trusted_markets: Collection[str]) -> bool:
    """Whether a skill's fields may choose a provider or narrow tools: every skill but a market
    one, which needs its market's slug (or, for a plugin's skill, its plugin's exact slug,
    never one its name only folds to) listed."""
    if resolved.skill.layer is not Layer.MARKET:
        return True
    market, plugin = resolved.source.source, resolved.entry.plugin
    return market in trusted_markets or (plugin != "" and exact_sub_source(market, plugin) in trusted_markets)


def _invocable_list(plan: TurnPlan, user: bool) -> str:
    """The skills a ``/skill:`` command may name, each with its ``argument-hint``."""
    entries = []
    for resolved in sorted(plan.skills.values(), key=lambda s: s.skill.name):
        fields = resolved.skill.metadata
        if user and not user_invocable(fields):
            continue
        hint = argument_hint(fields)
        entries.append(f"{resolved.skill.name} {hint}" if hint else resolved.skill.name)
    return "available: " + ", ".join(entries)

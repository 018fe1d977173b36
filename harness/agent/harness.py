"""The harness agent: the public face of an agent's turns, runs, workflows and learning loop.

:class:`Harness` builds the parts from its options and hands each call to the part that does
it: a turn to :class:`~harness.agent.turn.Turns`, a run the app starts (input hooks, queues,
approvals) to :class:`~harness.agent.runs.Runs`, the tool set to
:class:`~harness.agent.toolset.Toolset`. The workflow engine, the learning loop and the tracer
are built when configured or first used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from filesystems import AbstractFilesystem, AsyncResource, Fixed, LocalFilesystem, redact_secrets
from harness.agent.model_choice import ModelChoice
from harness.agent.options import (
    ControlOptions,
    LearningOptions,
    PipelineOptions,
    TrustOptions,
    as_learning,
    config_options,
)
from harness.agent.relevance import UsageRelevance
from harness.agent.runs import RunResult, Runs, collect
from harness.agent.sessions import InMemorySessionStore, SessionStore
from harness.agent.streaming import framed
from harness.agent.toolset import ToolOffer, Toolset, TurnScope, serialised
from harness.agent.turn import StepLimitExceeded, Turns
from harness.context import RuntimeContext
from harness.errors import ConfigError, HarnessError
from harness.events import Event
from harness.models import Model, open_model
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import SHELL_TOOL
from harness.pipeline.plan import ResolvedSkill, TurnPlan
from harness.tools.function import Tool, tool_from_function
from repositories import SkillRepository, open_repository

if TYPE_CHECKING:
    from harness.approval import ApprovalGate, ToolRequest
    from harness.audit import AuditLog
    from harness.config import HarnessConfig
    from harness.engine import Decision as WorkflowDecision
    from harness.engine import Outcome, Run, WorkflowEngine
    from harness.learning import AuditRecord, CuratorConfig, CuratorReport, PromotionResult, SelfLearning
    from harness.tools.skills import UsageHooks
    from harness.tracing import RunMetrics, RunTracer

__all__ = ["Harness", "RunResult", "StepLimitExceeded"]


class Harness(AsyncResource):
    """An agent with skills. Configure with keywords (or :meth:`from_config`), then use as an
    async context manager::

        async with Harness(name="assistant", model="demo", workspace="./ws") as agent:
            result = await agent.run("hello", context=RuntimeContext(user_id="alice"))

    ``name`` is the agent id. ``filesystem`` defaults to a local workspace with a shell at
    ``workspace``. ``repositories`` are the markets (later wins). ``tools`` are extra tools:
    ``Tool`` objects or plain typed (async) functions. ``skills`` restricts the catalog to those
    names (used by subagents). ``sessions`` is where conversations and runs paused for
    approval live: a :class:`~harness.agent.sessions.SessionStore` or its URL (``memory:``, the
    default; ``sqlite:///path``; ``mysql://...``, shared by replicas); the agent opens and
    closes it with its other resources. ``tracer_provider`` is the OpenTelemetry tracer provider runs are
    traced with (default: the global one; see :class:`~harness.tracing.RunTracer`);
    ``meter_provider`` the meter provider its runs and pipeline are measured with (default: the
    global one once the application sets it; see :class:`~harness.tracing.RunMetrics`).

    The rest comes in groups (:mod:`harness.agent.options`): ``pipeline`` — how skills are
    found and shown (:class:`PipelineOptions`), or another agent's :class:`SkillPipeline` to
    share with its filesystem and markets (see :meth:`subagent`); ``trust`` — what a skill's
    ``model:`` and ``allowed-tools`` may choose (:class:`TrustOptions`); ``control`` — the
    approval policy and approver, the input hooks and the queue limits (:class:`ControlOptions`;
    :meth:`steer` and :meth:`follow_up` queue messages for a run in progress); ``learning`` —
    the self-learning loop, the curator and the catalog's order by usage
    (:class:`LearningOptions`; ``True`` or a :class:`~harness.learning.SelfLearning` is
    ``LearningOptions(loop=...)``).

    A model step that asks for several tools runs them side by side; the events still come in
    the order asked (see :mod:`harness.agent.calls`).

    :attr:`model`, :attr:`tools`, :attr:`system_prompt` and :attr:`max_steps` may be assigned
    between turns: the next turn uses them. The other attributes are what the agent is built
    on and raise ``AttributeError`` when assigned, saying how to get another.
    """

    name: Fixed[str] = Fixed("build another agent, or a subagent: agent.subagent(name=...)")
    """The agent id."""
    filesystem: Fixed[AbstractFilesystem] = Fixed("build another agent on the other filesystem")
    """The shared workspace the agent works in."""
    repositories: Fixed[tuple[SkillRepository, ...]] = Fixed("build another agent with repositories=[...]")
    """The markets, later winning."""
    sessions: Fixed[SessionStore] = Fixed("build another agent with sessions=...")
    """Where conversations and paused runs live."""
    trust: Fixed[TrustOptions] = Fixed("build another agent with trust=TrustOptions(...)")
    """What an invoked skill's own fields may choose."""
    control: Fixed[ControlOptions] = Fixed("build another agent with control=ControlOptions(...)")
    """The approval policy and approver, the input hooks and the queue limits."""
    skill_names: Fixed[frozenset[str] | None] = Fixed(
        "build a subagent with those skills: agent.subagent(skills=[...])"
    )
    """The names the catalog is restricted to (``None``: every skill)."""
    learning: Fixed[SelfLearning | None] = Fixed("build another agent with learning=...")
    """The self-learning loop (``None`` without one)."""
    usage: Fixed[UsageHooks | None] = Fixed("build another agent with learning=LearningOptions(usage=...)")
    """Where the skill tools report views and uses (the loop's recorder with a loop)."""
    curator: Fixed[CuratorConfig | None] = Fixed("build another agent with learning=LearningOptions(curator=...)")
    """The curator's schedule, run while the agent is entered (``None``: not run)."""
    pipeline: Fixed[SkillPipeline] = Fixed(
        "build another agent with pipeline=...; catalog_budget, catalog_format and relevance may be set on it"
    )
    """The skill pipeline every turn is prepared by (shared with subagents)."""
    usage_relevance: Fixed[UsageRelevance | None] = Fixed("build another agent with learning=LearningOptions(...)")
    """Keeps the catalog's order in step with the usage counts (``None`` without learning)."""

    def __init__(
        self,
        *,
        name: str = "assistant",
        model: Model | str = "demo",
        workspace: str | Path | None = None,
        filesystem: AbstractFilesystem | None = None,
        repositories: Sequence[SkillRepository] = (),
        tools: Sequence[Tool | Callable[..., Any]] = (),
        system_prompt: str = "You are a helpful assistant.",
        max_steps: int = 20,
        sessions: SessionStore | str | None = None,
        skills: Collection[str] | None = None,
        tracer_provider: Any | None = None,
        meter_provider: Any | None = None,
        pipeline: PipelineOptions | SkillPipeline = PipelineOptions(),
        trust: TrustOptions = TrustOptions(),
        control: ControlOptions = ControlOptions(),
        learning: LearningOptions | bool | SelfLearning = False,
    ) -> None:
        super().__init__()
        if filesystem is None:
            if workspace is None:
                raise ValueError("give a workspace folder or a filesystem")
            filesystem = LocalFilesystem(Path(workspace), shell=True)
        _check_max_steps(max_steps)
        self.name = name
        self._models: dict[object, Model] = {}  # every model given, by spec or identity: closed with the agent
        first_model = self._adopt(model)
        self.filesystem = filesystem
        self.repositories = tuple(repositories)
        self.sessions = _session_store(sessions)
        self.trust, self.control = trust, control
        self.skill_names = frozenset(skills) if skills is not None else None
        options = as_learning(learning)
        self.learning = self._learning_loop(options.loop)
        self.usage = options.usage or (self.learning.recorder if self.learning is not None else None)
        self.curator = options.curator
        # An agent built around another's pipeline (a subagent) shares its resources: the
        # owner opens and closes them.
        self._owns_resources = not isinstance(pipeline, SkillPipeline)
        self.pipeline = (
            pipeline
            if isinstance(pipeline, SkillPipeline)
            else pipeline.build(
                filesystem,
                self.repositories,
                visibility=self.learning.visibility if self.learning is not None else None,
                trusted_markets=frozenset(trust.trusted_markets),
            )
        )
        self.usage_relevance = (
            UsageRelevance(self.pipeline, self.learning.usage, interval=options.relevance_interval)
            if self.learning is not None and options.relevance_interval is not None and self._owns_resources
            else None
        )
        self._stack = AsyncExitStack()
        self._gate = self._approval_gate(control, trust)
        self._toolset = Toolset(
            agent=name,
            filesystem=filesystem,
            skill_dirs=self.pipeline.skill_dirs,
            usage=self.usage,
            learning=self.learning,
            gate=self._gate,
        )
        self._toolset.use_tools(_as_tools(tools))
        self._turns = Turns(
            name=name,
            pipeline=self.pipeline,
            sessions=self.sessions,
            models=ModelChoice(first_model, trust, self._stack),
            toolset=self._toolset,
            system_prompt=system_prompt,
            max_steps=max_steps,
            skill_names=self.skill_names,
        )
        self._runs = Runs(self._turns, control, self._gate)
        self._tracer_provider = tracer_provider
        self._tracer: RunTracer | None = None
        self._meter_provider = meter_provider
        self._metrics: RunMetrics | None = None

    def _approval_gate(self, control: ControlOptions, trust: TrustOptions) -> ApprovalGate | None:
        """The gate of the agent's calls, ``None`` when nothing is gated. Markets whose skills
        need an activation approval (every MCP market) gate the shell even without a policy:
        ordinary calls are allowed, acting on such a skill is asked about."""
        needs_gate = (
            control.approval is not None
            or bool(trust.activation_markets)
            or any(r.activation_approval for r in self.repositories)
        )
        if not needs_gate:
            return None
        # The approval module (policies, the gate, paused runs) loads only for an agent that gates.
        from harness.approval import ActivationApprovals, AllowAll, ApprovalGate

        return ApprovalGate(
            policy=control.approval or AllowAll(),
            approver=serialised(control.approver),
            audit=self._audit(),
            activations=ActivationApprovals(trust.trusted_markets, markets=trust.activation_markets),
        )

    def _learning_loop(self, loop: bool | SelfLearning) -> SelfLearning | None:
        if loop is not True:
            return loop or None
        from harness.learning import SelfLearning

        return SelfLearning(self.filesystem, on_change=lambda user_id: self.pipeline.invalidate(user_id))

    @classmethod
    def from_config(cls, config: HarnessConfig | str | Path, **overrides: Any) -> Harness:
        """The agent a ``harness.yaml`` (a path, or a loaded :class:`HarnessConfig`) describes.

        Keyword ``overrides`` are constructor arguments, or fields of an option group (``watch``,
        ``approval``: the rest of the group still comes from the file), and win over the file.
        Raises :class:`ConfigError` for a bad file, store or mode.
        """
        from harness.config import HarnessConfig, load_config  # the config names every optional part

        if not isinstance(config, HarnessConfig):
            config = load_config(config)
        options = config_options(config, overrides)
        # Open resources only for what the overrides leave to the file.
        if "filesystem" not in options:
            options["filesystem"] = config.open_filesystem()
        if "repositories" not in options:
            options["repositories"] = [open_repository(url) for url in config.repositories]
        if "sessions" not in options:
            from harness.agent.sessions.registry import open_session_store

            sessions = config.sessions
            try:
                options["sessions"] = open_session_store(
                    sessions.store, max_messages=sessions.max_messages, max_age=sessions.max_age
                )
            except ValueError as exc:
                raise ConfigError(f"sessions: {redact_secrets(str(exc))}") from None
        return cls(**options)

    async def __aenter__(self) -> Self:
        if self._owns_resources:
            await self._stack.enter_async_context(self.filesystem)
            for repository in self.repositories:
                await self._stack.enter_async_context(repository)
            self._stack.push_async_callback(self._close_models)  # those it was given besides the current one
            await self._stack.enter_async_context(self.model)
            await self._stack.enter_async_context(self.pipeline)
            await self._stack.enter_async_context(self.sessions)
            self.metrics.watch(self.pipeline)
        if self.usage_relevance is not None:
            await self._stack.enter_async_context(self.usage_relevance)
        if self.curator is not None:  # the curator runs itself while the agent is entered
            learning = self.learning or self._learning_loop(True)
            assert learning is not None
            await self._stack.enter_async_context(learning.curator_task(self.curator, model=self.model))
        return await super().__aenter__()

    async def _aclose(self) -> None:
        """Close the pipeline, model, markets and filesystem this agent owns."""
        await self._stack.aclose()

    # -- what may change between turns ---------------------------------------------------

    @property
    def model(self) -> Model:
        """The model of the agent's turns (an invoked skill may pick another, see
        :class:`TrustOptions`). Assigning a :class:`~harness.models.Model` or an
        :func:`~harness.models.open_model` spec makes the next turns use it; a run in progress
        finishes with the model it started with. The agent keeps every model it was given (a
        spec is opened once, an instance kept once however often it is assigned) and closes them
        when it closes, so switch between a few rather than assign a new instance each time.
        The curator's umbrella review keeps the model the agent had when it was entered."""
        return self._turns.models.default

    @model.setter
    def model(self, model: Model | str) -> None:
        self._retune(models=self._turns.models.with_default(self._adopt(model)))

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The agent's own tools. Assigning a sequence of ``Tool`` objects or typed (async)
        functions makes the next turns offer them, behind the approval gate like every tool;
        their names are checked as the constructor's are (:class:`ConfigError`, nothing changed)."""
        return self._toolset.user_tools

    @tools.setter
    def tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> None:
        self._toolset.use_tools(_as_tools(tools))

    @property
    def system_prompt(self) -> str:
        """The system prompt before the skills catalog; assigning it changes the next turns'."""
        return self._turns.system_prompt

    @system_prompt.setter
    def system_prompt(self, system_prompt: str) -> None:
        self._retune(system_prompt=system_prompt)

    @property
    def max_steps(self) -> int:
        """Model calls in one turn (at least 1); assigning it changes the next turns'."""
        return self._turns.max_steps

    @max_steps.setter
    def max_steps(self, max_steps: int) -> None:
        _check_max_steps(max_steps)
        self._retune(max_steps=max_steps)

    def _retune(self, **changes: Any) -> None:
        """The next turns (and the runs that take them) built with ``changes``."""
        self._turns = dataclasses.replace(self._turns, **changes)
        self._runs.turns = self._turns

    def _adopt(self, model: Model | str) -> Model:
        """``model`` (a spec opened on first use) among the models the agent closes."""
        key = model if isinstance(model, str) else id(model)
        known = self._models.get(key)
        if known is None:
            known = self._models[key] = open_model(model) if isinstance(model, str) else model
        return known

    async def _close_models(self) -> None:
        """Close every model the agent was given, one failing not keeping the others open."""
        async with AsyncExitStack() as stack:
            for model in self._models.values():
                stack.push_async_callback(model.aclose)

    @property
    def tracer(self) -> RunTracer:
        """What runs are traced with (built on the first run)."""
        if self._tracer is None:
            from harness.tracing import RunTracer

            self._tracer = RunTracer(self._tracer_provider)
        return self._tracer

    @property
    def metrics(self) -> RunMetrics:
        """What runs and the pipeline are measured with (built on first use)."""
        if self._metrics is None:
            from harness.tracing import RunMetrics

            self._metrics = RunMetrics(self._meter_provider)
        return self._metrics

    # -- turns -------------------------------------------------------------------------------

    async def prepare(self, context: RuntimeContext) -> TurnPlan:
        """Run the per-turn pipeline for ``context`` (what every turn does first)."""
        return await self._turns.prepare(context)

    async def run(self, message: str, *, context: RuntimeContext, idempotency_key: str | None = None) -> RunResult:
        """One user turn: returns the final reply with usage and the turn's events.

        ``idempotency_key`` (unique per message the client sends, kept when it retries) makes a
        retry safe: a key answered before in the conversation is answered again from the
        session store (``RunResult.replayed``), even while the first run is in progress or on
        another replica sharing the store, and the model does not run again nor is the turn
        stored twice; the key sent with another message raises
        :class:`~harness.agent.sessions.IdempotencyKeyReused` (see :mod:`harness.agent.requests`)."""
        turn = self._runs.controlled(message, context, idempotency_key=idempotency_key)
        return await collect(self._traced(message, context, turn))

    async def skill(self, name: str, instructions: str = "", *, context: RuntimeContext) -> RunResult:
        """Invoke a skill explicitly (hidden skills too); raises ``SkillNotFound`` if unknown."""
        message = f"/skill:{name} {instructions}".rstrip()
        turn = self._runs.controlled(message, context, strict=True, user_input=False)
        return await collect(self._traced(message, context, turn))

    def stream(
        self, message: str, *, context: RuntimeContext, idempotency_key: str | None = None
    ) -> AsyncIterator[Event]:
        """Like :meth:`run` (``idempotency_key`` too: a retry yields :class:`RunReplayed` and the
        stored answer), yielding typed events as they happen: :class:`RunStarted` first,
        the model's replies as :class:`TextDelta` / :class:`ToolCallDelta` pieces as the model
        writes them, and :class:`RunFinished` with the run's usage last.

        A message ``/skill:<name> args`` invokes that skill explicitly; an unknown name is
        reported as the reply without calling the model. The calls of one model step run side
        by side; each call's ``ToolCalled``, its own events and its ``ToolReturned`` come in
        the order the model asked for them.
        """
        turn = self._runs.controlled(message, context, stream=True, idempotency_key=idempotency_key)
        return framed(self._traced(message, context, turn), agent=self.name, context=context)

    def _traced(self, message: str, context: RuntimeContext, turn: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """``turn`` traced and measured as one run of this agent."""
        traced = self.tracer.trace(turn, agent=self.name, model=self.model.name, context=context, message=message)
        return self.metrics.measure(traced, agent=self.name)

    async def _step_turn(
        self, name: str, instructions: str, *, context: RuntimeContext, offer: ToolOffer | None = None
    ) -> RunResult:
        """A skill turn (:meth:`skill`) of a workflow step, offered only ``offer(tools)``."""
        message = f"/skill:{name} {instructions}".rstrip()
        turn = self._turns.run(message, context, strict=True, offer=offer)
        return await collect(self._traced(message, context, turn))

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
            tools=self.tools if tools is None else tools,
            system_prompt=self.system_prompt if system_prompt is None else system_prompt,
            max_steps=self.max_steps,
            skills=skills if skills is not None else self.skill_names,
            tracer_provider=self._tracer_provider,
            meter_provider=self._meter_provider,
            pipeline=self.pipeline,
            trust=self.trust,
            control=ControlOptions(approval=self.control.approval, approver=self.control.approver),
            learning=LearningOptions(loop=self.learning or False, usage=self.usage),
        )

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
        return self._toolset.build(TurnScope(plan=plan, current=tuple(current), shell=shell), only=only)

    # -- input hooks, message queues, approvals --------------------------------------------

    async def steer(self, text: str, *, context: RuntimeContext) -> None:
        """Inject ``text`` (a ``/skill:`` command is expanded first) as a user message into the
        run in progress for ``context``'s user and session, at its next step boundary. Raises
        :class:`~harness.agent.queues.NoActiveRun` when there is none and ``SkillNotFound`` for
        an unknown skill. ``on_input`` and ``before_run`` do not run for it."""
        control, expanded = await self._runs.queued(text, context)
        control.steer(expanded)

    async def follow_up(self, text: str, *, context: RuntimeContext) -> None:
        """Queue ``text`` to run as a turn of its own after the run in progress for ``context``'s
        user and session has answered (in the same run: its events join the run's stream).
        Raises like :meth:`steer`."""
        control, _ = await self._runs.queued(text, context)
        control.follow_up(text)

    async def pending_approvals(self, context: RuntimeContext) -> list[ToolRequest]:
        """The calls of ``context``'s paused run that wait for :meth:`resolve_approval` (read
        from the conversation store: a run paused on another replica, or before a restart,
        is listed too)."""
        return await self._runs.pending(context)

    async def resolve_approval(
        self, approval_id: str, *, approved: bool, context: RuntimeContext, reviewer: str = "app", reason: str = ""
    ) -> None:
        """The app's decision on a waiting call (an event and an audit record by
        ``operator:<reviewer>``); the call runs, or is refused, on :meth:`resume`. Raises
        :class:`~harness.approval.ApprovalNotFound` for an id that does not wait for this
        user and session."""
        await self._runs.decide(approval_id, approved=approved, context=context, reviewer=reviewer, reason=reason)

    async def resume(self, *, context: RuntimeContext) -> RunResult:
        """Continue the paused run of ``context``'s user and session once every waiting call is
        decided: allowed calls run, denied ones return their refusal, and the model goes on."""
        return await collect(self._traced("", context, self._runs.controlled(None, context)))

    def resume_stream(self, *, context: RuntimeContext) -> AsyncIterator[Event]:
        """Like :meth:`resume`, yielding typed events as they happen (framed like :meth:`stream`)."""
        turn = self._runs.controlled(None, context, stream=True)
        return framed(self._traced("", context, turn), agent=self.name, context=context)

    # -- workflows -----------------------------------------------------------------------------

    def workflow_engine(self, context: RuntimeContext) -> WorkflowEngine:
        """The workflow engine over ``context.user_id``'s own area (their runs)."""
        return self._toolset.workflow_engine(context)

    async def run_workflow(
        self, skill: str, *, context: RuntimeContext, run_id: str | None = None, inputs: dict[str, Any] | None = None
    ) -> Run:
        """Start a run of the workflow skill ``skill`` and perform its actions until it needs a
        person (``ask_user``, a handoff, a confirmation) or ends."""
        from harness.agent.workflows import AgentExecutor, package_for, refuse_unactivated, resolve_workflow

        plan = await self.prepare(context)
        resolved = resolve_workflow(plan, skill, workspace=self.filesystem)
        refuse_unactivated(self._gate.activations if self._gate is not None else None, resolved)
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
        from harness.agent.workflows import AgentExecutor

        engine = self.workflow_engine(context)
        run = await engine.resume(run_id, outcome, confirm=confirm)
        if decision is not None:
            run = await engine.resolve(run_id, decision, note=note)
        return await engine.run_until_blocked(run.run_id, AgentExecutor(self, context, workflow_skill=run.skill))

    async def _admit_script(self, plan: TurnPlan, command: str, workflow: ResolvedSkill) -> None:
        """Raise ``ToolDenied`` unless the approval policy allows a workflow script's command."""
        await self._toolset.admit_script(plan, command, workflow)

    def _hidden_folders(self, plan: TurnPlan) -> tuple[str, ...]:
        """The staged folders a workflow script's command must not see (see :meth:`Toolset.hidden_folders`)."""
        return self._toolset.hidden_folders(plan)

    def _audit(self) -> AuditLog:
        """Where approval decisions are recorded: the learning loop's audit log, else one on the
        shared workspace (``skills/.audit/``)."""
        from harness.audit import AuditLog  # loaded only for an approval policy

        return self.learning.audit if self.learning is not None else AuditLog(self.filesystem)

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


def _check_max_steps(max_steps: int) -> None:
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")


def _as_tools(tools: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
    """``tools`` as ``Tool`` objects: typed (async) functions become tools."""
    return [t if isinstance(t, Tool) else tool_from_function(t) for t in tools]


def _session_store(sessions: SessionStore | str | None) -> SessionStore:
    """The store ``sessions`` names: an instance, a URL, or ``None`` for one in memory."""
    if not isinstance(sessions, str):
        return sessions or InMemorySessionStore()
    from harness.agent.sessions.registry import open_session_store  # the scheme registry, on first use

    return open_session_store(sessions)

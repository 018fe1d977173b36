"""One turn: the plan, the invoked skill, the model and the tools, then the model ↔ tools loop.

:meth:`Turns.run` is a turn in phases, each a module of its own:

1. **prepare**: the skill pipeline's :class:`~harness.pipeline.plan.TurnPlan` for the user
   (:meth:`Turns.prepare`, restricted to the agent's skills);
2. **expand**: a ``/skill:`` message becomes the skill's body (:mod:`harness.agent.expansion`);
3. **model**: the invoked skill's ``model:`` or the agent's (:mod:`harness.agent.model_choice`);
   a ``context: fork`` skill runs as a subagent turn instead (:meth:`Turns.fork`);
4. **tools**: the turn's tool set (:mod:`harness.agent.toolset`), narrowed to the skill's
   ``allowed-tools`` when trusted (or, for a skill that needs an activation approval, once
   the user gave it at the skill's current content);
5. **loop**: the model is called up to ``max_steps`` times; the calls of one step run side by
   side (:mod:`harness.agent.calls`) and are reported in the order asked; the final reply
   ends the turn and joins the session.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.agent.calls import CallEvents, CallResult, run_calls
from harness.agent.expansion import Invocation, expand, fetch_invoked
from harness.agent.hooks import RunStart
from harness.agent.model_choice import ModelChoice
from harness.agent.queues import RunControl
from harness.agent.sessions import InMemorySessionStore, Session, SessionStore
from harness.agent.streaming import ModelStep
from harness.agent.toolset import ToolOffer, Toolset, TurnScope, skill_offer
from harness.context import RuntimeContext
from harness.errors import HarnessError, SkillNotFound
from harness.events import (
    Event,
    MessageInjected,
    ModelReplied,
    SubagentFinished,
    SubagentStarted,
    ToolCalled,
    ToolReturned,
    TurnPrepared,
)
from harness.models import Message, Model, ToolCall, Usage
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from harness.skills.arguments import text_field

if TYPE_CHECKING:
    from harness.approval import ToolRequest

__all__ = ["StepLimitExceeded", "Turns"]

log = logging.getLogger(__name__)


class StepLimitExceeded(HarnessError):
    """The model kept calling tools past ``max_steps``."""


@dataclass(frozen=True, kw_only=True)
class Turns:
    """The turns of one agent (``name``): what each phase needs, and nothing of the app's runs."""

    name: str
    pipeline: SkillPipeline
    sessions: SessionStore
    models: ModelChoice
    toolset: Toolset
    system_prompt: str
    max_steps: int
    skill_names: frozenset[str] | None = None

    async def prepare(self, context: RuntimeContext) -> TurnPlan:
        """The pipeline's plan for ``context``, restricted to ``skill_names`` when set."""
        plan = await self.pipeline.prepare(context)
        if self.skill_names is not None:
            names = self.skill_names
            plan.skills = {k: v for k, v in plan.skills.items() if v.skill.name in names}
            plan.shadowed_skills = {k: v for k, v in plan.shadowed_skills.items() if v.skill.name in names}
            plan.catalog = self.pipeline.render(plan.skills, plan.shadowed_skills)
        return plan

    def expand(self, message: str, plan: TurnPlan, *, user: bool) -> Invocation:
        """``message`` with a ``/skill:`` command expanded (see :func:`expand`)."""
        return expand(message, plan, user=user, agent=self.name, skill_names=self.skill_names)

    def forked(self, name: str, model: Model) -> Turns:
        """The turns of a subagent named ``name`` on ``model`` that shares everything else but
        the conversation store."""
        return dataclasses.replace(
            self,
            name=name,
            sessions=InMemorySessionStore(),
            models=self.models.with_default(model),
            toolset=self.toolset.renamed(name),
        )

    async def run(
        self,
        message: str,
        context: RuntimeContext,
        *,
        strict: bool,
        offer: ToolOffer | None = None,
        stream: bool = False,
        control: RunControl | None = None,
    ) -> AsyncIterator[Event]:
        """One turn of ``message`` (``strict``: an unknown ``/skill:`` raises instead of being
        the reply); ``offer`` narrows its tools, ``control`` is the app's run it belongs to."""
        plan = await self.prepare(context)
        yield TurnPrepared.of(plan)
        log.debug("turn of agent %s for user %s: %d skills", self.name, context.user_id, len(plan.skills))
        try:
            await fetch_invoked(message, plan)
            invocation = self.expand(message, plan, user=not strict)
        except SkillNotFound as exc:
            if strict:
                raise
            yield ModelReplied(content=str(exc), usage=Usage(), final=True)
            return
        model, warning = await self.models.for_skill(invocation.skill)
        if warning is not None:
            yield warning
        if invocation.skill is not None:
            unlocked = self.toolset.unlocked(context, invocation.skill)
            offer = skill_offer(invocation.skill, self.models.trust, offer, unlocked=unlocked)
            if invocation.skill.skill.metadata.get("context") == "fork":
                async for event in self.fork(
                    invocation, message, context, model, offer, stream=stream, control=control
                ):
                    yield event
                return
        async for event in self._loop(plan, invocation, message, model, offer, strict, stream, control):
            yield event

    async def _loop(
        self,
        plan: TurnPlan,
        invocation: Invocation,
        message: str,
        model: Model,
        offer: ToolOffer | None,
        strict: bool,
        stream: bool,
        control: RunControl | None,
    ) -> AsyncIterator[Event]:
        context = plan.context
        session = await self.sessions.get(context.user_id, context.session_id)
        events = CallEvents()
        scope = TurnScope(
            plan=plan,
            session=session,
            events=events,
            waiting=control.waiting if control is not None else None,
            current=() if invocation.skill is None else (invocation.skill,),
        )
        built = self.toolset.for_turn(scope, offer=offer)
        tools = {t.name: t for t in built.tools}
        specs = [t.spec for t in tools.values()]
        system = "\n\n".join(part for part in (self.system_prompt, plan.catalog) if part)
        turn: list[Message] = [Message.user(invocation.text)]
        skill = invocation.skill.skill.name if invocation.skill is not None else None
        if control is not None:  # before_run's context, or a resumed run's turn so far
            start = RunStart(
                context=context, message=invocation.text, original=message, skill=skill, plan=plan, tools=tuple(tools)
            )

            async def run_decided(request: ToolRequest, call_id: str) -> CallResult:
                return await self.toolset.run_decided(scope, request, offered=tools, call_id=call_id, skill=skill)

            async for event in control.opening(turn, start, run_decided):
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
                await self._save(context, session, turn, control, reply=reply.message.content)
                return
            calls = reply.message.tool_calls
            if calls:
                yield _called(calls[0])
                results = await run_calls(
                    tools, calls, context=context, skill=skill, events=events, sequential=built.sequential
                )
                for index, (call, result) in enumerate(zip(calls, results, strict=True)):
                    if index:
                        yield _called(call)
                    for event in result.events:
                        yield event
                    error = result.error_type is not None
                    yield ToolReturned(
                        call_id=call.id,
                        name=call.name,
                        content=result.content,
                        error=error,
                        error_type=result.error_type,
                        duration=result.duration,
                    )
                    turn.append(Message.tool_result(call, result.content))
            if control is not None:  # a step boundary: pause for approvals, or take steering
                if await control.pause(turn, message=message, strict=strict):
                    return
                for text in control.take_steering():
                    yield MessageInjected(kind="steer", text=text)
                    turn.append(Message.user(text))
        problem = (
            f"agent {self.name!r} stopped after {self.max_steps} model steps without a final answer "
            "(raise max_steps if the task needs more)"
        )
        await self._save(context, session, turn, control, error=problem)
        raise StepLimitExceeded(problem)

    async def fork(
        self,
        invocation: Invocation,
        message: str,
        context: RuntimeContext,
        model: Model,
        offer: ToolOffer | None,
        *,
        stream: bool = False,
        control: RunControl | None = None,
    ) -> AsyncIterator[Event]:
        """Run a ``context: fork`` skill as a subagent turn with the skill's body as its task;
        the subagent's answer ends this turn and joins this session. Its events come between
        :class:`SubagentStarted` and :class:`SubagentFinished`, streamed (deltas) when ``stream``."""
        assert invocation.skill is not None
        skill = invocation.skill.skill
        name = text_field(skill.metadata, "agent") or f"{self.name}.{skill.name}"
        child = self.forked(name, model)
        child_context = dataclasses.replace(context, session_id=f"{context.session_id}/fork/{skill.name}")
        import uuid

        run_id = uuid.uuid4().hex
        yield SubagentStarted(run_id=run_id, agent=name, skill=skill.name, session_id=child_context.session_id)
        answer = ""
        async for event in child.run(invocation.text, child_context, strict=True, offer=offer, stream=stream):
            if isinstance(event, ModelReplied) and event.final:
                answer = event.content
            yield event
        await self._store(context, _exchange(message, answer), (), control, reply=answer)
        yield SubagentFinished(run_id=run_id, agent=name, reply=answer)

    async def _save(
        self,
        context: RuntimeContext,
        session: Session,
        turn: list[Message],
        control: RunControl | None,
        *,
        reply: str = "",
        error: str | None = None,
    ) -> None:
        """Append the turn to the conversation (one transaction: a turn is kept whole or not at
        all), with the skills it loaded."""
        await self._store(context, turn, session.loaded, control, reply=reply, error=error)

    async def _store(
        self,
        context: RuntimeContext,
        messages: list[Message],
        loaded: Collection[str],
        control: RunControl | None,
        *,
        reply: str = "",
        error: str | None = None,
    ) -> None:
        """Append ``messages``; the first turn a run stores also answers its idempotency key
        with its ``reply`` (or ``error``), in the same transaction."""
        done = control.answering(reply=reply, error=error) if control is not None else None
        stored = await self.sessions.append(context.user_id, context.session_id, messages, loaded=loaded, done=done)
        if not stored:
            log.warning(
                "user %r, session %r: a retry answered this run's idempotency key first; its turn is not stored",
                context.user_id,
                context.session_id,
            )
        if control is not None:
            control.answered(done)


def _called(call: ToolCall) -> ToolCalled:
    return ToolCalled(call_id=call.id, name=call.name, arguments=dict(call.arguments))


def _exchange(message: str, answer: str) -> list[Message]:
    return [Message.user(message), Message.assistant(answer)]

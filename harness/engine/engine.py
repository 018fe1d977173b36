"""The workflow engine: start, resume, propose, check, upgrade, cancel and drive runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from filesystems import AbstractFilesystem
from harness.engine import transitions
from harness.engine.action import ActionContext, performing
from harness.engine.checks import CheckReport, evaluate_checks
from harness.engine.definition import Action, CheckScope, ToolDecl, Workflow
from harness.engine.errors import OutcomeRefused, RunStateError, SnapshotIntegrityError
from harness.engine.executor import Executor
from harness.engine.loader import load_workflow
from harness.engine.package import SkillPackage
from harness.engine.run import Event, Outcome, Run
from harness.engine.side_files import render_side_file
from harness.engine.snapshot import make_snapshot, verify_snapshot
from harness.engine.store import RevisionMarks, RunKey, RunOwner, RunStore, WritePoint, check_run_id, run_relative
from harness.engine.transitions import Decision

__all__ = ["WorkflowEngine"]

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class _Loaded:
    run: Run
    version: str
    workflow: Workflow


class WorkflowEngine:
    """Runs workflow skills step by step, one persisted action at a time.

    All state lives on ``filesystem`` below ``.harness/`` (see :mod:`harness.engine.store`):
    pass the caller's scoped view (``fs.scoped(user_id)``, or :meth:`for_user`) so every user
    has their own runs. The engine holds no resources and keeps nothing in memory between
    calls, so any process sharing the filesystem can resume any run; two processes advancing
    the same run race on a compare-and-set and exactly one wins (the other gets
    :class:`RunConflict`).

    The engine never performs side effects: it proposes an action, persists it and waits for
    its :class:`Outcome`. ``run_until_blocked`` performs ``call_tool`` / ``invoke_skill``
    actions through an :class:`Executor` and stops at anything else.

    Run records are authenticated with ``key`` (default: the workspace's :class:`RunKey` at
    ``.harness/engine.key`` of ``filesystem``, shared with :meth:`for_user` engines) over their
    content, revision and owner (``agent``, the name of the agent running them, and the user of
    :meth:`for_user`); a record edited outside the engine, copied from another owner's area, or
    older than the newest revision the engine has seen of that run (its high-water mark, kept at
    ``.harness/revisions/`` of ``filesystem``) raises :class:`RunTampered` and nothing is
    performed. Build the engine on the workspace root and call :meth:`for_user`, so the key and
    the marks stay outside users' areas.

    A skill group's contracts (a step's ``writes``, ``final`` artifacts, the ``states`` machine,
    schema versions and ``requires`` at hand-offs) are enforced on every outcome: a breaking
    outcome raises :class:`OutcomeRefused` and changes nothing; a refused hand-off fails the step.
    Packages that ask for Comet's side files get them rewritten after every change.

    ``clock`` returns the current time (UTC) for timestamps; ``before_write`` is called with the
    name of every durable write just before it happens (tracing, fault-injection tests).
    """

    def __init__(
        self,
        filesystem: AbstractFilesystem,
        *,
        clock: Clock | None = None,
        before_write: WritePoint | None = None,
        key: RunKey | None = None,
        agent: str = "",
        _user: str | None = None,
        _marks: RevisionMarks | None = None,
    ) -> None:
        self._filesystem = filesystem
        self._key = key or RunKey(filesystem)
        self._marks = _marks or RevisionMarks(filesystem)
        self.owner = RunOwner(agent=agent, user=_user)
        self._store = RunStore(
            filesystem, before_write=before_write, key=self._key, owner=self.owner, marks=self._marks
        )
        self._clock = clock or (lambda: datetime.now(UTC))
        self._before_write = before_write

    def for_user(self, user_id: str) -> WorkflowEngine:
        """The same engine over ``user_id``'s scoped filesystem (their own runs, signed as theirs;
        key and revision marks stay the workspace's)."""
        return WorkflowEngine(
            self._filesystem.scoped(user_id),
            clock=self._clock,
            before_write=self._before_write,
            key=self._key,
            agent=self.owner.agent,
            _user=user_id,
            _marks=self._marks,
        )

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(
        self,
        skill: SkillPackage,
        *,
        run_id: str | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> Run:
        """Start a run of ``skill``: freeze the package, pin the run to it, propose the first action.

        ``inputs`` seed the run's ``vars``. Raises :class:`WorkflowDefinitionError` for an
        invalid definition and :class:`RunExists` when ``run_id`` is taken.
        """
        run_id = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:16]
        workflow = load_workflow(skill.files, name=skill.name)
        snapshot = make_snapshot(skill, workflow)
        await self._store.save_snapshot(snapshot)
        run = transitions.start(
            workflow, run_id=run_id, snapshot=snapshot.hash, inputs=dict(inputs or {}), now=self._now()
        )
        await self._store.create(run)
        await self._store.flush(run)
        await self._side_files(workflow, run)
        return run

    async def resume(self, run_id: str, outcome: Outcome | None = None, *, confirm: str | None = None) -> Run:
        """Load a run (verifying its snapshot), apply ``outcome`` and/or a confirmation.

        Without arguments it returns the run as stored — how a restarted process picks up;
        events of a write interrupted by a crash are appended to the trajectory first.
        Resubmitting an applied outcome is a no-op; a contradicting one raises
        :class:`OutcomeConflict`. ``confirm`` names the blocked action to confirm.
        """
        loaded = await self._load(run_id)
        await self._store.flush(loaded.run)
        if outcome is not None:
            files = await self._artifact_files(loaded)
            loaded = await self._commit(
                loaded,
                transitions.apply_outcome(loaded.workflow, loaded.run, outcome, files, now=self._now()),
            )
        if confirm is not None:
            loaded = await self._commit(
                loaded, transitions.confirm(loaded.workflow, loaded.run, confirm, now=self._now())
            )
        return loaded.run

    async def resolve(self, run_id: str, decision: Decision, *, note: str = "") -> Run:
        """The operator's ``decision`` for a run blocked by an exhausted retry budget.

        ``retry`` runs the step (or adaptive action) again with a fresh budget, ``skip`` moves on
        as if it had succeeded, ``abort`` fails the run; ``note`` is recorded with the decision
        in the trajectory (``operator_decision``). Like confirmations, decisions come from the
        application or the operator, never from the model's tools. Raises
        :class:`RunStateError` when the run is not blocked by its retry budget.
        """
        loaded = await self._load(run_id)
        await self._store.flush(loaded.run)
        files = await self._artifact_files(loaded)
        changed = transitions.resolve(loaded.workflow, loaded.run, decision, files, note=note, now=self._now())
        return (await self._commit(loaded, changed)).run

    async def propose(
        self,
        run_id: str,
        action: Action,
        *,
        label: str | None = None,
        allowed_tools: tuple[str, ...] | None = None,
    ) -> Run:
        """Adaptive runs: make ``action`` the next pending action (``complete`` finishes the run).

        ``label`` names the action in the trajectory (default: its type); ``allowed_tools``
        may narrow, never widen, the guardrails. Raises :class:`ChecksFailed` for a premature
        ``complete``.
        """
        loaded = await self._load(run_id)
        files = await self._artifact_files(loaded)
        changed = transitions.propose(
            loaded.workflow,
            loaded.run,
            action,
            files,
            label=label,
            allowed_tools=allowed_tools,
            now=self._now(),
        )
        return (await self._commit(loaded, changed)).run

    async def upgrade(self, run_id: str, skill: SkillPackage) -> Run:
        """Move the run to a new version of its skill (the only way to change what it runs).

        Refused with :class:`UpgradeRefused` while an action is pending, for another skill name
        or mode, or when the run's current step is gone. Recorded as a ``run_upgraded`` event.
        """
        loaded = await self._load(run_id)
        workflow = load_workflow(skill.files, name=skill.name)
        snapshot = make_snapshot(skill, workflow)
        changed = transitions.upgrade(loaded.workflow, workflow, loaded.run, snapshot.hash, now=self._now())
        if changed is None:
            return loaded.run
        await self._store.save_snapshot(snapshot)
        return (await self._commit(replace(loaded, workflow=workflow), changed)).run

    async def cancel(self, run_id: str, reason: str = "") -> Run:
        """Cancel an unfinished run (a no-op for a cancelled one)."""
        loaded = await self._load(run_id)
        changed = transitions.cancel(loaded.workflow, loaded.run, reason, now=self._now())
        return (await self._commit(loaded, changed)).run

    # -- reading -----------------------------------------------------------------------------------

    async def inspect(self, run_id: str) -> Run:
        """The run as stored (snapshot verified)."""
        return (await self._load(run_id)).run

    async def workflow(self, run_id: str) -> Workflow:
        """The workflow definition the run is pinned to."""
        return (await self._load(run_id)).workflow

    async def events(self, run_id: str, since: int = 0) -> list[Event]:
        """The run's trajectory events with ``seq > since``, in order."""
        run, _ = await self._store.load(run_id)
        return await self._store.events(run, since)

    async def check(self, run_id: str, scope: CheckScope) -> CheckReport:
        """Evaluate the checks of ``scope`` now, without changing the run.

        ``step`` evaluates the current step's completion checks (or every step-scope check when
        the run is not at a step).
        """
        loaded = await self._load(run_id)
        files = await self._store.artifact_files(run_id)
        ids: tuple[str, ...] | None = None
        run = loaded.run
        if scope == "step" and run.mode == "deterministic" and run.current_step:
            ids = loaded.workflow.step(run.current_step).completion_checks
        return evaluate_checks(loaded.workflow, run, scope, files, ids=ids)

    # -- artifacts ---------------------------------------------------------------------------------

    async def write_artifact(self, run_id: str, path: str, data: bytes) -> str:
        """Store a file under the run's ``artifacts/``; returns ``artifacts/<path>``.

        ``path`` is run-relative: absolute paths, ``~``, drive letters, ``..`` and symlinks
        leading out are refused with :class:`filesystems.PathEscapeError`. The file of a
        ``final`` artifact (its name, or the path it was reported with) is written once:
        replacing it raises :class:`OutcomeRefused`.
        """
        loaded = await self._load(run_id)
        final = _final_file(loaded.workflow, loaded.run, run_relative(path))
        if final is not None and final in await self._store.artifact_files(run_id):
            raise OutcomeRefused(
                f"run {run_id}: artifact {final!r} is final and already written; it cannot be replaced"
            )
        return await self._store.write_artifact(run_id, path, data)

    async def action(self, run_id: str) -> ActionContext | None:
        """The contract of the run's pending action (what it reads, may write, where the domain
        state may move), or ``None`` when nothing is pending."""
        loaded = await self._load(run_id)
        pending = loaded.run.pending
        return transitions.action_context(loaded.workflow, loaded.run, pending) if pending else None

    async def read_artifact(self, run_id: str, path: str) -> bytes:
        """The bytes of the run's artifact file ``path`` (same path rules as ``write_artifact``)."""
        return await self._store.read_artifact(run_id, path)

    # -- driving -----------------------------------------------------------------------------------

    async def run_until_blocked(self, run_id: str, executor: Executor) -> Run:
        """Perform actions through ``executor`` until the run needs someone else.

        ``call_tool`` and ``invoke_skill`` go to the executor, ``checkpoint`` succeeds by
        itself; the loop stops at ``ask_user`` and ``handoff`` (status ``waiting``), at a
        blocked or finished run, and when an adaptive run waits for a proposal. While the
        executor performs an action, :func:`~harness.engine.current_action` returns its
        :class:`ActionContext` (the idempotency key for side effects); an outcome that breaks the
        step's contract is recorded as a failed attempt naming why.
        """
        loaded = await self._load(run_id)
        while loaded.run.status == "running" and loaded.run.pending is not None:
            pending = loaded.run.pending
            context = transitions.action_context(loaded.workflow, loaded.run, pending)
            with performing(context):
                outcome = await self._perform(loaded.workflow, pending.action, pending.allowed_tools, executor)
            outcome = replace(outcome, outcome_id=outcome.outcome_id or pending.id, action_id=pending.id)
            problem = context.refusal(outcome)
            if problem is not None:  # the performer broke the step's contract: the attempt failed
                summary = f"outcome refused: {problem}"
                outcome = Outcome(status="failed", summary=summary, outcome_id=pending.id, action_id=pending.id)
            files = await self._artifact_files(loaded)
            changed = transitions.apply_outcome(loaded.workflow, loaded.run, outcome, files, now=self._now())
            loaded = await self._commit(loaded, changed)
        return loaded.run

    async def _perform(
        self,
        workflow: Workflow,
        action: Action,
        allowed_tools: tuple[str, ...] | None,
        executor: Executor,
    ) -> Outcome:
        if action.type == "checkpoint":
            return Outcome(status="succeeded", summary=action.note or "checkpoint reached")
        try:
            if action.type == "call_tool":
                return await executor.call_tool(workflow.tool(action.ref or ""), action.args)
            if action.type == "invoke_skill":
                tools = tuple(
                    _with_confirmation(workflow, workflow.tool(t))
                    for t in (allowed_tools if allowed_tools is not None else workflow.guardrails.allowed_tools)
                )
                return await executor.invoke_skill(
                    workflow.skill(action.ref or ""), action.instructions, allowed_tools=tools
                )
        except Exception as exc:  # the action failed; the run's routing decides what follows
            return Outcome(status="failed", summary=f"{type(exc).__name__}: {exc}")
        raise RunStateError(f"{action.type} actions are not performed by an executor")

    # -- plumbing ----------------------------------------------------------------------------------

    async def _load(self, run_id: str) -> _Loaded:
        run, version = await self._store.load(run_id)
        try:
            manifest, files = await self._store.load_snapshot(run.snapshot)
            package = verify_snapshot(run.snapshot, manifest, files)
        except (FileNotFoundError, ValueError, KeyError, TypeError) as exc:
            raise SnapshotIntegrityError(
                f"skill snapshot {run.snapshot} of run {run_id!r} is missing or unreadable: {exc}"
            ) from exc
        return _Loaded(run=run, version=version, workflow=load_workflow(package.files, name=package.name))

    async def _artifact_files(self, loaded: _Loaded) -> frozenset[str]:
        workflow = loaded.workflow
        if any(check.type == "artifact_exists" for check in workflow.checks) or any(s.requires for s in workflow.steps):
            return await self._store.artifact_files(loaded.run.run_id)
        return frozenset()

    async def _commit(self, loaded: _Loaded, changed: Run | None) -> _Loaded:
        """Write ``changed`` over ``loaded`` (compare-and-set), then its events; ``None`` = no-op."""
        if changed is None:
            return loaded
        # The previous write's events may not have reached the trajectory (a crash right after
        # it); they leave the outbox now, so append them first.
        await self._store.flush(loaded.run)
        version = await self._store.replace(changed, loaded.version)
        await self._store.flush(changed)
        await self._side_files(loaded.workflow, changed)
        return replace(loaded, run=changed, version=version)

    async def _side_files(self, workflow: Workflow, run: Run) -> None:
        """Rewrite the Comet side files the package asks for (views of ``run``, never read back)."""
        for name in workflow.side_files:
            await self._store.write_side_file(run.run_id, name, render_side_file(name, workflow, run))


def _final_file(workflow: Workflow, run: Run, path: str) -> str | None:
    """The final artifact stored at ``path`` (by name, or the path it was reported with)."""
    for name in workflow.final_artifacts:
        reported = run.artifacts.get(name, "").removeprefix("artifacts/")
        if path in (name, reported):
            return path
    return None


def _with_confirmation(workflow: Workflow, tool: ToolDecl) -> ToolDecl:
    """``tool`` marked ``requires_confirmation`` when the guardrails list it (so a skill turn
    refuses it as well as a ``call_tool`` action)."""
    if tool.id in workflow.guardrails.confirmation_required_for and not tool.requires_confirmation:
        return replace(tool, requires_confirmation=True)
    return tool

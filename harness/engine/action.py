"""What the action being performed may see and do: :class:`ActionContext`.

The engine builds one for every pending action of a deterministic step. While an executor
performs the action (:meth:`WorkflowEngine.run_until_blocked`), :func:`current_action` returns
it — so a Python tool can use :attr:`ActionContext.action_id` as an idempotency key for its side
effects (the agent puts the same id into ``HARNESS_ACTION_ID`` for scripts). The engine applies
:meth:`ActionContext.check` to every outcome before recording it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from harness.context import ACTION_ID_ENV
from harness.engine.errors import OutcomeRefused
from harness.engine.run import Outcome

__all__ = ["ACTION_ID_ENV", "STEP_READS_ENV", "ActionContext", "current_action", "performing"]

#: The environment variable that carries a script step's declared reads (a JSON object).
STEP_READS_ENV = "HARNESS_STEP_READS"

_CURRENT: ContextVar[ActionContext | None] = ContextVar("harness_workflow_action", default=None)


@dataclass(frozen=True, kw_only=True)
class ActionContext:
    """One pending action and its step's contract.

    ``action_id`` is deterministic (the same action keeps its id across retries of a crashed
    process, a new attempt gets a new one): use it to make side effects idempotent. ``reads``
    holds the current values of the step's declared reads (state keys and artifacts);
    ``writes`` the names the outcome may set (``None`` = anything); ``final`` the final
    artifacts already written (name → value); ``domain_state`` the run's domain state and
    ``next_states`` where it may move (``None`` = the workflow has no ``states``);
    ``produces`` the schema version the step's hand-off follows.
    """

    run_id: str
    action_id: str
    step_id: str
    attempt: int
    workflow: str
    reads: Mapping[str, Any] = field(default_factory=dict)
    writes: tuple[str, ...] | None = None
    final: Mapping[str, str] = field(default_factory=dict)
    domain_state: str | None = None
    next_states: tuple[str, ...] | None = None
    produces: str | None = None

    def contract(self) -> dict[str, Any]:
        """The step's contract as JSON for a performer: ``reads`` and, where declared,
        ``may_write``, ``produces``, ``domain_state`` and ``may_move_to``."""
        contract: dict[str, Any] = {"reads": dict(self.reads)}
        if self.writes is not None:
            contract["may_write"] = list(self.writes)
        if self.produces is not None:
            contract["produces"] = self.produces
        if self.next_states is not None:
            contract["domain_state"] = self.domain_state
            contract["may_move_to"] = list(self.next_states)
        return contract

    def refusal(self, outcome: Outcome) -> str | None:
        """Why ``outcome`` breaks this step's contract, or ``None`` when it does not."""
        written = [*outcome.state, *outcome.artifacts]
        if self.writes is not None:
            undeclared = [name for name in written if name not in self.writes]
            if undeclared:
                allowed = ", ".join(self.writes) or "nothing"
                return (
                    f"step {self.step_id!r} may write only {allowed}; it does not declare "
                    f"{', '.join(map(repr, undeclared))} in writes"
                )
        for name, value in outcome.artifacts.items():
            if name in self.final and self.final[name] != value:
                return f"artifact {name!r} is final and already written ({self.final[name]!r}); it cannot be replaced"
        target = outcome.to_state
        if target is not None:
            if self.next_states is None:
                return f"workflow {self.workflow!r} declares no states; to_state {target!r} cannot be set"
            if target != self.domain_state and target not in self.next_states:
                legal = ", ".join(self.next_states) or "none"
                return (
                    f"illegal transition {self.domain_state!r} -> {target!r} in step {self.step_id!r} "
                    f"(legal from {self.domain_state!r}: {legal})"
                )
        return None

    def check(self, outcome: Outcome) -> None:
        """Raise :class:`OutcomeRefused` when ``outcome`` breaks the step's contract."""
        problem = self.refusal(outcome)
        if problem is not None:
            raise OutcomeRefused(f"run {self.run_id}: outcome refused: {problem}")


def current_action() -> ActionContext | None:
    """The action being performed in this task (``None`` outside a workflow action)."""
    return _CURRENT.get()


@contextmanager
def performing(action: ActionContext) -> Iterator[ActionContext]:
    """Make ``action`` the :func:`current_action` inside the ``with`` block."""
    token = _CURRENT.set(action)
    try:
        yield action
    finally:
        _CURRENT.reset(token)

"""Tool approval: a host policy decides each gated tool call before it runs.

Gated calls are shell commands (``execute_shell_command``), writes (``write_file``,
``propose_skill``, ``skill_manage``) and any tool marked ``requires_approval=True``. For each
one an :class:`ApprovalPolicy` answers *allow*, *deny* or *ask*, judging what runs: the whole
command with every argument that decides where it runs, and the normalised path that is
written (the tool then runs with exactly the arguments that were judged):

- **allow**: the call runs;
- **deny**: the call does not run; the model gets an error result naming the policy and the
  reason, and the turn goes on;
- **ask**: an :data:`Approver` decides (a callback, or :class:`StdinApprover` in the CLI). With
  no approver, a run the app started pauses: the call waits, the run ends with the request in
  ``RunResult.approvals``, and the app decides later with ``Harness.resolve_approval`` and
  continues with ``Harness.resume``. A call that cannot wait (a ``context: fork`` subagent, a
  workflow step) is denied instead: an undecided call never runs.

:class:`ApprovalGate` applies a policy by wrapping tools, so every path that calls a tool —
a turn, a subagent's turn, a workflow's tool action — goes through the same check. Every
decision becomes an :class:`~harness.events.ApprovalDecided` event and an audit record.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
import shlex
import sys
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TextIO, get_args

import anyio.to_thread

from filesystems import (
    CACHE_DIR,
    PathEscapeError,
    has_parent_segment,
    normalize_path,
    redact_secrets,
    segment_problem,
)
from harness.context import RuntimeContext
from harness.errors import HarnessError
from harness.events import ApprovalDecided, ApprovalRequested, Event
from harness.pipeline.catalog import SHELL_TOOL
from harness.pipeline.layers import LayerEntry, SkillLayer
from harness.pipeline.plan import ResolvedSkill
from harness.pipeline.staging import INCOMING_DIR, StageItem
from harness.skills.skill import Layer
from harness.terminal import escape_control
from harness.tools.context import keeping_context
from harness.tools.function import Tool, ToolError

if TYPE_CHECKING:  # an annotation: the agent builds its audit log only for an approval policy
    from harness.audit import AuditLog

__all__ = [
    "WRITE_TOOLS",
    "ActivationApprovals",
    "AllowAll",
    "AllowByPattern",
    "ApprovalError",
    "ApprovalGate",
    "ApprovalKind",
    "ApprovalNotFound",
    "ApprovalPolicy",
    "ApprovalRule",
    "ApprovalStillPending",
    "Approver",
    "AwaitingApproval",
    "Decision",
    "DenyByPattern",
    "PatternPolicy",
    "StdinApprover",
    "ToolDenied",
    "ToolRequest",
    "decided_event",
    "policy_from_data",
    "skill_roots",
]

ApprovalKind = Literal["shell", "write", "tool"]
Action = Literal["allow", "deny", "ask"]
_KINDS: tuple[ApprovalKind, ...] = get_args(ApprovalKind)
_ACTIONS: tuple[Action, ...] = get_args(Action)

#: Built-in tools that write: gated like the shell.
WRITE_TOOLS: frozenset[str] = frozenset({"write_file", "propose_skill", "skill_manage"})
#: Characters that make a shell line more than one plain command (lists, pipes, redirections,
#: substitutions, globs of the shell's own, line breaks).
_SHELL_SYNTAX = re.compile(r"[;&|<>`$(){}\n\r\\*?\[\]!~#^]")
_SINGLE_QUOTED = re.compile(r"'[^']*'")
#: Where a shell line holds further commands (for deny and ask rules, which match each part).
_SHELL_SEPARATORS = re.compile(r"[;&|\n\r`()]|\$\(")
#: Arguments of the shell tool that do not change what runs; every other one given is part of
#: the subject (see :func:`_shell_subject`).
_SHELL_NEUTRAL = frozenset({"command", "timeout"})
#: Arguments of the write tools that name a path inside the tool's area (normalised before
#: judging), and those that name one folder (a skill: refused unless a plain folder name).
_WRITE_PATHS = ("path",)
_WRITE_NAMES = ("name",)
#: How much of a long subject :attr:`ToolRequest.display` shows (it is always judged whole).
_DISPLAY = 2000


class ApprovalError(HarnessError):
    """An approval could not be resolved or resumed."""


class ApprovalNotFound(ApprovalError, LookupError):
    """No waiting call has that approval id for that user and session."""


class ApprovalStillPending(ApprovalError):
    """``resume`` was called while a call of the paused run still waits for a decision."""


class ToolDenied(ToolError):
    """A gated call was denied (by the policy, an approver or the app); it did not run."""


class AwaitingApproval(ToolError):
    """A gated call waits for the app's decision; it has not run."""


@dataclass(frozen=True, kw_only=True)
class ToolRequest:
    """A gated call as a policy sees it.

    ``subject`` is what patterns match, whole, however long: for the shell the exact command,
    preceded by ``[name=value] `` for each other argument given that decides what runs
    (``[cwd=build] make``; only ``timeout`` is left out); for writes the normalised ``path``
    argument (``name/path`` or ``name`` for the skill tools); for app tools the arguments as
    JSON. ``arguments`` are the arguments the tool runs with: the model's, with write paths
    normalised. ``skill_roots`` are the files-roots ``{skill_root}`` stands for
    (:func:`skill_roots`). ``approval_id`` names the request in events, audit records and
    ``Harness.resolve_approval``.
    """

    approval_id: str
    tool: str
    kind: ApprovalKind
    subject: str
    arguments: Mapping[str, Any]
    context: RuntimeContext
    agent: str
    skill_roots: tuple[str, ...] = ()
    activations: tuple[str, ...] = ()
    """Skills whose activation this call needs approved (one line each: skill id, origin and the
    content digest the approval binds to); approving the call approves them at that content."""

    @property
    def display(self) -> str:
        """``subject`` for showing in a message: a long one is cut, saying how much was left
        out. Never what is judged or recorded."""
        if len(self.subject) <= _DISPLAY:
            return self.subject
        return f"{self.subject[:_DISPLAY]}… ({len(self.subject) - _DISPLAY} more characters)"


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What to do with a call: ``allow``, ``deny`` or ``ask``; ``by`` says who decided
    (``policy:<name>``, ``approver:<name>``, ``operator:<name>``)."""

    action: Action
    reason: str = ""
    by: str = ""

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ValueError(f"approval action {self.action!r} is not one of {', '.join(_ACTIONS)}")


class ApprovalPolicy(ABC):
    """Decides gated tool calls before they run.

    :meth:`decide` gets every gated call of every turn (the model's, a subagent's, a workflow
    step's) and returns a :class:`Decision`. It must not raise for a call it does not like:
    return ``deny`` with a reason the model can read. ``name`` appears in events and audit
    records as ``policy:<name>``.
    """

    name: str = "policy"

    @abstractmethod
    async def decide(self, request: ToolRequest) -> Decision:
        """Allow, deny or ask about ``request``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class AllowAll(ApprovalPolicy):
    """Allows every call (recording each in the audit log)."""

    name = "allow-all"

    async def decide(self, request: ToolRequest) -> Decision:
        return Decision(action="allow", reason="every call is allowed", by=f"policy:{self.name}")


@dataclass(frozen=True, kw_only=True)
class ApprovalRule:
    """One rule of a :class:`PatternPolicy`: ``action`` for calls whose tool name matches one of
    ``tools``, whose kind is one of ``kinds`` and whose subject matches one of ``patterns``.

    Patterns match the whole subject (:class:`ToolRequest`), never a prefix of it: ``*`` is any
    text (``/`` included), ``?`` one character, and ``{skill_root}`` stands for the files-root
    of a skill the conversation invoked or loaded, from a market, the global folder or the
    workspace (:func:`skill_roots`; a pattern naming it matches nothing when there is none).
    An ``allow`` rule matches a shell command only when the command is one plain command —
    words and single-quoted literals; no ``;``, ``&``, ``|``, redirections, substitutions,
    double quotes, escapes, globs or line breaks; no ``..`` path segment in any word — so what a
    ``*`` stands for never holds an unquoted shell metacharacter and nothing can ride on an
    allowed prefix. A call that says where it runs must spell it (``[cwd=build] make *``). A
    ``deny`` or ``ask`` rule matches a shell command when the whole subject, the command or
    any command in it (split at ``;``, ``&``, ``|``, line breaks, backticks and ``$(``) matches.
    Matching takes time linear in the subject's length for each pattern.
    """

    action: Action
    patterns: tuple[str, ...] = ("*",)
    tools: tuple[str, ...] = ("*",)
    kinds: tuple[ApprovalKind, ...] = _KINDS

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ValueError(f"rule action {self.action!r} is not one of {', '.join(_ACTIONS)}")
        if isinstance(self.patterns, str) or isinstance(self.tools, str) or isinstance(self.kinds, str):
            raise ValueError("rule patterns, tools and kinds must be lists, not single strings")
        if not self.patterns or not all(isinstance(p, str) and p for p in self.patterns):
            raise ValueError(f"rule patterns must be non-empty strings, got {self.patterns!r}")
        unknown = [kind for kind in self.kinds if kind not in _KINDS]
        if unknown or not self.kinds:
            raise ValueError(f"rule kinds {self.kinds!r} must be some of {', '.join(_KINDS)}")

    def match(self, request: ToolRequest) -> str | None:
        """The pattern that matches ``request``, or ``None``."""
        if request.kind not in self.kinds or not any(_matches(t, (), request.tool) for t in self.tools):
            return None
        subjects = [request.subject]
        if request.kind == "shell":
            command = _command(request)
            if self.action == "allow" and not _plain_command(command):
                return None
            if self.action != "allow":
                subjects += [command, *(part.strip() for part in _SHELL_SEPARATORS.split(command) if part.strip())]
        roots = request.skill_roots
        return next((p for p in self.patterns if any(_matches(p, roots, subject) for subject in subjects)), None)


class PatternPolicy(ApprovalPolicy):
    """The first rule that matches decides; ``default`` decides what no rule matches."""

    def __init__(self, rules: Sequence[ApprovalRule], *, default: Action = "ask", name: str = "rules") -> None:
        if default not in _ACTIONS:
            raise ValueError(f"default {default!r} is not one of {', '.join(_ACTIONS)}")
        self.rules = tuple(rules)
        self.default: Action = default
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rules={list(self.rules)!r}, default={self.default!r}, name={self.name!r})"

    async def decide(self, request: ToolRequest) -> Decision:
        for rule in self.rules:
            pattern = rule.match(request)
            if pattern is not None:
                return Decision(
                    action=rule.action,
                    reason=f"{request.kind} {request.display!r} matches {rule.action} pattern {pattern!r}",
                    by=f"policy:{self.name}",
                )
        return Decision(
            action=self.default,
            reason=f"no rule matches {request.kind} {request.display!r}; the default is {self.default}",
            by=f"policy:{self.name}",
        )


class DenyByPattern(PatternPolicy):
    """Denies calls whose subject matches one of ``patterns``; ``otherwise`` (allow) the rest.

    A deny list is a convenience, not a wall: a shell has many spellings of one command. Where
    a denied command must never run, allow what may run instead (:class:`AllowByPattern`).
    """

    def __init__(self, patterns: Sequence[str], *, tools: Sequence[str] = ("*",), otherwise: Action = "allow") -> None:
        rule = ApprovalRule(action="deny", patterns=tuple(patterns), tools=tuple(tools))
        super().__init__([rule], default=otherwise, name="deny-by-pattern")


class AllowByPattern(PatternPolicy):
    """Allows calls whose subject matches one of ``patterns``; ``otherwise`` (deny) the rest.

    ``AllowByPattern(["python3 {skill_root}/scripts/*"], tools=["execute_shell_command"])``
    runs only the invoked or loaded skill's scripts and denies every other gated call.
    """

    def __init__(self, patterns: Sequence[str], *, tools: Sequence[str] = ("*",), otherwise: Action = "deny") -> None:
        rule = ApprovalRule(action="allow", patterns=tuple(patterns), tools=tuple(tools))
        super().__init__([rule], default=otherwise, name="allow-by-pattern")


def _matches(pattern: str, roots: Collection[str], text: str) -> bool:
    """Whether the glob ``pattern`` matches all of ``text`` (``{skill_root}`` standing for each
    of ``roots`` in turn)."""
    return any(_fullmatch(segments, text) for segments in _globs(pattern, tuple(roots)))


_Segment = tuple[re.Pattern[str], int]  # a ``*``-free piece of a glob as a regex, and its length


@functools.lru_cache(maxsize=1024)
def _globs(pattern: str, roots: tuple[str, ...]) -> tuple[tuple[_Segment, ...], ...]:
    """``pattern`` with each ``{skill_root}`` replaced by each of ``roots`` (nothing when it
    names one and there are none), each split at ``*`` into fixed-length segments."""
    pieces = pattern.split("{skill_root}")
    globs = []
    for chosen in itertools.product(roots, repeat=len(pieces) - 1):
        segments: list[list[str]] = [[]]
        lengths = [0]
        for index, piece in enumerate(pieces):
            if index:
                segments[-1].append(re.escape(chosen[index - 1]))
                lengths[-1] += len(chosen[index - 1])
            for star, part in enumerate(piece.split("*")):
                if star:
                    segments.append([])
                    lengths.append(0)
                segments[-1].append(".".join(re.escape(text) for text in part.split("?")))
                lengths[-1] += len(part)
        globs.append(
            tuple((re.compile("".join(parts), re.DOTALL), n) for parts, n in zip(segments, lengths, strict=True))
        )
    return tuple(globs)


def _fullmatch(segments: Sequence[_Segment], text: str) -> bool:
    """Whether ``segments`` joined by ``*`` match all of ``text``: the first at the start, the
    last at the end, each one between at its leftmost place after the one before (segments have
    a fixed length, so the leftmost place is never a worse choice): no backtracking over ``*``."""
    (first, _), *rest = segments
    if not rest:
        return first.fullmatch(text) is not None
    head = first.match(text)
    if head is None:
        return False
    position = head.end()
    for segment, _ in rest[:-1]:
        found = segment.search(text, position)
        if found is None:
            return False
        position = found.end()
    last, length = rest[-1]
    start = len(text) - length
    return start >= position and last.fullmatch(text, start) is not None


def _plain_command(command: str) -> bool:
    """Whether ``command`` is one simple command: words and single-quoted literals (which the
    shell never interprets), no operator, expansion or glob, and no ``..`` in any word."""
    unquoted = _SINGLE_QUOTED.sub("", command)
    if _SHELL_SYNTAX.search(unquoted) or "'" in unquoted or '"' in unquoted:
        return False
    return not any(has_parent_segment(word) for word in shlex.split(command))


Approver = Callable[[ToolRequest], Awaitable["bool | Decision"]]
"""Decides a call the policy asks about: ``True``/``False`` or a :class:`Decision`."""


class StdinApprover:
    """Asks on a terminal: prints the call (control characters escaped) to ``output`` and reads
    ``y``/``yes`` from ``input`` (in a worker thread, so other users' turns go on). Anything
    else, or the end of the input, denies."""

    name = "stdin"

    def __init__(self, *, input: TextIO | None = None, output: TextIO | None = None) -> None:
        self._input = input
        self._output = output
        self._lock = anyio.Lock()  # one question on the terminal at a time

    async def __call__(self, request: ToolRequest) -> Decision:
        output = self._output or sys.stderr
        source = self._input or sys.stdin
        what = escape_control(request.subject)
        if request.activations:
            what += "".join(f"\n  acting on {escape_control(line)}" for line in request.activations)
        async with self._lock:
            print(
                f"[approval] {request.agent} wants to run {request.tool} ({request.kind}) for user "
                f"{escape_control(request.context.user_id)}:\n  {what}\nAllow? [y/N] ",
                end="",
                file=output,
                flush=True,
            )
            answer = await anyio.to_thread.run_sync(source.readline)
        allowed = answer.strip().lower() in ("y", "yes")
        reason = "approved on the terminal" if allowed else "refused on the terminal"
        return Decision(action="allow" if allowed else "deny", reason=reason, by=f"approver:{self.name}")


@dataclass(kw_only=True)
class Waiting:
    """A call that waits for the app: its request, how to run it, where the tool reports its
    events (``ShellRan``, ``SkillLoaded``) when it runs, and the decision once made."""

    request: ToolRequest
    execute: Callable[[], Awaitable[Any]]
    placeholder: str
    events: list[Event]
    decision: Decision | None = None


@dataclass(kw_only=True)
class Gating:
    """What one turn's gate needs from the turn: the list its events go to (the turn's tools
    report there too), the skill roots, and the list of waiting calls when the turn can pause
    (``None``: an undecided call is denied)."""

    context: RuntimeContext
    agent: str
    events: list[Event]
    roots: Callable[[], tuple[str, ...]] = tuple
    waiting: list[Waiting] | None = None
    acting_on: Callable[[Mapping[str, Any]], Iterable[ResolvedSkill | None]] = lambda arguments: ()
    """The skills a shell call acts on (the one it names, those whose folder it names, those the
    conversation loaded): each one that needs an activation approval is checked before it runs."""


class ActivationApprovals:
    """Which skills each user approved acting on, bound to their content.

    A skill needs an activation approval when its market asks for one
    (``SkillRepository.activation_approval``: every MCP market) or is one of ``markets``, and the
    operator did not list the market in ``trusted_markets``. An approval is kept per user under
    the skill's identity — the market's label and the skill's URI (or its path) — with the digest
    of its content (for an MCP skill the hash of every ``{uri, digest}`` it lists): when the
    content changes, the approval no longer matches and is asked again. A dynamic skill has no
    digest to bind to and is never approved for running. At most ``per_user`` approvals are kept
    per user (the oldest forgotten first), so one user cannot crowd out another's.

    An approval is what shows the skill to that user: until then, a sandboxed shell of the user
    does not see its staged folder (:meth:`hidden_folders`), however a command spells the path,
    and its ``allowed-tools`` are not honoured for the user (:meth:`unlocked`).
    """

    def __init__(
        self,
        trusted_markets: Collection[str] = frozenset(),
        *,
        markets: Collection[str] = frozenset(),
        per_user: int = 1024,
    ) -> None:
        self.trusted_markets = frozenset(trusted_markets)
        self.markets = frozenset(markets)
        self.per_user = per_user
        self._approved: dict[str, dict[tuple[str, str], str]] = {}
        # The last cache items asked about (a turn's and the newest merge's) and those of them
        # that need an approval.
        self._gated: list[tuple[Sequence[StageItem], tuple[StageItem, ...]]] = []

    def needs(self, skill: ResolvedSkill) -> bool:
        """Whether acting on ``skill`` needs an activation approval at all."""
        return self._needs(skill.entry, skill.source)

    def _needs(self, entry: LayerEntry, layer: SkillLayer) -> bool:
        if entry.skill.layer is not Layer.MARKET:
            return False
        if not layer.repository.activation_approval and layer.source not in self.markets:
            return False
        # Exact slugs only: the market's, or its sub-source's spelled whole (never a folded one).
        plugin = entry.plugin
        trusted = layer.source in self.trusted_markets or (
            plugin and f"{layer.source}.{plugin}" in self.trusted_markets
        )
        return not trusted

    @staticmethod
    def identity(skill: ResolvedSkill) -> tuple[str, str]:
        """(market label, URI or path): what an approval is kept under."""
        return _identity(skill.entry, skill.source)

    def approved(self, user: str, skill: ResolvedSkill) -> bool:
        """Whether ``user`` approved acting on ``skill`` at its current content."""
        return self._approved_at(user, skill.entry, skill.source)

    def _approved_at(self, user: str, entry: LayerEntry, layer: SkillLayer) -> bool:
        return self._approved.get(user, {}).get(_identity(entry, layer)) == entry.digest

    def unlocked(self, user: str, skill: ResolvedSkill) -> bool:
        """Whether ``skill`` needs an activation approval and ``user`` gave it at its current
        content: what lets its own fields (``allowed-tools``) be honoured for that user."""
        return self.needs(skill) and self.approved(user, skill)

    def hidden_folders(self, user: str, *item_sets: Sequence[StageItem]) -> tuple[str, ...]:
        """The staged folders (``.skills-cache/<source>/<folder>``) among ``item_sets`` (a plan's
        :attr:`~harness.pipeline.plan.TurnPlan.cache_items` and the newest merge's: a market that
        moved while a turn ran restages its folders in place) that ``user``'s shell must not see:
        those of skills that need an activation approval ``user`` has not given at the content of
        either set, staged for another user or not staged yet, and the stager's incoming folder.
        Nothing when no item needs an approval (checked once per set)."""
        gated: list[StageItem] = []
        for items in {id(items): items for items in item_sets}.values():
            gated += self._gated_among(items)
        if not gated:
            return ()
        hidden = (f"{CACHE_DIR}/{i.key}" for i in gated if not self._approved_at(user, i.entry, i.reader))
        # Large files pass through the stager's incoming folder on their way to a staged one.
        return (f"{CACHE_DIR}/{INCOMING_DIR}", *dict.fromkeys(hidden))

    def _gated_among(self, items: Sequence[StageItem]) -> tuple[StageItem, ...]:
        """Those of ``items`` that need an approval, worked out once per sequence (the last two
        asked about are kept: a turn's and the newest merge's)."""
        for seen, gated in self._gated:
            if seen is items:
                return gated
        gated = tuple(i for i in items if self._needs(i.entry, i.reader))
        self._gated = [(items, gated), *self._gated[:1]]
        return gated

    def approve(self, user: str, skill: ResolvedSkill) -> None:
        """Record ``user``'s approval of ``skill`` at its current content."""
        if skill.entry.digest.startswith("dynamic:"):
            return
        kept = self._approved.setdefault(user, {})
        kept.pop(self.identity(skill), None)
        kept[self.identity(skill)] = skill.entry.digest
        while len(kept) > self.per_user:
            del kept[next(iter(kept))]

    def pending(self, user: str, skills: Iterable[ResolvedSkill | None]) -> list[ResolvedSkill]:
        """The skills among ``skills`` that need an approval ``user`` has not given (at this content)."""
        found: dict[str, ResolvedSkill] = {}
        for skill in skills:
            if skill is not None and self.needs(skill) and not self.approved(user, skill):
                found.setdefault(skill.skill.skill_id, skill)
        return list(found.values())


def _identity(entry: LayerEntry, layer: SkillLayer) -> tuple[str, str]:
    return layer.source, entry.origin or entry.path


def describe_activation(skill: ResolvedSkill) -> str:
    """One line naming a skill to approve: its id, origin and the content its approval binds to."""
    origin = skill.entry.origin or skill.skill.location
    return f"{skill.skill.skill_id} from {skill.source.source} ({origin}), content {skill.entry.digest}"


@dataclass(kw_only=True)
class ApprovalGate:
    """Applies ``policy`` (and ``approver`` for *ask*) to tools; records decisions in ``audit``."""

    policy: ApprovalPolicy
    approver: Approver | None = None
    audit: AuditLog | None = None
    activations: ActivationApprovals = dataclasses.field(default_factory=ActivationApprovals)

    def wrap(self, tools: Sequence[Tool], gating: Gating) -> list[Tool]:
        """``tools`` with every gated one checked before it runs."""
        return [self._wrapped(tool, gating) if gated_kind(tool) else tool for tool in tools]

    def _wrapped(self, tool: Tool, gating: Gating) -> Tool:
        kind = gated_kind(tool)
        assert kind is not None
        inner = tool.function

        async def checked(**arguments: Any) -> Any:
            request, refused = self._request(tool.name, kind, arguments, gating)
            pending = self._pending(kind, arguments, gating)
            if pending:
                request = dataclasses.replace(request, activations=tuple(map(describe_activation, pending)))
                refused = refused or _unbindable(pending)
            decision = refused or await self._decide(request, gating, escalate=bool(pending))
            user = gating.context.user_id

            async def run() -> Any:
                for skill in pending:  # the call was approved: so is acting on these skills
                    self.activations.approve(user, skill)
                return await inner(**request.arguments)

            if decision is None:
                return await self._wait(request, gating, keeping_context(run))
            await self._enforce(request, decision, gating)
            return await run()

        return dataclasses.replace(tool, function=checked)

    async def admit(self, tool: str, kind: ApprovalKind, arguments: Mapping[str, Any], gating: Gating) -> None:
        """Check a call the harness makes outside a tool (a workflow's script tool): returns
        when it may run, raises :class:`ToolDenied` otherwise (it never waits)."""
        gating = dataclasses.replace(gating, waiting=None)
        request, refused = self._request(tool, kind, arguments, gating)
        decision = refused or await self._decide(request, gating)
        assert decision is not None
        await self._enforce(request, decision, gating)

    def _request(
        self, tool: str, kind: ApprovalKind, arguments: Mapping[str, Any], gating: Gating
    ) -> tuple[ToolRequest, Decision | None]:
        """The request for a call, and a denial when its arguments cannot be judged (a write
        path that escapes its area: it would be refused anyway, and has no normalised form)."""
        refused = None
        try:
            arguments = _canonical(kind, arguments)
        except PathEscapeError as exc:
            refused = Decision(action="deny", reason=f"the path cannot be written: {exc}", by="harness")
        import uuid

        request = ToolRequest(
            approval_id=f"ap-{uuid.uuid4().hex[:16]}",
            tool=tool,
            kind=kind,
            subject=_subject(kind, arguments),
            arguments=dict(arguments),
            context=gating.context,
            agent=gating.agent,
            skill_roots=gating.roots(),
        )
        return request, refused

    async def _enforce(self, request: ToolRequest, decision: Decision, gating: Gating) -> None:
        await self.record(request, decision, gating.events.append)
        if decision.action != "allow":
            raise ToolDenied(refusal(request, decision))

    def activate_decided(self, request: ToolRequest, gating: Gating) -> str | None:
        """Before an allowed call of a paused run runs (in the resumed turn, perhaps on another
        replica): approve acting on the skills it acts on, or say why it must not run. The app's
        approval covered the skills listed in ``request.activations`` at the content named
        there; a skill the call now acts on that was not listed, or whose content changed since,
        was never approved, and the call is refused."""
        pending = self._pending(request.kind, request.arguments, gating)
        unbindable = _unbindable(pending)
        if unbindable is not None:
            return unbindable.reason
        approved = set(request.activations)
        unapproved = [s for s in pending if describe_activation(s) not in approved]
        if unapproved:
            return (
                "the skills it acts on changed since it was approved ("
                + "; ".join(map(describe_activation, unapproved))
                + "); ask again"
            )
        for skill in pending:
            self.activations.approve(gating.context.user_id, skill)
        return None

    def _pending(self, kind: ApprovalKind, arguments: Mapping[str, Any], gating: Gating) -> list[ResolvedSkill]:
        """The skills a shell call acts on whose activation the user has not approved."""
        if kind != "shell":
            return []
        try:
            acted_on = list(gating.acting_on(arguments))
        except Exception:  # hostile arguments the lookup cannot take: the shell tool refuses them
            acted_on = []
        return self.activations.pending(gating.context.user_id, acted_on)

    async def _decide(self, request: ToolRequest, gating: Gating, *, escalate: bool = False) -> Decision | None:
        """The decision, or ``None`` when the call must wait for the app. With ``escalate`` (the
        call acts on skills whose activation is not approved yet) the policy's *allow* becomes
        *ask*: only the approver or the app can approve acting on them."""
        try:
            decision = await self.policy.decide(request)
            if not isinstance(decision, Decision):
                raise TypeError(f"decide() returned {type(decision).__name__}, not a Decision")
        except Exception as exc:  # a broken policy denies; it never lets a call through
            return Decision(action="deny", reason=f"the policy failed ({type(exc).__name__}: {exc})", by="harness")
        if escalate and decision.action == "allow":
            decision = Decision(action="ask", reason="acting on a skill that needs activation approval", by=decision.by)
        if decision.action != "ask":
            return decision
        gating.events.append(_requested(request))
        if self.approver is not None:
            try:
                answer = await self.approver(request)
            except Exception as exc:
                return Decision(
                    action="deny", reason=f"the approver failed ({type(exc).__name__}: {exc})", by="harness"
                )
            return _as_decision(answer)
        if gating.waiting is None:
            return Decision(
                action="deny",
                reason="the policy asks for approval, and this call cannot wait for one (no approver; "
                "subagent and workflow turns do not pause)",
                by=decision.by,
            )
        return None

    async def _wait(self, request: ToolRequest, gating: Gating, execute: Callable[[], Awaitable[Any]]) -> Any:
        assert gating.waiting is not None
        placeholder = (
            f"call of {request.tool} awaits approval {request.approval_id}; it has not run "
            "(the run pauses until the app decides)"
        )
        gating.waiting.append(Waiting(request=request, execute=execute, placeholder=placeholder, events=gating.events))
        await self._audit(request, "pending", "harness", "waiting for the app's decision")
        raise AwaitingApproval(placeholder)

    async def record(self, request: ToolRequest, decision: Decision, emit: Callable[[Event], None]) -> None:
        """Emit the decision as an event and append it to the audit log."""
        emit(decided_event(request, decision))
        allowed = decision.action == "allow"
        await self._audit(request, "allowed" if allowed else "denied", decision.by, decision.reason)

    async def _audit(self, request: ToolRequest, outcome: str, actor: str, reason: str) -> None:
        if self.audit is None:
            return
        await self.audit.record(
            actor=actor,
            op=f"tool.{request.kind}",
            target=request.tool,
            decision=outcome,
            context=request.context,
            detail=redact_secrets(
                f"{request.approval_id}: {request.subject} — {reason}"
                + "".join(f"; acting on {line}" for line in request.activations)
            ),
        )


def _unbindable(skills: Sequence[ResolvedSkill]) -> Decision | None:
    """A denial when one of ``skills`` is dynamic: its content has no digest an approval could
    bind to, so its scripts never run."""
    dynamic = [s.skill.skill_id for s in skills if s.entry.digest.startswith("dynamic:")]
    if not dynamic:
        return None
    return Decision(
        action="deny",
        reason=f"{', '.join(dynamic)} is served as dynamic content, which no approval can bind to; "
        "its commands are not run",
        by="harness",
    )


def decided_event(request: ToolRequest, decision: Decision) -> ApprovalDecided:
    """The event that reports ``decision`` on ``request``."""
    return ApprovalDecided(
        approval_id=request.approval_id,
        tool=request.tool,
        kind=request.kind,
        subject=request.subject,
        allowed=decision.action == "allow",
        by=decision.by,
        reason=decision.reason,
    )


def gated_kind(tool: Tool) -> ApprovalKind | None:
    """Which kind of gated call ``tool`` makes, or ``None`` when it runs unchecked."""
    if tool.name == SHELL_TOOL:
        return "shell"
    if tool.name in WRITE_TOOLS:
        return "write"
    return "tool" if tool.requires_approval else None


def refusal(request: ToolRequest, decision: Decision) -> str:
    """What the model reads when a call is denied."""
    return f"{request.tool} was not run: denied by {decision.by or 'the host'}" + (
        f": {decision.reason}" if decision.reason else ""
    )


def skill_roots(skills: Iterable[ResolvedSkill | None]) -> tuple[str, ...]:
    """The files-roots ``{skill_root}`` may stand for among ``skills``: folders of skills from
    markets, the global folder and the workspace. A skill of the user's own layer is left out
    whatever its folder (``skills/``, ``.agents/skills/``, ``.claude/skills/``, configured
    ``skill_dirs``): the model's tools and the tenant's shell can write there, and a rule meant
    for a skill's own files must not cover what the model wrote itself."""
    roots = (s.files_root for s in skills if s is not None and s.skill.layer is not Layer.USER)
    return tuple(dict.fromkeys(root for root in roots if root))


def _command(request: ToolRequest) -> str:
    """The command of a shell request: its ``command`` argument when the subject ends with it
    (after the ``[name=value]`` places the gate wrote), else the whole subject."""
    command = request.arguments.get("command")
    return command if isinstance(command, str) and request.subject.endswith(command) else request.subject


def _canonical(kind: ApprovalKind, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a call is judged by and runs with: a write's paths normalised with
    :func:`filesystems.normalize_path` (``PathEscapeError`` for one that escapes, or for a
    skill name that is not one plain folder name)."""
    canonical = dict(arguments)
    if kind != "write":
        return canonical
    for key in _WRITE_PATHS:
        if isinstance(canonical.get(key), str):
            canonical[key] = normalize_path(canonical[key])
    for key in _WRITE_NAMES:
        problem = segment_problem(canonical[key]) if isinstance(canonical.get(key), str) else None
        if problem is not None:
            raise PathEscapeError(f"{key} {canonical[key]!r} {problem}")
    return canonical


def _subject(kind: ApprovalKind, arguments: Mapping[str, Any]) -> str:
    if kind == "shell":
        return _shell_subject(arguments)
    if kind == "write" and any(isinstance(arguments.get(key), str) for key in ("name", "path")):
        return "/".join(arguments[key] for key in ("name", "path") if isinstance(arguments.get(key), str))
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False, default=str)


def _shell_subject(arguments: Mapping[str, Any]) -> str:
    """The exact command, preceded by ``[name=value] `` (the value shell-quoted) for every other
    argument given but those that cannot change what runs (:data:`_SHELL_NEUTRAL`): a new
    argument of the shell tool is judged without anyone remembering to add it here."""
    place = [
        f"[{name}={shlex.quote(value if isinstance(value, str) else json.dumps(value, default=str))}] "
        for name, value in sorted(arguments.items())
        if name not in _SHELL_NEUTRAL and value is not None
    ]
    return "".join(place) + str(arguments.get("command", ""))


def _requested(request: ToolRequest) -> ApprovalRequested:
    return ApprovalRequested(
        approval_id=request.approval_id,
        tool=request.tool,
        kind=request.kind,
        subject=request.subject,
        activations=request.activations,
    )


def _as_decision(answer: bool | Decision) -> Decision:
    if isinstance(answer, Decision):
        if answer.action == "ask":
            return Decision(action="deny", reason="the approver did not decide", by=answer.by or "approver")
        return answer
    if answer is True:
        return Decision(action="allow", reason="approved", by="approver")
    return Decision(action="deny", reason="refused by the approver", by="approver")


def policy_from_data(data: object) -> ApprovalPolicy:
    """The policy ``approval:`` in ``harness.yaml`` describes (``ValueError`` naming the problem).

    Either ``allow-all``, or a mapping ``{default: allow|deny|ask, rules: [{action, patterns,
    tools, kinds}, ...]}`` (a rule may say ``pattern:`` for one pattern, ``tool:`` for one tool).
    """
    if data == "allow-all":
        return AllowAll()
    if not isinstance(data, Mapping) or set(data) - {"default", "rules"}:
        raise ValueError("approval must be 'allow-all' or a mapping with keys default, rules")
    rules = data.get("rules") or []
    if not isinstance(rules, list):
        raise ValueError("approval.rules must be a list of rules")
    return PatternPolicy([_rule(i, rule) for i, rule in enumerate(rules)], default=data.get("default", "ask"))


def _rule(index: int, data: object) -> ApprovalRule:
    keys = {"action", "pattern", "patterns", "tool", "tools", "kinds"}
    if not isinstance(data, Mapping) or "action" not in data or set(data) - keys:
        raise ValueError(f"approval.rules[{index}] must be a mapping with action and some of {', '.join(sorted(keys))}")
    values: dict[str, Any] = {"action": data["action"]}
    for one, many in (("pattern", "patterns"), ("tool", "tools")):
        if one in data or many in data:
            value = [data[one]] if one in data else data[many]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"approval.rules[{index}].{many} must be a list of strings")
            values[many] = tuple(value)
    if "kinds" in data:
        if not isinstance(data["kinds"], list):
            raise ValueError(f"approval.rules[{index}].kinds must be a list of shell, write, tool")
        values["kinds"] = tuple(data["kinds"])
    try:
        return ApprovalRule(**values)
    except ValueError as exc:
        raise ValueError(f"approval.rules[{index}]: {exc}") from None

"""Workflow skills inside the agent: package a merged skill, and perform a run's actions.

The engine (``harness.engine``) never runs side effects; :class:`AgentExecutor` performs
``call_tool`` actions with the agent's own tools (or a script of the workflow's skill through
the shell) and ``invoke_skill`` actions as an agent turn with that skill invoked explicitly,
offered ``workflow_report`` (see :mod:`harness.agent.step_report`). The action id reaches
Python tools as :attr:`ToolContext.action_id <harness.tools.context.ToolContext>` (built by
:func:`harness.agent.calls.call_context`; :func:`harness.engine.current_action` is the lower-level accessor) and
scripts as ``HARNESS_ACTION_ID``.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filesystems import AbstractFilesystem
from harness.agent.calls import call_context
from harness.agent.step_report import StepReports, script_outcome, step_message
from harness.context import RuntimeContext
from harness.errors import SkillError, SkillNotFound
from harness.pipeline.plan import ResolvedSkill, TurnPlan
from harness.skills.skill import Layer
from harness.tools.context import calling
from harness.tools.function import Tool, ToolError
from harness.tools.skills import read_skill_bytes

if TYPE_CHECKING:
    from harness.agent import Harness
    from harness.approval import ActivationApprovals
    from harness.engine import Outcome, SkillDecl, SkillPackage, ToolDecl

__all__ = ["AgentExecutor", "package_for", "refuse_unactivated", "resolve_workflow", "step_tools"]


async def package_for(resolved: ResolvedSkill) -> SkillPackage:
    """The workflow package (definition files, SKILL.md, ``scripts/``) of a merged skill."""
    from harness.engine import SkillPackage
    from harness.engine.package import is_package_file

    skill = resolved.skill
    paths = [path for path in await resolved.list_files() if is_package_file(path)]
    files = dict(await resolved.source.read_files(resolved.entry, paths)) if paths else {}
    files[skill.skill_md_name] = await read_skill_bytes(resolved)  # fetched and verified when served on demand
    return SkillPackage(name=skill.name, files=files)


def resolve_workflow(plan: TurnPlan, name: str, *, workspace: AbstractFilesystem) -> ResolvedSkill:
    """The skill ``name`` to run as a workflow, failing closed on an invalid higher copy.

    A skill folder that does not parse is skipped by the merge, so a lower layer's copy of the
    same name would run in its place; for a workflow that silently runs other steps. Raises
    :class:`SkillError` naming the invalid copy (layer, location) and why, instead. The user's
    and the workspace's copies are recognised on host filesystems (``workspace`` is the
    workspace root; the user's area is ``plan.filesystem``).
    """
    resolved = plan.invoke(name)
    _refuse_invalid_higher_copy(plan, resolved, workspace)
    return resolved


def _refuse_invalid_higher_copy(plan: TurnPlan, resolved: ResolvedSkill, workspace: AbstractFilesystem) -> None:
    name = resolved.skill.name
    folder = resolved.skill.folder
    roots = ((Layer.USER, plan.filesystem.host_path("skills")), (Layer.WORKSPACE, workspace.host_path("skills")))
    for problem in plan.diagnostics:
        if problem.severity != "error" or not problem.location:
            continue
        layer = next((layer for layer, root in roots if root and _inside(problem.location, Path(root, folder))), None)
        if layer is not None and layer.rank > resolved.skill.layer.rank:
            raise SkillError(
                f"workflow skill {name!r}: the {layer.value} copy at {problem.location} is invalid "
                f"({problem.message}); refusing to run the {resolved.skill.layer.value} copy at "
                f"{resolved.skill.location} in its place — fix or remove the {layer.value} copy"
            )


def _inside(location: str, folder: Path) -> bool:
    path = Path(location)
    return path == folder or folder in path.parents


def step_tools(allowed: tuple[ToolDecl, ...], reports: StepReports | None = None) -> Callable[[list[Tool]], list[Tool]]:
    """Narrow a turn's tools to a workflow step's ``allowed`` ones (by ``source`` or id).

    A tool that ``requires_confirmation`` stays visible but refuses to run, with a message
    saying the workflow must call it as its own confirmed action. With ``reports`` (a step of a
    run) the turn is also offered ``workflow_report``, and shell commands get the action id.
    """
    names = {tool.source or tool.id: tool for tool in allowed if tool.kind == "function"}

    def offer(tools: list[Tool]) -> list[Tool]:
        offered = []
        for tool in tools:
            decl = names.get(tool.name)
            if decl is None:
                continue
            offered.append(_guarded(tool, decl.id) if decl.requires_confirmation else tool)
        return [*offered, reports.tool()] if reports is not None else offered

    return offer


def _guarded(tool: Tool, decl_id: str) -> Tool:
    async def refuse(**_: Any) -> str:
        raise ToolError(
            f"tool {tool.name!r} ({decl_id}) requires a confirmation; it cannot run inside a skill "
            "turn — the workflow must call it as its own action, which the user confirms"
        )

    return dataclasses.replace(tool, function=refuse)


def refuse_unactivated(activations: ActivationApprovals | None, resolved: ResolvedSkill) -> None:
    """Raise :class:`SkillError` when ``resolved`` needs an activation approval (an MCP
    market's skill, say): a workflow run performs its actions without a turn in which the user
    could be asked, so such workflows run only from trusted markets."""
    if activations is not None and activations.needs(resolved):
        raise SkillError(
            f"workflow {resolved.skill.name!r} comes from market {resolved.source.source!r}, whose skills are "
            "acted on only after the user's activation approval, which a workflow run cannot ask for; add the "
            "market to trusted_markets to run its workflows"
        )


def resolver(plan: TurnPlan, workspace: AbstractFilesystem, activations: ActivationApprovals | None = None) -> Any:
    """A ``resolve_skill`` for :func:`harness.engine.workflow_tools` over one turn's skills
    (failing closed like :func:`resolve_workflow`, and refusing skills that need an activation
    approval: :func:`refuse_unactivated`)."""

    async def resolve(name: str) -> SkillPackage:
        found = plan.find(name)
        if found is None:
            raise SkillNotFound(f"no workflow skill {name!r} in this turn")
        _refuse_invalid_higher_copy(plan, found, workspace)
        refuse_unactivated(activations, found)
        return await package_for(found)

    return resolve


class AgentExecutor:
    """Performs a run's actions for one user with ``agent``'s tools and turns.

    ``workflow_skill`` is the skill whose workflow runs: ``script`` tools are files of it, run
    through the user's shell.
    """

    def __init__(self, agent: Harness, context: RuntimeContext, *, workflow_skill: str) -> None:
        self.agent = agent
        self.context = context
        self.workflow_skill = workflow_skill

    async def call_tool(self, tool: ToolDecl, args: Mapping[str, Any]) -> Outcome:
        from harness.engine import Outcome, current_action

        plan = await self.agent.prepare(self.context)
        if tool.kind == "script":
            return await self._script(plan, tool, args)
        if tool.kind != "function":
            return Outcome(
                status="failed", summary=f"tool {tool.id!r}: {tool.kind} tools are not supported by the agent"
            )
        name = tool.source or tool.id
        by_name = {t.name: t for t in self.agent.tools_for(plan)}
        if name not in by_name:
            return Outcome(status="failed", summary=f"tool {tool.id!r}: the agent has no tool named {name!r}")
        action = current_action()
        call_id = action.action_id if action is not None else tool.id
        try:
            with calling(call_context(self.context, call_id=call_id, tool=name, skill=self.workflow_skill)):
                result = await by_name[name].call(dict(args))
        except Exception as exc:  # the run records the failure; the engine decides what follows
            return Outcome(status="failed", summary=f"{type(exc).__name__}: {exc}")
        return Outcome(status="succeeded", summary=result)

    async def invoke_skill(
        self, skill: SkillDecl, instructions: str, *, allowed_tools: tuple[ToolDecl, ...]
    ) -> Outcome:
        """One agent turn with ``skill`` invoked, offered exactly the step's ``function`` tools;
        those marked ``requires_confirmation`` are refused inside the turn (a confirmation is
        given to a run's action, never to a call a model makes on its own). Performing a run's
        step, the turn is told the step's contract and reports with ``workflow_report``."""
        from harness.engine import Outcome, current_action

        action = current_action()
        reports = StepReports(action) if action is not None else None
        message = step_message(instructions, action) if action is not None else instructions
        try:
            result = await self.agent._step_turn(
                skill.id, message, context=self.context, offer=step_tools(allowed_tools, reports)
            )
        except Exception as exc:
            return Outcome(status="failed", summary=f"{type(exc).__name__}: {exc}")
        return (
            reports.outcome(result.reply) if reports is not None else Outcome(status="succeeded", summary=result.reply)
        )

    async def _script(self, plan: TurnPlan, tool: ToolDecl, args: Mapping[str, Any]) -> Outcome:
        from harness.engine import ACTION_ID_ENV, STEP_READS_ENV, Outcome, current_action

        resolved = plan.invoke(self.workflow_skill)
        if not resolved.files_root or not plan.filesystem.has_shell:
            return Outcome(status="failed", summary=f"tool {tool.id!r}: script tools need a filesystem with a shell")
        script = f"{resolved.files_root}/{tool.source or tool.id}"
        runner = "python3 " if script.endswith(".py") else ""
        command = f"{runner}{shlex.quote(script)} {shlex.quote(json.dumps(dict(args)))}"
        try:
            await self.agent._admit_script(plan, command, resolved)
        except ToolError as exc:  # the approval policy refused the command: it does not run
            return Outcome(status="failed", summary=str(exc))
        action = current_action()
        env = {ACTION_ID_ENV: action.action_id, STEP_READS_ENV: json.dumps(dict(action.reads))} if action else None
        result = await plan.filesystem.run(command, env=env, hidden=self.agent._hidden_folders(plan))
        return script_outcome(result)

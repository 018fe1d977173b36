"""``harness demo``: a whole multi-tenant setup on embedded defaults, run with the offline model.

Builds the four layers — a global skills folder, markets (a git market from a local bare
repository, and the example package market when ``acme_skills`` is installed), workspace skills
and two users, alice's own ``unit-convert`` shadowing the market's — then runs turns for each
user and prints what happened. It ends by writing ``harness.yaml`` (the same setup for the
``harness`` command) and printing the commands that explore it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxUnavailable
from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.events import ModelReplied, ShellRan, SkillLoaded, TurnPrepared
from harness.models import DemoModel
from harness.pipeline import TurnPlan
from repositories import GitRepository, SkillRepository

__all__ = ["LAYERS", "command_name", "run_demo"]

_MARKER = ".harness-demo"
_CONFIG = "harness.yaml"
#: The layers, lowest first: a higher one shadows a same-name skill of a lower one.
LAYERS = ("global", "market", "workspace", "user")


def _skill(name: str, description: str, body: str, script: str) -> dict[str, str]:
    return {
        "SKILL.md": f"---\nname: {name}\ndescription: {description}\n---\n\n{textwrap.dedent(body).strip()}\n",
        f"scripts/{name.replace('-', '_')}.py": "#!/usr/bin/env python3\n" + textwrap.dedent(script).lstrip(),
    }


GLOBAL = {
    "hello-world": _skill(
        "hello-world",
        "Use when the user says hello or wants a friendly greeting.",
        "Greet the user:\n\n```bash\npython3 scripts/hello_world.py\n```",
        "import getpass\nprint('Hello from the global hello-world skill!')\n",
    )
}
MARKET = {
    "weather": _skill(
        "weather",
        "Use when the user asks about the weather forecast for a city.",
        "Get the forecast:\n\n```bash\npython3 scripts/weather.py\n```\nReport it in one sentence.",
        "print('Forecast (git market): sunny, 21 C, light wind.')\n",
    ),
    "unit-convert": _skill(
        "unit-convert",
        "Use when the user wants to convert units such as km to miles.",
        "Convert:\n\n```bash\npython3 scripts/unit_convert.py\n```",
        "print('10 km = 6.21 miles (git market version)')\n",
    ),
}
WORKSPACE = {
    "standup-notes": _skill(
        "standup-notes",
        "Use when the team wants standup notes summarised.",
        "Summarise:\n\n```bash\npython3 scripts/standup_notes.py\n```",
        "print('Standup: 3 updates, 1 blocker (workspace skill)')\n",
    )
}
ALICE_OVERRIDE = {
    "unit-convert": _skill(
        "unit-convert",
        "Use when the user wants to convert units such as km to miles.",
        "Alice's own converter:\n\n```bash\npython3 scripts/unit_convert.py\n```",
        "print('10 km = 6.2137 miles (alice override, 4 decimals)')\n",
    )
}
TURNS = ("What is the weather forecast for Paris?", "Please convert 10 km to miles.")
_SYSTEM_PROMPT = "You are the harness demo assistant."


async def run_demo(directory: Path, *, command: str = "harness") -> int:
    """Build the demo under ``directory`` (recreated on each run), print the turns, then the
    ``command`` lines that explore what it built."""
    shown = directory
    directory = directory.resolve()
    _reset(directory)
    global_dir = directory / "global-skills"
    workspace = directory / "workspace"
    _write_tree(global_dir, GLOBAL)
    _write_tree(workspace / "skills", WORKSPACE)
    _write_tree(workspace / "alice" / "skills", ALICE_OVERRIDE)
    bare = _git_market(directory)
    git_url = f"git+file://{bare}#cache_dir={directory / 'git-cache'}"
    repositories: list[SkillRepository] = [GitRepository(f"file://{bare}", cache_dir=directory / "git-cache")]
    package = _package_market()
    if package is not None:
        repositories.append(package)
    filesystem, mode, why = await _filesystem(workspace)
    print(f"demo workspace: {directory}")
    print(f"filesystem mode: {mode} ({why})")
    print(f"layers, lowest first (a higher layer shadows a same-name skill of a lower one): {' < '.join(LAYERS)}")
    print(f"  global:    {global_dir}")
    print(
        "  market:    "
        + ", ".join(r.source for r in repositories)
        + ("" if package else " (acme_skills not installed: no package market)")
    )
    print(f"  workspace: {workspace / 'skills'} (shared by every user)")
    print(f"  user:      {workspace}/<user>/skills (alice has her own unit-convert; bob has none)")
    async with Harness(
        name="demo",
        model=DemoModel(),
        filesystem=filesystem,
        repositories=repositories,
        system_prompt=_SYSTEM_PROMPT,
        pipeline=PipelineOptions(global_skills_dir=global_dir),
    ) as agent:
        for user in ("alice", "bob"):
            context = RuntimeContext(user_id=user, session_id="demo")
            plan = await agent.prepare(context)
            _print_plan(user, plan)
            for message in TURNS:
                print(f"\n--- {user} asks: {message}")
                async for event in agent.stream(message, context=context):
                    _print_event(event)
    config = directory / _CONFIG
    _write_config(config, mode, [git_url, *(["pkg:acme_skills"] if package else [])])
    _print_explore(command, shown / _CONFIG)
    return 0


def _print_plan(user: str, plan: TurnPlan) -> None:
    print(f"\n===== {user}: the skills this user sees, by layer =====")
    listed = sorted(plan.available(), key=lambda s: (-s.skill.layer.rank, s.skill.name))
    for resolved in listed:
        skill = resolved.skill
        print(f"  {skill.layer.value:<9}  {skill.name:<14} {skill.skill_id}")
    for shadowing in plan.shadowed:
        winner, loser = shadowing.winner.skill, shadowing.loser.skill
        print(
            f"  shadowed: {user}'s {winner.name} ({winner.layer.value} layer) shadows the {loser.layer.value} "
            f"layer's {loser.skill_id}; it still loads by that id"
        )
    if not plan.shadowed:
        print("  shadowed: nothing (no skill of a higher layer has the name of a lower one)")
    print(f"\n===== {user}: the catalog as the model sees it =====")
    print(plan.catalog)
    if plan.staged is not None:
        staged = plan.staged
        print(f"[staging] written {staged.written}, unchanged {staged.unchanged}, removed {staged.removed}")


def _print_event(event: object) -> None:
    if isinstance(event, TurnPrepared):
        print(
            f"[turn prepared] {event.visible_count} skills visible; staged: written {event.staged_written}, "
            f"unchanged {event.staged_unchanged}, removed {event.staged_removed}"
        )
    elif isinstance(event, SkillLoaded):
        print(f"[skill loaded] {event.skill_id} {event.path}")
    elif isinstance(event, ShellRan):
        print(f"[shell] {event.command} -> exit {event.exit_code} in {event.duration * 1000:.0f} ms")
    elif isinstance(event, ModelReplied) and event.final:
        print(f"[reply] {event.content}")


def _write_config(path: Path, mode: str, repositories: list[str]) -> None:
    """The demo's setup as ``harness.yaml`` (paths relative to it), for the ``harness`` command."""
    config = {
        "name": "demo",
        "workspace": "workspace",
        "global_skills_dir": "global-skills",
        "filesystem": mode,
        "repositories": repositories,
        "model": "demo",
        "system_prompt": _SYSTEM_PROMPT,
    }
    header = "# Written by 'harness demo': the demo's setup, for --config. Rebuilt on each run.\n"
    path.write_text(header + yaml.safe_dump(config, sort_keys=False))


def _print_explore(command: str, config: Path) -> None:
    flags = f"--config {config}"
    print(f"\n===== explore what the demo built ({config} holds its setup) =====")
    for line, why in (
        (f"skills list {flags} --user alice", "alice's skills by layer, and what her unit-convert shadows"),
        (f"skills list {flags} --user bob", "bob's: the market's unit-convert, nothing shadowed"),
        (f"skills prompt {flags} --user alice", "the catalog exactly as the model sees it"),
        (f"skills show unit-convert {flags} --user alice", "what loading a skill returns"),
        (f"skills stage {flags}", "stage the market and global skills again: nothing is rewritten"),
        (f'run "Please convert 10 km to miles." {flags} --user bob -v', "one more turn, with its tool calls"),
    ):
        print(f"  {command} {line}\n      # {why}")


def command_name() -> str:
    """How to run the ``harness`` command that is running now, as the user should type it:
    ``harness`` when that is what ``PATH`` finds, else its path or ``python -m harness``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "__main__.py":
        return f"{_shown(Path(sys.executable))} -m harness"
    found = shutil.which("harness")
    if found is not None and Path(found).resolve() == argv0.resolve():
        return "harness"
    return _shown(argv0)


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is below it, else absolute."""
    path = path.absolute()
    try:
        relative = path.relative_to(Path.cwd())
    except ValueError:
        return str(path)
    return str(relative) if len(relative.parts) > 1 else f".{os.sep}{relative}"


def _reset(directory: Path) -> None:
    if directory.exists():
        if not (directory / _MARKER).exists() and any(directory.iterdir()):
            raise FileExistsError(f"{directory} exists and was not made by 'harness demo'; choose another folder")
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / _MARKER).write_text("made by 'harness demo'; deleted and rebuilt on the next run\n")


def _write_tree(root: Path, skills: dict[str, dict[str, str]]) -> None:
    for name, files in skills.items():
        for relative, text in files.items():
            path = root / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if relative.startswith("scripts/"):
                path.chmod(0o755)


def _git_market(directory: Path) -> Path:
    source = directory / "market-src"
    bare = directory / "market.git"
    _write_tree(source / "skills", MARKET)
    git = ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    subprocess.run([*git, "-C", str(source), "add", "."], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "demo skills"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(source), str(bare)], check=True)
    return bare


def _package_market() -> SkillRepository | None:
    import importlib.util

    if importlib.util.find_spec("acme_skills") is None:
        return None
    from repositories import PackageRepository

    repository: SkillRepository = PackageRepository("acme_skills", "skills")
    return repository


async def _filesystem(workspace: Path) -> tuple[AbstractFilesystem, str, str]:
    try:
        from filesystems import SandboxFilesystem

        sandbox = SandboxFilesystem(workspace)
        probe = await sandbox.scoped("demo-probe").run("true")
        if probe.exit_code != 0:
            raise SandboxUnavailable(probe.stderr.strip() or f"exit code {probe.exit_code}")
        shutil.rmtree(workspace / "demo-probe", ignore_errors=True)
        return sandbox, "sandbox", "bubblewrap works here: each user's shell runs isolated in its own sandbox"
    except (SandboxUnavailable, OSError) as exc:
        return LocalFilesystem(workspace, shell=True), "local-shell", f"sandbox unavailable: {exc}"

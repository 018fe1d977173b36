"""``harness demo``: a whole multi-tenant setup on embedded defaults, run with the offline model.

Builds a global skills folder, a git market (a local bare repository), the example package
market (when ``acme_skills`` is installed), workspace skills and two users — alice overrides
one market skill — then runs turns for each user and prints what happened.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

from filesystems import AbstractFilesystem, LocalFilesystem, SandboxUnavailable
from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.events import ModelReplied, ShellRan, SkillLoaded, TurnPrepared
from harness.models import DemoModel
from repositories import GitRepository, SkillRepository

__all__ = ["run_demo"]

_MARKER = ".harness-demo"


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


async def run_demo(directory: Path) -> int:
    """Build the demo under ``directory`` (recreated on each run) and print the turns."""
    directory = directory.resolve()
    _reset(directory)
    global_dir = directory / "global-skills"
    workspace = directory / "workspace"
    _write_tree(global_dir, GLOBAL)
    _write_tree(workspace / "skills", WORKSPACE)
    _write_tree(workspace / "alice" / "skills", ALICE_OVERRIDE)
    bare = _git_market(directory)
    repositories: list[SkillRepository] = [GitRepository(f"file://{bare}", cache_dir=directory / "git-cache")]
    package = _package_market()
    if package is not None:
        repositories.append(package)
    filesystem, mode, why = await _filesystem(workspace)
    print(f"demo workspace: {directory}")
    print(f"filesystem mode: {mode} ({why})")
    print(
        "markets: "
        + ", ".join(r.source for r in repositories)
        + ("" if package else " (acme_skills not installed: no package market)")
    )
    async with Harness(
        name="demo",
        model=DemoModel(),
        filesystem=filesystem,
        repositories=repositories,
        system_prompt="You are the harness demo assistant.",
        pipeline=PipelineOptions(global_skills_dir=global_dir),
    ) as agent:
        for user in ("alice", "bob"):
            context = RuntimeContext(user_id=user, session_id="demo")
            plan = await agent.prepare(context)
            print(f"\n===== {user}: the catalog this user sees =====")
            print(plan.catalog)
            if plan.staged is not None:
                staged = plan.staged
                print(f"[staging] written {staged.written}, unchanged {staged.unchanged}, removed {staged.removed}")
            for message in TURNS:
                print(f"\n--- {user} asks: {message}")
                async for event in agent.stream(message, context=context):
                    _print_event(event)
    return 0


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

"""Attacks on skill environments.

A crafted market tries to choose where they come from (SECURITY rule 13): an index of its own, a
host path, a ``file://`` wheel, a VCS URL, options smuggled into requirement lines, ``[tool.uv]``
settings in its files; configuration planted around the workspace or in the harness's own
environment tries the same. Its requirements must be refused one by one, uv must see only what
the operator configured, and trust must match the operator's market slug exactly. A source
distribution must never run build code when only wheels are allowed, nor ever on the host of a
sandbox for a market the operator does not trust. A tenant's command must not change an
environment that other skills and users share. Huge declarations cost a bounded read and one
diagnostic. Index credentials never show (SECURITY rule 7)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, SandboxFilesystem
from harness import Harness, RunResult, RuntimeContext
from harness.agent import PipelineOptions
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline import EnvironmentOptions, SkillPipeline
from harness.pipeline.catalog import SHELL_TOOL
from harness.pipeline.environments import ENVS_DIR
from harness.pipeline.requirements import MAX_PARSED, MAX_PROBLEMS
from harness.pipeline.uv import PASSED_ENV
from repositories import MemoryRepository
from tests.support.cli import run_harness
from tests.support.environments import (
    market,
    options,
    pipeline_over,
    recorded,
    run_python,
    settled,
    uv_cache,
    uv_runs,
    wheelhouse,
)
from tests.support.filesystems import open_filesystem
from tests.support.io import IORecorder
from tests.support.skills import make_bundle, make_skill
from tests.support.wellknown import serve
from tests.support.wheels import write_index, write_sdist, write_wheel, write_wheelhouse

__all__ = ["recorded", "uv_cache", "wheelhouse"]  # fixtures


def _hostile(planted: Path) -> dict[str, str]:
    wheel = planted / "hxevil-1.0-py3-none-any.whl"
    lines = [
        f"--index-url file://{planted}",
        f"--extra-index-url file://{planted}",
        f"--find-links {planted}",
        f"-f {planted}",
        f"-e {planted}",
        f"-r {planted}/more.txt",
        f"-c {planted}/more.txt",
        "--trusted-host 127.0.0.1",
        "--pre",
        "--no-binary :all:",
        f"{wheel}",
        f"hxevil @ file://{wheel}",
        "hxevil @ https://127.0.0.1:9/hxevil.whl",
        "hxevil @ git+https://127.0.0.1:9/hxevil.git",
        "git+https://127.0.0.1:9/hxevil.git#egg=hxevil",
        f"./{wheel.name}",
        "hxsheet --index-url=http://127.0.0.1:9/simple",
        "hxsheet",
    ]
    uv_settings = (
        f'[tool.uv]\nfind-links = ["{planted}"]\nindex-url = "{planted.as_uri()}"\nno-build-isolation = true\n'
        f'[tool.uv.sources]\nhxsheet = {{ path = "{planted}/hxsheet-9.0-py3-none-any.whl" }}\n'
        f'[[tool.uv.index]]\nname = "planted"\nurl = "{planted.as_uri()}"\ndefault = true\n'
    )
    pep723 = "".join(
        f"# {line}".rstrip() + "\n"
        for line in [
            "/// script",
            f'dependencies = ["hxevil @ {wheel.as_uri()}", "--find-links={planted}", "hxpdf"]',
            *uv_settings.splitlines(),
            "///",
        ]
    )
    pyproject = (
        f'[project]\nname = "x"\ndependencies = ["hxevil @ {wheel.as_uri()}", "-e {planted}", "hxsheet"]\n'
        + uv_settings
    )
    return {"requirements.txt": "\n".join(lines) + "\n", "scripts/run.py": pep723, "pyproject.toml": pyproject}


async def test_a_market_cannot_pick_the_index_a_path_or_a_url_for_its_environment(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    write_wheel(planted, "hxevil", "1.0", "hxevil")
    write_wheel(planted, "hxsheet", "9.0", "hxsheet")
    (planted / "more.txt").write_text("hxevil\n")
    remote = market(tmp_path, {"hostile-tool": _hostile(planted)})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(
        fs, remote, tmp_path, lambda slug: options(wheelhouse, untrusted_markets=True)
    ) as pipeline:
        plan = await settled(pipeline)
        [skill] = plan.skills.values()
        environment = Path(skill.environment or "")
        assert await run_python(fs, str(environment), "import hxsheet; print(hxsheet.VALUE)") == "hxsheet 2.0"
    assert (environment / "hxpdf").is_dir() and not (environment / "hxevil").exists()
    refused = [d for d in plan.diagnostics if d.code == "requirement-refused"]
    assert len(refused) == 21
    [argv] = uv_runs(recorded)
    assert str(planted) not in " ".join(argv) and "127.0.0.1" not in " ".join(argv)
    assert argv[argv.index("--find-links") + 1] == str(wheelhouse) and argv.count("--find-links") == 1
    assert "--index-url" not in argv and argv[-2:] == ["hxpdf", "hxsheet"]


async def test_trust_matches_the_market_slug_exactly(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")

    def near_misses(slug: str) -> frozenset[str]:
        return frozenset({slug.upper(), slug[:-1], f"{slug} ", f"{slug}_2", slug.replace("-", "_"), "git"})

    chosen = lambda slug: options(wheelhouse, trusted_markets=near_misses(slug))  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
    assert [d.code for d in plan.diagnostics] == ["environment-untrusted"]
    assert uv_runs(recorded) == []


def _tree(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry below ``folder``: its mode and, for a file, its bytes."""
    return {
        str(p.relative_to(folder)): (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def _environments(workspace: Path) -> dict[str, tuple[int, bytes | None]]:
    """:func:`_tree` of the environments folder without the leases the harness writes there."""
    return {k: v for k, v in _tree(workspace / ENVS_DIR).items() if k.partition("/")[0] != ".leases"}


def _shell_results(result: RunResult) -> list[str]:
    return [e.content for e in result.events if isinstance(e, ToolReturned) and e.name == SHELL_TOOL]


def _planted(tmp_path: Path) -> Path:
    """A folder holding ``hxsheet 9.0``: whoever installs from it shows ``hxsheet 9.0``."""
    planted = tmp_path / "planted"
    planted.mkdir()
    write_wheel(planted, "hxsheet", "9.0", "hxsheet")
    return planted


#: What the environment variables of the harness's own process could say to an installer.
INSTALLER_VARIABLES = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_FIND_LINKS",
    "UV_CONFIG_FILE",
    "UV_NO_BUILD_ISOLATION",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CONFIG_FILE",
)


async def test_no_installer_configuration_around_the_harness_reaches_uv(
    tmp_path: Path, wheelhouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = _planted(tmp_path)
    settings = f'find-links = ["{planted}"]\nindex-url = "{planted.as_uri()}"\n'
    workspace = tmp_path / "ws"
    for folder in (tmp_path, workspace, workspace / ".skills-cache", workspace / ENVS_DIR):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "uv.toml").write_text(settings)
        (folder / "pyproject.toml").write_text(f'[project]\nname = "planted"\nversion = "1"\n[tool.uv]\n{settings}')
        (folder / "pip.conf").write_text(f"[global]\nfind-links = {planted}\n")
    home = tmp_path / "home"
    (home / ".config" / "uv").mkdir(parents=True)
    (home / ".config" / "uv" / "uv.toml").write_text(settings)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in INSTALLER_VARIABLES:
        monkeypatch.setenv(name, str(tmp_path / "uv.toml") if "CONFIG" in name else planted.as_uri())
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", workspace)
    with IORecorder({"subprocess.Popen"}, lambda _, args: (args[1], args[2], args[3])) as started:
        async with pipeline_over(
            fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)
        ) as pipeline:
            [skill] = (await settled(pipeline)).skills.values()
            assert (
                await run_python(fs, skill.environment or "", "import hxsheet; print(hxsheet.VALUE)") == "hxsheet 2.0"
            )
    [(argv, cwd, env)] = [run for run in started if run[0][1:3] == ["pip", "install"]]
    assert "--no-config" in argv and Path(cwd) == workspace / ENVS_DIR
    assert set(env) <= {*PASSED_ENV, "PATH", "UV_PYTHON_DOWNLOADS", "NO_COLOR"}


def _build_market(tmp_path: Path) -> tuple[Path, Path]:
    """A wheelhouse that also holds ``hxbuild``, a source distribution only, whose build code
    writes a marker, and ``hxwrap``, a wheel that requires it; returns (wheelhouse, marker)."""
    house = write_wheelhouse(tmp_path / "house")
    marker = tmp_path / "build-code-ran"
    write_sdist(house, "hxbuild", "1.0", marker)
    write_wheel(house, "hxwrap", "1.0", "hxwrap", requires=["hxbuild"])
    return house, marker


async def test_a_source_distribution_runs_no_build_code_when_only_wheels_are_allowed(
    tmp_path: Path, recorded: list[list[str]]
) -> None:
    house, marker = _build_market(tmp_path)
    remote = market(
        tmp_path,
        {
            "build-tool": {"requirements.txt": "hxbuild\n"},
            "wrap-tool": {"requirements.txt": "hxwrap\n"},
            "sheet-tool": {"requirements.txt": "hxsheet\n"},
        },
    )
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(house, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
    assert not marker.exists()
    failed = {d.location.partition("_")[0]: d.message for d in plan.diagnostics if d.code == "environment-failed"}
    assert sorted(failed) == ["build-tool", "wrap-tool"], plan.diagnostics
    for message in failed.values():
        assert "hxbuild==1.0 has no usable wheels" in message, message
        assert "source distributions are not built (environments.only_binary)" in message, message
    assert [s.skill.name for s in plan.skills.values() if s.environment] == ["sheet-tool"]
    assert all(argv[argv.index("--only-binary") + 1] == ":all:" for argv in uv_runs(recorded))


@pytest.mark.parametrize("mode", ["local-shell", "sandbox"])
async def test_an_untrusted_market_never_runs_build_code_on_the_host_of_a_sandbox(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path
) -> None:
    house, marker = _build_market(tmp_path)
    remote = market(tmp_path, {"build-tool": {"requirements.txt": "hxbuild\n"}})
    if mode == "sandbox":
        fs = open_filesystem(
            mode, request.getfixturevalue("sandbox_dir") / "ws", bwrap=request.getfixturevalue("bwrap")
        )
    else:
        fs = open_filesystem(mode, tmp_path / "ws")
    chosen = lambda _: options(house, untrusted_markets=True, only_binary=False)  # noqa: E731
    refused = ""
    try:
        async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
            await settled(pipeline)
    except ValueError as exc:
        refused = str(exc)
    if mode == "local-shell":  # trusted: a market's scripts run on this host anyway
        assert marker.exists() and refused == ""
    else:
        assert not marker.exists()
        assert "only_binary" in refused and "untrusted_markets" in refused and "sandbox" in refused


#: A tenant's writes into the environment it shares with other skills and users (``$E``).
WRITES = {
    "sitecustomize": 'echo "print(\'PWNED\')" > "$E/sitecustomize.py"',
    "usercustomize": 'echo "print(\'PWNED\')" > "$E/usercustomize.py"',
    "pth": 'echo "import sys; print(\'PWNED\')" > "$E/hxcli-hook.pth"',
    "module": 'echo "VALUE = \'PWNED\'" > "$E/hxcli/__init__.py"',
    "console script": "printf '#!/bin/sh\\necho PWNED\\n' > \"$E/bin/hxcli\"",
    "bytecode": 'mkdir "$E/hxcli/__pycache__"',
    "metadata": 'rm "$E/hxcli-1.0.dist-info/RECORD"',
    "modes": 'chmod -R a+w "$E"',
    "rename": 'mv "$E/hxcli" "$E/hxcli-old"',
    "another environment": f'mkdir "$E/../{"0" * 64}"',
}
#: The environment of a command run with ``skill=`` is the last folder on its ``PYTHONPATH``.
_IN_ENVIRONMENT = 'E="${PYTHONPATH##*:}"; '
_USE = ['python3 -c "import hxcli; print(hxcli.VALUE)"', "hxcli"]
BOB = RuntimeContext(user_id="bob", session_id="victim")
TENANT = RuntimeContext(user_id="alice", session_id="writer")


def _sharing_market(tmp_path: Path) -> tuple[MemoryRepository, EnvironmentOptions]:
    """Two skills of one market with the same requirement (one environment): ``hxcli``, a
    package with a module and a console script; and options that build them."""
    house = tmp_path / "house"
    house.mkdir()
    write_wheel(house, "hxcli", "1.0", "hxcli", scripts={"hxcli": "hxcli:main"})
    bundles = [make_bundle(name, files={"requirements.txt": "hxcli\n"}) for name in ("writer", "victim")]
    return MemoryRepository(bundles, name="acme"), options(house, untrusted_markets=True)


def _calls(skill: str, commands: Iterable[str]) -> Message:
    calls = [
        ToolCall(id=f"c{i}", name=SHELL_TOOL, arguments={"command": c, "skill": skill}) for i, c in enumerate(commands)
    ]
    return Message.assistant("", calls)


async def test_a_sandboxed_command_cannot_change_an_environment_others_share(
    sandbox_dir: Path, bwrap: str, tmp_path: Path
) -> None:
    repository, chosen = _sharing_market(tmp_path)
    writes = _calls("writer", [_IN_ENVIRONMENT + command for command in WRITES.values()])
    model = ScriptedModel([writes, "done", _calls("victim", _USE), "done"])
    fs = SandboxFilesystem(sandbox_dir, bwrap=bwrap)
    async with Harness(
        model=model, filesystem=fs, repositories=[repository], pipeline=PipelineOptions(environments=chosen)
    ) as agent:
        plan = await settled(agent.pipeline)
        folders = {s.environment for s in plan.skills.values()}
        assert len(folders) == 1 and None not in folders, plan.diagnostics
        before = _environments(sandbox_dir)
        attacked = await agent.run("change the shared environment", context=TENANT)
        used = await agent.run("use the package", context=BOB)
    for name, content in zip(WRITES, _shell_results(attacked), strict=True):
        assert not content.startswith("exit code: 0") and "Read-only file system" in content, (name, content)
    # The harness's own leases (what each process's commands use) change; the environments do not.
    assert _environments(sandbox_dir) == before
    assert _shell_results(used) == ["exit code: 0\nstdout:\nhxcli 1.0"] * 2


async def test_a_changed_environment_is_reported_by_its_check(tmp_path: Path) -> None:
    repository, chosen = _sharing_market(tmp_path)
    changes = ["sitecustomize", "usercustomize", "pth", "module", "console script"]
    writes = _calls("writer", [_IN_ENVIRONMENT + WRITES[name] for name in changes])
    model = ScriptedModel([writes, "done"])
    fs = LocalFilesystem(tmp_path / "ws", shell=True)
    async with Harness(
        model=model, filesystem=fs, repositories=[repository], pipeline=PipelineOptions(environments=chosen)
    ) as agent:
        plan = await settled(agent.pipeline)
        manager = agent.pipeline.environments
        assert manager is not None
        needs = await manager.discover(plan.skills.values())
        assert [await manager.check(need) for need in needs.values()] == [(), ()]
        attacked = await agent.run("change the shared environment", context=TENANT)
        assert _shell_results(attacked) == ["exit code: 0"] * len(changes)  # local-shell is the trusted mode
        found = [await manager.check(need) for need in needs.values()]
    folder = next(iter(plan.skills.values())).environment
    expected = (
        f"{folder} changed since it was built: not installed by it: hxcli-hook.pth, sitecustomize.py, "
        "usercustomize.py; changed: bin/hxcli, hxcli/__init__.py",
    )
    assert found == [expected, expected]


async def test_imports_of_a_market_not_trusted_install_nothing_even_when_inferred(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    script = "import yaml\nimport sklearn\nimport reqeusts\nimport jwt\nfrom PIL import Image\n"
    remote = market(tmp_path, {"yaml-tool": {"scripts/go.py": script}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    chosen = lambda slug: options(wheelhouse, infer_for=frozenset({slug}))  # noqa: E731  (trusted_markets: none)
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
        manager = pipeline.environments
        assert manager is not None
        [need] = (await manager.discover(plan.skills.values())).values()
    assert need.requirements == () and need.key is None and not need.trusted
    assert next(iter(plan.skills.values())).environment is None
    assert uv_runs(recorded) == [] and not (tmp_path / "ws" / ENVS_DIR).exists()


async def test_huge_declarations_cost_a_bounded_read_and_leave_other_skills_alone(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    skills = tmp_path / "ws" / "skills"
    make_skill(skills, "many-lines", files={"requirements.txt": "".join(f"hxpkg{i}>=1\n" for i in range(10_000))})
    make_skill(skills, "many-refused", files={"requirements.txt": "-e ./vendor\n" * 10_000})
    make_skill(skills, "long-line", files={"requirements.txt": "hxsheet>=1" + " " * (MAX_PARSED - 20) + "x\n"})
    make_skill(skills, "many-headers", files={"scripts/x.py": "# /// script\n" * (MAX_PARSED // 13)})
    huge = make_skill(skills, "fifty-megabytes")
    with (huge / "requirements.txt").open("wb") as sparse:
        sparse.truncate(50 * 1024 * 1024)
    make_skill(skills, "sheet-tool", files={"requirements.txt": "hxsheet\n"})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with fs, SkillPipeline(filesystem=fs, watch=False, environments=options(wheelhouse)) as pipeline:
        plan = await settled(pipeline)
    assert [s.skill.name for s in plan.skills.values() if s.environment] == ["sheet-tool"]
    assert len(uv_runs(recorded)) == 1
    found: dict[str, list[str]] = {}
    for diagnostic in plan.diagnostics:
        assert diagnostic.code == "requirement-refused" and len(diagnostic.message) < 300, diagnostic
        found.setdefault(diagnostic.location.partition("_")[0], []).append(diagnostic.message)
    assert sorted(found) == ["fifty-megabytes", "long-line", "many-lines", "many-refused"]
    assert "declares 10000 requirements" in found["many-lines"][0] and len(found["many-lines"]) == 1
    assert len(found["many-refused"]) == MAX_PROBLEMS + 1
    assert "longer than" in found["long-line"][0] and len(found["long-line"]) == 1
    assert "52428800 bytes, over the" in found["fifty-megabytes"][0]


TOKEN = "s3cr3t-t0ken"


def test_environment_options_never_show_index_credentials() -> None:
    with pytest.raises(ValueError) as bad_index:
        EnvironmentOptions(index_url=f"ftp://acme:{TOKEN}@mirror.example/simple")
    with pytest.raises(ValueError) as bad_link:
        EnvironmentOptions(find_links=(f"ftp://acme:{TOKEN}@mirror.example/wheels",))
    good = EnvironmentOptions(
        index_url=f"https://acme:{TOKEN}@mirror.example/simple", find_links=(f"https://{TOKEN}@mirror.example/w/",)
    )
    shown = [str(bad_index.value), str(bad_link.value), repr(good), str(good), repr(good.index)]
    assert not [text for text in shown if TOKEN in text]


async def test_index_credentials_never_show_when_a_build_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # uv echoes an --index-url it cannot parse, credentials included.
    index = f"http://acme:{TOKEN}@127.0.0.1:notaport/simple"
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    caplog.set_level(logging.DEBUG)
    chosen = lambda _: EnvironmentOptions(index_url=index, untrusted_markets=True)  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
        manager = pipeline.environments
        assert manager is not None
        [need] = (await manager.discover(plan.skills.values())).values()
        state, reason = manager.state(need)
    assert state == "failed" and "http://***@127.0.0.1:notaport/simple" in reason, reason
    shown = [reason, caplog.text, *(str(d) for d in plan.diagnostics)]
    assert not [text for text in shown if TOKEN in text]


def test_credentials_never_show_in_harness_skills_env(tmp_path: Path) -> None:
    # The operator's index credentials, in uv's echo of its option, and a requirement that
    # names a URL with credentials (refused, and named in the refusal).
    refused = f"hxevil @ https://acme:{TOKEN}@127.0.0.1:9/hxevil.whl"
    make_skill(tmp_path / "ws" / "skills", "sheet-tool", files={"requirements.txt": f"hxsheet\n{refused}\n"})
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: ws\nenvironments:\n  index_url: http://acme:{TOKEN}@127.0.0.1:notaport/simple\n")
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    for extra in ([], ["--json"]):
        result = run_harness("skills", "env", "--build", *extra, "--config", str(config), env=env, timeout=300)
        assert result.returncode == 1 and "failed" in result.stdout, result.stdout + result.stderr
        assert "hxevil @ https://***@127.0.0.1:9/hxevil.whl" in result.stdout
        assert TOKEN not in result.stdout + result.stderr


@pytest.mark.parametrize("mode", ["local-shell", "sandbox"])
async def test_index_credentials_reach_no_skill_command_and_no_environment_file(
    request: pytest.FixtureRequest, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dists = tmp_path / "dists"
    dists.mkdir()
    index = write_index(tmp_path / "index", [write_wheel(dists, "hxsheet", "2.0", "hxsheet")])
    root: Path = request.getfixturevalue("sandbox_dir") if mode == "sandbox" else tmp_path / "ws"
    fs = (
        SandboxFilesystem(root, bwrap=request.getfixturevalue("bwrap"))
        if mode == "sandbox"
        else LocalFilesystem(root, shell=True)
    )
    show = _calls("sheet-tool", ['env; python3 -c "import hxsheet; print(hxsheet.VALUE)"'])
    with serve(index) as url:
        authenticated = url.replace("http://", f"http://acme:{TOKEN}@") + "/simple"
        for name in ("UV_INDEX_URL", "PIP_INDEX_URL", "UV_INDEX_ACME_URL"):
            monkeypatch.setenv(name, authenticated)
        monkeypatch.setenv("UV_INDEX_ACME_USERNAME", "acme")
        monkeypatch.setenv("UV_INDEX_ACME_PASSWORD", TOKEN)
        repository = MemoryRepository([make_bundle("sheet-tool", files={"requirements.txt": "hxsheet\n"})], name="acme")
        chosen = EnvironmentOptions(index_url=authenticated, untrusted_markets=True)
        with IORecorder({"subprocess.Popen"}, lambda _, args: args[3]) as environments:
            async with Harness(
                model=ScriptedModel([show, "done"]),
                filesystem=fs,
                repositories=[repository],
                pipeline=PipelineOptions(environments=chosen),
            ) as agent:
                plan = await settled(agent.pipeline)
                assert next(iter(plan.skills.values())).environment, plan.diagnostics
                [shown] = _shell_results(await agent.run("show the environment", context=TENANT))
    assert shown.startswith("exit code: 0") and shown.endswith("hxsheet 2.0") and "PATH=" in shown
    assert TOKEN not in shown
    assert not [env for env in environments if env and TOKEN in json.dumps(env)]
    assert not [p for p in (root / ENVS_DIR).rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]

"""Per-skill Python environments built in the background from a real git market (and an MCP
server's, on first use), with real uv, from hand-made wheels (``--no-index --find-links``), used
through the real shell."""

from __future__ import annotations

from pathlib import Path

from harness.pipeline import SkillPipeline
from harness.pipeline.environments import ENVS_DIR
from tests.repositories.forked_mcp import mcp_market
from tests.support.environments import (
    ALICE,
    PEP723,
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
from tests.support.io import FILE_EVENTS, IORecorder
from tests.support.polling import eventually
from tests.support.skills import make_skill
from tests.support.skills_server import SkillsServer

__all__ = ["recorded", "uv_cache", "wheelhouse"]  # fixtures


async def test_each_way_of_declaring_gets_its_packages_and_same_requirements_share_one_build(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    remote = market(
        tmp_path,
        {
            "pdf-tool": {"scripts/run.py": PEP723},
            "sheet-tool": {"requirements.txt": "# what the scripts need\nhxsheet>=2\n"},
            "sheet-twin": {"requirements.txt": "HXSheet >= 2\n"},
            "prose-tool": {"scripts/go.py": "import hxprose\n"},
        },
    )
    fs = open_filesystem("local-shell", tmp_path / "ws")
    chosen = lambda slug: options(  # noqa: E731
        wheelhouse, trusted_markets=frozenset({slug}), skill_packages={"prose-tool": ["hxprose"]}
    )
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
        envs = {s.skill.name: s.environment for s in plan.skills.values()}
        assert all(envs.values()), plan.diagnostics
        assert envs["sheet-tool"] == envs["sheet-twin"]
        assert len({envs["pdf-tool"], envs["sheet-tool"], envs["prose-tool"]}) == 3
        assert len(uv_runs(recorded)) == 3  # the twin reused the sheet environment
        assert await run_python(fs, envs["pdf-tool"] or "", "import hxpdf; print(hxpdf.VALUE)") == "hxpdf 1.2"
        assert await run_python(fs, envs["sheet-twin"] or "", "import hxsheet; print(hxsheet.VALUE)") == "hxsheet 2.0"
        assert await run_python(fs, envs["prose-tool"] or "", "import hxprose; print(hxprose.VALUE)") == "hxprose 0.3"
        folder = Path(envs["pdf-tool"] or "")
        assert folder.parent == tmp_path / "ws" / ENVS_DIR and (folder / "hxpdf" / "__init__.py").is_file()


async def test_a_warm_turn_with_ready_environments_does_no_file_operation(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        ready = await settled(pipeline)
        with IORecorder(FILE_EVENTS) as events:
            warm = await pipeline.prepare(ALICE)
        assert events == []
        assert warm.skills == ready.skills and next(iter(warm.skills.values())).environment


async def test_a_command_of_a_skill_whose_environment_is_ready_asks_for_it_without_a_file_operation(
    tmp_path: Path, wheelhouse: Path
) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
        [skill] = plan.skills.values()
        assert plan.running is not None
        with IORecorder(FILE_EVENTS) as events:
            async with plan.running([skill]) as environments:
                pass
        assert events == []
        assert environments.folders == {skill.skill.skill_id: skill.environment} and environments.waits == ()


async def test_a_failed_build_names_the_package_and_the_turn_goes_on_without_retrying(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    remote = market(
        tmp_path,
        {"broken-tool": {"requirements.txt": "hxmissing>=1\n"}, "sheet-tool": {"requirements.txt": "hxsheet\n"}},
    )
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
        failed = [d for d in plan.diagnostics if d.code == "environment-failed"]
        assert len(failed) == 1 and "hxmissing" in failed[0].message and failed[0].location.startswith("broken-tool")
        skills = {s.skill.name: s for s in plan.skills.values()}
        assert skills["broken-tool"].environment is None and skills["sheet-tool"].environment
        builds = len(uv_runs(recorded))
        for _ in range(3):
            await pipeline.prepare(ALICE)
        assert len(uv_runs(recorded)) == builds  # a failed set is not rebuilt every turn
        await pipeline.refresh()
        await settled(pipeline)
        assert len(uv_runs(recorded)) == builds + 1  # refresh() retries it (and only it)


async def test_an_untrusted_market_gets_no_build_unless_enabled(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse)) as pipeline:
        plan = await settled(pipeline)
        assert [d.code for d in plan.diagnostics] == ["environment-untrusted"]
        assert next(iter(plan.skills.values())).environment is None
        assert uv_runs(recorded) == [] and not (tmp_path / "ws" / ENVS_DIR).exists()
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
        assert next(iter(plan.skills.values())).environment


async def test_the_operator_packages_of_an_untrusted_market_are_built_but_not_its_own(
    tmp_path: Path, wheelhouse: Path
) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    chosen = lambda slug: options(wheelhouse, market_packages={slug: ["hxprose"]})  # noqa: E731
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
        environment = next(iter(plan.skills.values())).environment or ""
        assert (Path(environment) / "hxprose").is_dir() and not (Path(environment) / "hxsheet").exists()


async def test_inference_maps_imports_to_packages_and_reports_unknown_ones(tmp_path: Path, wheelhouse: Path) -> None:
    script = "import os, json\nimport yaml\nfrom helpers import tidy\nimport frobnicator\n"
    remote = market(tmp_path, {"yaml-tool": {"scripts/go.py": script, "scripts/helpers.py": "def tidy(): ...\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    chosen = lambda slug: options(  # noqa: E731
        wheelhouse, trusted_markets=frozenset({slug}), infer_for=frozenset({slug})
    )
    async with pipeline_over(fs, remote, tmp_path, chosen) as pipeline:
        plan = await settled(pipeline)
        unknown = [d for d in plan.diagnostics if d.code == "environment-unknown-imports"]
        assert len(unknown) == 1 and "frobnicator" in unknown[0].message and "helpers" not in unknown[0].message
        environment = next(iter(plan.skills.values())).environment or ""
        assert await run_python(fs, environment, "import yaml; print(yaml.VALUE)") == "PyYAML 6.0"


async def test_inference_is_off_for_markets_not_listed(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"yaml-tool": {"scripts/go.py": "import yaml\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
        assert plan.diagnostics == ()
        assert next(iter(plan.skills.values())).environment is None


async def test_the_environment_works_inside_the_bubblewrap_sandbox(
    sandbox_dir: Path, tmp_path: Path, wheelhouse: Path, bwrap: str
) -> None:
    remote = market(tmp_path, {"pdf-tool": {"scripts/run.py": PEP723}})
    fs = open_filesystem("sandbox", sandbox_dir / "ws", bwrap=bwrap)
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        plan = await settled(pipeline)
        skill = next(iter(plan.skills.values()))
        assert skill.environment is not None and skill.environment.startswith("/workspace/.skills-cache/.envs/")
        assert await run_python(fs, skill.environment, "import hxpdf; print(hxpdf.VALUE)") == "hxpdf 1.2"
        script = f"PYTHONPATH={skill.environment} python3 {skill.files_root}/scripts/run.py"
        result = await fs.scoped("alice").run(script)
        assert (result.exit_code, result.stdout.strip()) == (0, "hxpdf 1.2")
        denied = await fs.scoped("alice").run(f"touch {skill.environment}/hxpdf/planted")
        assert denied.exit_code != 0  # projected read-only


async def test_staging_keeps_the_environments_when_skills_go_away(tmp_path: Path, wheelhouse: Path) -> None:
    remote = market(tmp_path, {"sheet-tool": {"requirements.txt": "hxsheet\n"}})
    fs = open_filesystem("local-shell", tmp_path / "ws")
    async with pipeline_over(fs, remote, tmp_path, lambda _: options(wheelhouse, untrusted_markets=True)) as pipeline:
        [skill] = (await settled(pipeline)).skills.values()
        environment, staged = Path(skill.environment or ""), Path(skill.files_root or "")
        assert staged.is_dir() and staged.parent.parent == tmp_path / "ws" / ".skills-cache"
        make_skill(remote.work / "skills", "other-tool")
        (remote.work / "skills" / "sheet-tool" / "SKILL.md").unlink()
        remote.commit("sheet-tool removed")
        await pipeline.refresh()
        plan = await pipeline.prepare(ALICE)
        assert [s.skill.name for s in plan.skills.values()] == ["other-tool"]
        await pipeline.stage(verify=True)
        assert not staged.exists()
        assert (environment / "hxsheet" / "__init__.py").is_file()


async def test_an_mcp_skills_environment_is_worked_out_when_it_is_first_loaded(
    tmp_path: Path, wheelhouse: Path, recorded: list[list[str]]
) -> None:
    server = SkillsServer(tmp_path / "server")
    server.add(
        "sheet-tool",
        {
            "SKILL.md": "---\nname: sheet-tool\ndescription: Sheets.\n---\nRun scripts/go.py.\n",
            "requirements.txt": "hxsheet\n",
            "scripts/go.py": "import hxsheet\nprint(hxsheet.VALUE)\n",
        },
    )
    fs = open_filesystem("local-shell", tmp_path / "ws")
    market = mcp_market(server)
    chosen = options(wheelhouse, untrusted_markets=True)
    async with (
        fs,
        SkillPipeline(
            filesystem=fs, repositories=[market], watch=False, market_timeout=120, environments=chosen
        ) as pipeline,
    ):
        manager = pipeline.environments
        assert manager is not None
        plan = await pipeline.prepare(ALICE)

        async def idle() -> bool:
            return manager.idle

        await eventually(idle, within=60, what="the environments worker to go idle")
        assert server.reads() == [] and uv_runs(recorded) == []  # prepare reads nothing ahead of use
        skill = plan.find("sheet-tool_srv")
        assert skill is not None and skill.environment is None
        assert plan.activate is not None
        await plan.activate(skill)  # what the load tool and the shell tool do on first use
        ready = await settled(pipeline)
        environment = ready.skills["sheet-tool_srv"].environment
        assert environment and len(uv_runs(recorded)) == 1
        assert await run_python(fs, environment, "import hxsheet; print(hxsheet.VALUE)") == "hxsheet 2.0"
    # Each file fetched once, when the skill was activated: the environment read them from memory.
    files = ["SKILL.md", "requirements.txt", "scripts/go.py"]
    assert sorted(server.reads()) == [f"skill://sheet-tool/{path}" for path in files]

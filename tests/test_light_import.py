"""Importing the harness loads what the program names and nothing of the optional parts until
they are used.

Each statement runs in a fresh interpreter (once: the checks of one statement share its list):
what one test imported must not hide what another loads.
``bench/imports.py`` prints the time it takes.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest

# The optional parts: none of their modules loads with ``import harness``.
OPTIONAL = ("harness.engine", "harness.learning", "harness.mcp", "harness.adapters", "harness.tracing", "harness.cli")
# The third-party packages only an optional part, an extra or the harness.yaml schema needs.
OPTIONAL_PACKAGES = (
    "mcp",
    "opentelemetry",
    "aiomysql",
    "git",
    "nacos",
    "agents",
    "pydantic",
    "pydantic_ai",
    "langchain_core",
)
# Standard-library parts a first turn does not need, each costing milliseconds to import: package
# metadata (the version is a static string, entry points are read on first use), urllib.request,
# http and email (which xml.sax.saxutils pulls in), SQLite (the search index), TOML (environments).
HEAVY_STDLIB = ("importlib.metadata", "email", "http", "urllib.request", "xml", "sqlite3", "tomllib", "zipfile", "csv")
# What a program imports, and how many of our modules that may load: raise a number only for a
# module that import truly needs. ``import harness`` loads the errors and the context; naming the
# pipeline loads the pipeline and skills; naming the agent loads models, events, tools, approval.
IMPORT_HARNESS = "import harness"
A_PIPELINE = "from harness import RuntimeContext, SkillPipeline"
AN_AGENT = "from harness import Harness, RuntimeContext"
PINNED_MODULES = {IMPORT_HARNESS: 12, A_PIPELINE: 39, AN_AGENT: 73}
# The agent's parts, which a program that only runs a pipeline never loads.
AGENT_PARTS = ("harness.agent", "harness.approval", "harness.events", "harness.models", "harness.tools")
# What only markets (the ingest scan and its stored verdicts) or a shell (staging) need.
MARKET_PARTS = ("harness.skills.scanner", "harness.pipeline.verdicts", "harness.pipeline.scan_pool")
SHELL_PARTS = ("harness.pipeline.staging",)
# A first turn over a workspace's folder skills, with or without a shell and a market.
FIRST_TURN = """
import asyncio, pathlib, tempfile
from filesystems import LocalFilesystem
from harness import RuntimeContext, SkillPipeline
from repositories import MemoryRepository, SkillBundleContents

async def turn(root, shell, markets):
    skill = pathlib.Path(root, "skills", "a")
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text("---\\nname: a\\ndescription: A skill.\\n---\\nBody.\\n")
    market = SkillBundleContents(folder="b", skill_md=b"---\\nname: b\\ndescription: A market skill.\\n---\\n")
    repositories = [MemoryRepository([market])] if markets else []
    async with LocalFilesystem(root, shell=shell) as fs, SkillPipeline(
        filesystem=fs, repositories=repositories, watch=False
    ) as pipeline:
        plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
        assert "a" in plan.catalog

with tempfile.TemporaryDirectory() as root:
    asyncio.run(turn(root, {shell}, {markets}))
"""


@functools.cache
def _loaded(statement: str) -> tuple[str, ...]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    modules: list[str] = json.loads(out)
    return tuple(modules)


def _ours(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in ("harness", "repositories", "filesystems")]


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("statement", list(PINNED_MODULES))
def test_importing_the_core_loads_no_optional_part(statement: str) -> None:
    loaded = _loaded(statement)
    assert [m for m in loaded if _within(m, OPTIONAL)] == []
    assert [m for m in loaded if _within(m, OPTIONAL_PACKAGES)] == []


@pytest.mark.parametrize("statement", list(PINNED_MODULES))
def test_importing_the_core_loads_no_heavy_standard_library_part_a_first_turn_does_without(statement: str) -> None:
    loaded = _loaded(statement)
    assert [m for m in loaded if _within(m, HEAVY_STDLIB)] == []


@pytest.mark.parametrize(("statement", "pinned"), list(PINNED_MODULES.items()))
def test_importing_the_core_loads_a_pinned_number_of_modules(statement: str, pinned: int) -> None:
    ours = _ours(_loaded(statement))
    assert len(ours) <= pinned, f"{statement!r} now loads {len(ours)} of our modules: {ours}"


def test_import_harness_loads_no_filesystem_and_not_asyncio() -> None:
    # The context validates user ids with the filesystems' path rules; the local filesystem (and
    # with it asyncio, subprocess and file locks) comes with the first filesystem a program opens.
    loaded = _loaded(IMPORT_HARNESS)
    assert [m for m in loaded if _within(m, ("asyncio", "filesystems.local", "filesystems.tasks", "subprocess"))] == []


def test_a_pipeline_alone_loads_nothing_of_the_agent() -> None:
    loaded = _loaded(A_PIPELINE)
    assert [m for m in loaded if _within(m, AGENT_PARTS)] == []


@pytest.mark.parametrize("statement", list(PINNED_MODULES))
def test_importing_the_core_loads_neither_the_ingest_scan_nor_staging(statement: str) -> None:
    assert [m for m in _loaded(statement) if _within(m, MARKET_PARTS + SHELL_PARTS)] == []


@pytest.mark.parametrize(
    ("shell", "markets", "loads"),
    [
        (False, False, ()),
        (True, False, SHELL_PARTS),
        (False, True, (*MARKET_PARTS, *SHELL_PARTS)),  # a market's skills are stage items even without a shell
    ],
)
def test_a_first_turn_over_folder_skills_loads_the_scan_only_with_a_market_and_staging_only_with_one_or_a_shell(
    shell: bool, markets: bool, loads: tuple[str, ...]
) -> None:
    loaded = _loaded(FIRST_TURN.format(shell=shell, markets=markets))
    assert sorted(m for m in loaded if _within(m, MARKET_PARTS + SHELL_PARTS)) == sorted(loads)


def test_an_agent_loads_no_approval_module_until_it_gates_calls() -> None:
    # Policies, the gate and the paused-run codec load when an agent with a gate is built.
    assert [m for m in _loaded(AN_AGENT) if _within(m, ("harness.approval", "harness.agent.paused"))] == []


def test_the_command_line_reads_the_config_schema_only_for_a_file() -> None:
    # Commands take their options as flags too: the harness.yaml schema (pydantic models) loads
    # when a file is read, approval when a command builds an agent that gates calls.
    loaded = _loaded("import harness.cli")
    parts = ("pydantic", "harness.config.loader", "harness.config.schema", "harness.approval")
    assert [m for m in loaded if _within(m, parts)] == []


def test_every_name_of_harness_loads_on_first_use() -> None:
    code = "import harness\nmissing = [n for n in harness.__all__ if getattr(harness, n, None) is None]\nprint(missing)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("statement", "part"),
    [
        ("from harness import EngineError, LearningError", "harness.engine.engine"),
        ("from harness.learning import MarketScanPolicy", "harness.learning.loop"),
        ("import harness.tracing", "harness.tracing.tracer"),
        ("import harness.mcp", "harness.mcp.server"),
    ],
)
def test_naming_a_package_does_not_load_all_of_it(statement: str, part: str) -> None:
    assert part not in _loaded(statement)


def test_a_lazy_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded("from harness.engine import WorkflowEngine; from harness.learning import SelfLearning")
    assert "harness.engine.engine" in loaded and "harness.learning.loop" in loaded


def test_an_unknown_lazy_name_is_an_attribute_error() -> None:
    import harness.learning

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        harness.learning.NoSuchThing  # noqa: B018
    assert "SelfLearning" in dir(harness.learning)


def test_import_harness_builds_no_scan_rule() -> None:
    # The 35 built-in rules are checked when first used (a market's first scan), not at import.
    code = "import harness\nfrom harness.skills import scanner\nprint(scanner._default_rules.cache_info().currsize)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "0"


@pytest.mark.parametrize("statement", list(PINNED_MODULES))
def test_importing_the_core_loads_no_yaml_parser(statement: str) -> None:
    assert [m for m in _loaded(statement) if _within(m, ("yaml", "_yaml"))] == []


@pytest.mark.parametrize(
    ("frontmatter", "needs_yaml"),
    [
        ("name: a\\ndescription: Plain text.\\nmetadata:\\n  version: 1.0\\n", False),
        ("name: a\\ndescription: |\\n  Block.\\n", True),
    ],
)
def test_pyyaml_loads_only_for_frontmatter_the_fast_path_leaves_to_it(frontmatter: str, needs_yaml: bool) -> None:
    code = (
        "import sys\nfrom harness.skills.frontmatter import split_frontmatter\n"
        f"split_frontmatter(b'---\\n{frontmatter}---\\nbody\\n')\nprint('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == str(needs_yaml)


def test_a_skill_index_names_its_database_without_loading_uuid() -> None:
    # uuid loads platform: a first turn that builds a search index needs neither.
    code = (
        "import sys\nfrom harness.pipeline.search import SkillIndex\n"
        "SkillIndex([])\nprint([m for m in ('uuid', 'platform') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"

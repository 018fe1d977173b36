"""``harness.yaml``: the README's example parses; mistakes name the key; paths are relative to the file."""

from __future__ import annotations

import dataclasses
import inspect
import re
import uuid
from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    KeyValueStore,
    LocalFilesystem,
    MemoryKeyValueStore,
    RemoteFilesystem,
    SQLiteKeyValueStore,
    open_store,
    register_filesystem,
    register_store,
)
from harness import ConfigError, Harness, PipelineOptions, RuntimeContext
from harness.config import HarnessConfig, load_config
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT

# The configuration reference of the documentation site (it was the README's section).
README = Path(__file__).resolve().parents[1] / "docs" / "reference" / "configuration.md"


def _readme_example() -> str:
    match = re.search(r"# Configuration \(`harness.yaml`\)\n\n```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_readme_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(_readme_example())
    config = load_config(path)
    assert config.name == "assistant" and config.filesystem == "local-shell"
    assert config.workspace == (tmp_path / "workspace").resolve()
    assert config.repositories[0].startswith("git+https://") and config.repositories[2] == "pkg:acme_skills/skills"
    assert config.catalog_budget == 30_000 and config.market_timeout == 10


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nmae: x\n", "unknown keys nmae"),
        ("filesystem: {mode: cloud}\n", "'cloud' is not one of"),
        ("filesystem: {mode: local, colour: red}\n", "filesystem must be"),
        ("repositories: git+https://x\n", "repositories must be a list"),
        ("name: [unclosed\n", "invalid YAML"),
        ("- a\n", "must be a mapping"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


@pytest.mark.parametrize(("line", "budget"), [("", DEFAULT_CATALOG_BUDGET), ("catalog_budget: null\n", None)])
def test_catalog_budget_defaults_to_the_large_catalog_budget_and_null_lifts_it(
    tmp_path: Path, line: str, budget: int | None
) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(f"name: a\n{line}")
    assert load_config(path).catalog_budget == budget


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.yaml")


async def test_from_config_builds_a_working_agent_with_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "market" / "tool").mkdir(parents=True)
    (tmp_path / "market" / "tool" / "SKILL.md").write_text("---\nname: tool\ndescription: A tool.\n---\nx\n")
    (tmp_path / "harness.yaml").write_text(
        "name: bot\nworkspace: ws\nfilesystem: local-shell\nrepositories: [./market]\nmodel: demo\n"
    )
    agent = Harness.from_config(tmp_path / "harness.yaml")
    assert isinstance(agent.filesystem, LocalFilesystem) and agent.name == "bot"
    async with agent:
        plan = await agent.prepare(RuntimeContext(user_id="alice"))
    assert plan.skills["tool_dir-market"].files_root == str(tmp_path / "ws" / ".skills-cache" / "dir-market" / "tool")


async def test_remote_mode_defaults_to_an_embedded_sqlite_store(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("workspace: ws\nfilesystem: remote\n")
    agent = Harness.from_config(tmp_path / "harness.yaml")
    assert isinstance(agent.filesystem, RemoteFilesystem)
    async with agent:
        await agent.filesystem.write_text("skills/x/SKILL.md", "---\nname: x\ndescription: d\n---\n")
        plan = await agent.prepare(RuntimeContext(user_id="alice"))
    assert "x_workspace" in plan.skills and plan.skills["x_workspace"].files_root is None
    assert (tmp_path / "ws" / ".harness" / "store.db").exists()


def test_from_config_takes_a_loaded_config_and_overrides_win(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("name: bot\nworkspace: ws\nmax_steps: 3\n")
    config = load_config(tmp_path / "harness.yaml")
    agent = Harness.from_config(config, max_steps=7)
    assert (agent.name, agent.max_steps) == ("bot", 7)


def test_a_filesystem_override_leaves_the_configured_store_unopened(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("workspace: ws\nfilesystem: {mode: remote, store: 'nosuch://x'}\n")
    mine = LocalFilesystem(tmp_path / "mine")
    assert Harness.from_config(tmp_path / "harness.yaml", filesystem=mine).filesystem is mine
    with pytest.raises(ConfigError, match="unknown store scheme"):
        Harness.from_config(tmp_path / "harness.yaml")


def test_a_store_scheme_registered_by_a_third_party_works_in_the_config_file(tmp_path: Path) -> None:
    opened: list[str] = []

    def factory(url: str) -> KeyValueStore:
        opened.append(url)
        return MemoryKeyValueStore()

    scheme = f"kv-{uuid.uuid4().hex[:8]}"
    register_store(scheme, factory)
    (tmp_path / "harness.yaml").write_text(f"workspace: ws\nfilesystem: {{mode: remote, store: '{scheme}:bucket'}}\n")
    agent = Harness.from_config(tmp_path / "harness.yaml")
    assert isinstance(agent.filesystem, RemoteFilesystem) and opened == [f"{scheme}:bucket"]


def test_a_registered_filesystem_mode_is_a_valid_config_mode(tmp_path: Path) -> None:
    mode = f"mode-{uuid.uuid4().hex[:8]}"

    def factory(workspace: Path, **_: object) -> AbstractFilesystem:
        return LocalFilesystem(workspace / "custom")

    register_filesystem(mode, factory)
    (tmp_path / "harness.yaml").write_text(f"workspace: ws\nfilesystem: {mode}\n")
    agent = Harness.from_config(tmp_path / "harness.yaml")
    assert isinstance(agent.filesystem, LocalFilesystem) and agent.filesystem.root == tmp_path / "ws" / "custom"


def test_a_built_in_store_scheme_cannot_be_taken_by_accident() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_store("sqlite", lambda url: MemoryKeyValueStore())
    assert isinstance(open_store("sqlite:///:memory:"), SQLiteKeyValueStore)


def test_a_malformed_store_url_is_refused_without_its_password() -> None:
    with pytest.raises(ValueError) as caught:
        open_store("admin:hunter2@db")
    assert "hunter2" not in str(caught.value)


def test_allowed_tools_keys_reach_the_agent(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text("enforce_allowed_tools: true\ntrusted_markets: [acme]\n")
    agent = Harness.from_config(config, watch=False)
    assert agent.trust.enforce_allowed_tools and agent.trust.trusted_markets == frozenset({"acme"})


def test_trusted_markets_must_be_a_list(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text("trusted_markets: acme\n")
    with pytest.raises(ConfigError, match="trusted_markets must be a list"):
        load_config(config)


def test_the_environments_section_becomes_options_and_takes_the_agents_trusted_markets(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(
        "trusted_markets: [git-acme-skills]\n"
        "environments:\n  index_url: https://mirror.example/simple\n  find_links: [/srv/wheels]\n"
        "  max_size: 512M\n  timeout: 120\n  infer_for: [git-acme-skills]\n"
        "  packages:\n    skills: {pdf: ['pypdf>=4']}\n    markets: {git-acme-skills: [openpyxl]}\n"
    )
    config = load_config(path)
    options = config.environments
    assert options is not None and options.max_size == 512 * 1024 * 1024 and options.timeout == 120
    assert options.skill_packages["pdf"] == ("pypdf>=4",) and options.infer_for == {"git-acme-skills"}
    assert options.trusted_markets is None and options.only_binary
    agent = Harness.from_config(config, watch=False)
    assert agent.pipeline.environments is not None
    assert agent.pipeline.environments.options.trusted_markets == {"git-acme-skills"}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("  enabled: false\n", None),
        ("  enable: true\n", "environments must be"),
        ("  only_binary: 'no'\n", "environments.only_binary must be true or false"),
        ("  index_url: ftp://mirror\n", "index_url 'ftp://mirror' must be"),
        ("  find_links: wheels\n", "environments.find_links must be a list"),
        ("  max_size: lots\n", "environments.max_size: 'lots' is not a size"),
        ("  timeout: 0\n", "timeout 0 must be a positive number"),
        ("  packages: {skills: {pdf: ['pypdf @ https://x/y.whl']}}\n", "names a URL or a path"),
        ("  packages: {skills: {pdf: ['--index-url=https://x']}}\n", "is an option"),
        ("  packages: {users: {}}\n", "environments.packages must be a mapping with keys skills and markets"),
    ],
)
def test_environment_mistakes_name_the_key(tmp_path: Path, section: str, message: str | None) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text("environments:\n" + section)
    if message is None:
        assert load_config(path).environments is None
        return
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path)


def test_environments_need_a_filesystem_with_a_shell(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text("filesystem: local\nenvironments: true\n")
    with pytest.raises(ValueError, match="need a filesystem with a shell"):
        Harness.from_config(path, watch=False)


def test_market_timeout_has_one_default_for_the_file_the_agent_and_the_pipeline() -> None:
    # ``is``: each default is the pipeline's constant itself, not a number written again.
    (field,) = [f for f in dataclasses.fields(HarnessConfig) if f.name == "market_timeout"]
    assert field.default is DEFAULT_MARKET_TIMEOUT
    (option,) = [f for f in dataclasses.fields(PipelineOptions) if f.name == "market_timeout"]
    assert option.default is DEFAULT_MARKET_TIMEOUT  # the agent's (Harness(pipeline=PipelineOptions(...)))
    assert inspect.signature(SkillPipeline.__init__).parameters["market_timeout"].default is DEFAULT_MARKET_TIMEOUT

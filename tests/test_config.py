"""``harness.yaml``: the README's example parses; mistakes name the key; paths are relative to the file."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
import yaml

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
from harness.config import HarnessConfig, json_schema, load_config
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET
from harness.pipeline.pipeline import DEFAULT_MARKET_TIMEOUT

# The configuration reference of the documentation site (it was the README's section).
README = Path(__file__).resolve().parents[1] / "docs" / "reference" / "configuration.md"
SCHEMA = Path(__file__).resolve().parents[1] / "harness" / "harness.schema.json"


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


def test_catalog_format_defaults_to_auto_and_reaches_the_agents_pipeline(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text("name: a\n")
    assert load_config(path).catalog_format == "auto"
    path.write_text("name: a\ncatalog_format: compact\n")
    assert load_config(path).catalog_format == "compact"
    assert Harness.from_config(path, watch=False).pipeline.catalog_format == "compact"
    assert Harness.from_config(path, watch=False, catalog_format="explicit").pipeline.catalog_format == "explicit"
    with pytest.raises(ConfigError, match="catalog_format: 'grouped' is not one of auto, explicit, compact"):
        HarnessConfig(catalog_format="grouped")  # type: ignore[arg-type]


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
    assert options.wait and options.retention == 7 * 86400  # the defaults
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


@pytest.mark.parametrize(("days", "seconds"), [("1.5", 1.5 * 86400), ("0", 0.0), ("null", None)])
def test_the_environments_retention_is_given_in_days_and_null_turns_it_off(
    tmp_path: Path, days: str, seconds: float | None
) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(f"environments:\n  retention_days: {days}\n  wait: false\n")
    options = load_config(path).environments
    assert options is not None and options.retention == seconds and not options.wait


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


def _refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "harness.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("max_steps: lots\n", ["harness.yaml: max_steps must be an integer ≥ 1, got 'lots'"]),
        ("max_steps: 0\n", ["max_steps must be an integer ≥ 1, got 0"]),
        ("max_steps: '3'\n", ["max_steps must be an integer ≥ 1, got '3'"]),
        ("max_steps: true\n", ["max_steps must be an integer ≥ 1, got True"]),
        ("market_timeout: 0\n", ["market_timeout must be a positive number of seconds, got 0"]),
        ("catalog_budget: many\n", ["catalog_budget must be an integer ≥ 0 or null, got 'many'"]),
        ("catalog_format: grouped\n", ["catalog_format must be one of auto, explicit, compact, got 'grouped'"]),
        ("max_file_size: 1.5\n", ["max_file_size must be an integer ≥ 1, got 1.5"]),
        ("name: [a, b]\n", ["name must be a string, got ['a', 'b']"]),
        ("dynamic_skills: 'yes'\n", ["dynamic_skills must be true or false, got 'yes'"]),
        ("global_skills_dir: 3\n", ["global_skills_dir must be a folder or a list of folders, got 3"]),
        ("skill_dirs: skills\n", ["skill_dirs must be a list of folders such as [skills, .agents/skills]"]),
        ("repositories: [./market, 3]\n", ["repositories[1] must be a URL, got 3"]),
        ("trusted_markets: [acme, 3]\n", ["trusted_markets[1] must be a market slug, got 3"]),
        ("mcp_tokens: [a]\n", ["mcp_tokens must be a file path, got ['a']"]),
    ],
)
def test_a_wrong_type_names_the_key_and_what_it_takes(tmp_path: Path, text: str, fragments: list[str]) -> None:
    message = _refused(tmp_path, text)
    assert all(fragment in message for fragment in fragments), message


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("filesystem: 3\n", ["filesystem must be a mode name or a mapping with keys mode, store, network,", "got 3"]),
        ("filesystem: {mode: sandbx}\n", ["filesystem.mode: 'sandbx' is not one of", "(did you mean sandbox?)"]),
        ("filesystem: {timeout: soon}\n", ["filesystem.timeout must be a positive number of seconds, got 'soon'"]),
        ("filesystem: {network: 1}\n", ["filesystem.network must be true or false, got 1"]),
        ("filesystem: {env: {RETRIES: [3]}}\n", ["filesystem.env.RETRIES must be a string or a number, got [3]"]),
        ("filesystem: {path: [bin]}\n", ["filesystem.path[0] must be an absolute folder without ':', got 'bin'"]),
        (
            "filesystem: {mode: sandbox, limits: {processes: 1.5}}\n",
            ["filesystem.limits.processes must be an integer ≥ 1"],
        ),
        (
            "filesystem: {mode: sandbox, limits: {memory: -1}}\n",
            ["filesystem.limits.memory: -1 is not a size like 512M"],
        ),
        ("curator: {interval_hours: soon}\n", ["curator.interval_hours must be a number ≥ 0, got 'soon'"]),
        ("curator: {umbrella_review: 1}\n", ["curator.umbrella_review must be true or false, got 1"]),
        ("curator: 3\n", ["curator must be true, false or a mapping with keys interval_hours,", "got 3"]),
        ("approval: {rules: {action: allow}}\n", ["approval.rules must be a list of rules"]),
        ("approval: {rules: [{action: permit}]}\n", ["approval.rules[0].action must be one of allow, deny, ask"]),
        ("approval: {rules: [{action: allow, kinds: [exec]}]}\n", ["approval.rules[0].kinds[0] must be one of shell"]),
        ("approval: {rules: [{tool: x}]}\n", ["approval.rules[0].action is required"]),
        ("market_scan: {default: maybe}\n", ["market_scan.default must be one of report, block, off, got 'maybe'"]),
        ("market_scan: {scan_limit: big}\n", ["market_scan.scan_limit must be an integer ≥ 1, got 'big'"]),
        ("market_scan: []\n", ["market_scan must be a mapping with keys default, sources and scan_limit"]),
        ("environments: maybe\n", ["environments must be true, false or a mapping with keys enabled,"]),
        ("environments: {enabled: 'no'}\n", ["environments.enabled must be true or false, got 'no'"]),
        ("environments: {max_size: 1.5}\n", ["environments.max_size: 1.5 is not a size like 512M or 4G"]),
        ("environments: {retention_days: -1}\n", ["environments.retention_days must be a number of days ≥ 0 or null"]),
        ("environments: {infer_for: ['']}\n", ["environments.infer_for[0] must be a non-empty string, got ''"]),
        ("environments: {packages: {skills: {pdf: pypdf}}}\n", ["environments.packages.skills.pdf must be a list"]),
    ],
)
def test_a_wrong_type_in_a_section_names_the_keys_path(tmp_path: Path, text: str, fragments: list[str]) -> None:
    message = _refused(tmp_path, text)
    assert all(fragment in message for fragment in fragments), message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("naem: bot\n", "unknown keys naem (did you mean name?)"),
        ("max_step: 3\n", "unknown keys max_step (did you mean max_steps?)"),
        (
            "filesystem: {mode: sandbox, timout: 3}\n",
            "unknown keys filesystem.timout (did you mean filesystem.timeout?)",
        ),
        (
            "filesystem: {mode: sandbox, limits: {memroy: 1G}}\n",
            "unknown keys filesystem.limits.memroy (did you mean filesystem.limits.memory?)",
        ),
        ("curator: {intervl_hours: 3}\n", "unknown keys curator.intervl_hours (did you mean curator.interval_hours?)"),
        ("approval: {defualt: ask}\n", "unknown keys approval.defualt (did you mean approval.default?)"),
        ("approval: {rules: [{action: allow, paterns: [x]}]}\n", "(did you mean approval.rules[0].patterns?)"),
        ("market_scan: {source: {}}\n", "unknown keys market_scan.source (did you mean market_scan.sources?)"),
        ("environments: {index_ur: x}\n", "unknown keys environments.index_ur (did you mean environments.index_url?)"),
    ],
)
def test_an_unknown_key_is_refused_with_the_closest_known_one(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in _refused(tmp_path, text)


def test_an_unknown_key_far_from_any_known_one_lists_the_known_keys(tmp_path: Path) -> None:
    message = _refused(tmp_path, "colour: red\n")
    assert "unknown keys colour (known: name, workspace," in message and "did you mean" not in message


def test_a_nested_unknown_key_says_what_its_section_takes(tmp_path: Path) -> None:
    message = _refused(tmp_path, "filesystem: {mode: local, colour: red}\n")
    assert message.endswith(
        "filesystem must be a mode name or a mapping with keys mode, store, network, timeout, limits, env and path"
    )


def test_every_problem_of_the_file_is_reported_at_once_one_line_each(tmp_path: Path) -> None:
    lines = _refused(tmp_path, "max_steps: lots\nnmae: x\nfilesystem: {timeout: -1, colour: red}\n").splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "unknown keys nmae (did you mean name?)",
        "unknown keys filesystem.colour; filesystem must be a mode name or a mapping with keys mode, store, network, "
        "timeout, limits, env and path",
        "filesystem.timeout must be a positive number of seconds, got -1",
        "max_steps must be an integer ≥ 1, got 'lots'",
    ]
    assert all(line.startswith(str(tmp_path / "harness.yaml")) for line in lines)


def test_a_wrong_value_is_shown_without_its_secret(tmp_path: Path) -> None:
    message = _refused(tmp_path, "repositories: git+https://bot:hunter2@git.example/skills.git\n")
    assert "repositories must be a list of URLs" in message and "hunter2" not in message


def test_the_cli_reports_a_wrong_type_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("max_steps: lots\n")
    command = [sys.executable, "-m", "harness", "skills", "list", "--config", str(tmp_path / "harness.yaml")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "configuration error: " in result.stderr and "max_steps must be an integer ≥ 1, got 'lots'" in result.stderr


def test_sizes_take_a_unit_and_lifted_limits_take_null(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text("filesystem:\n  mode: sandbox\n  limits: {memory: 2GiB, file_size: 512m, tmp_size: null}\n")
    limits = load_config(path).sandbox_limits
    assert (limits.memory, limits.file_size, limits.tmp_size) == (2 << 30, 512 << 20, None)


def test_the_schemas_defaults_are_the_configs() -> None:
    properties = json_schema()["properties"]
    defaults = HarnessConfig()
    keys = ("name", "model", "system_prompt", "max_steps", "catalog_budget", "catalog_format", "market_timeout")
    for key in (*keys, "max_file_size"):
        assert properties[key]["default"] == getattr(defaults, key), key
    assert properties["skill_dirs"]["default"] == list(defaults.skill_dirs)


def test_the_committed_json_schema_is_the_generated_one() -> None:
    generated = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    assert SCHEMA.read_text(encoding="utf-8") == generated, (
        "harness/harness.schema.json is out of date; regenerate it with "
        "`python -m harness.config > harness/harness.schema.json`"
    )


def test_editors_get_the_same_schema_the_loader_checks(tmp_path: Path) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(yaml.safe_load(_readme_example()))) == []
    shorthands = "filesystem: sandbox\napproval: allow-all\ncurator: true\nenvironments: false\n"
    assert list(validator.iter_errors(yaml.safe_load(shorthands))) == []
    for bad in ("max_steps: lots\n", "nmae: x\n", "filesystem: {mode: local, colour: red}\n"):
        assert list(validator.iter_errors(yaml.safe_load(bad))), bad
        with pytest.raises(ConfigError):
            load_config(_write(tmp_path, bad))


def test_a_file_naming_its_schema_for_editors_loads(tmp_path: Path) -> None:
    text = f"# yaml-language-server: $schema={SCHEMA}\nname: bot\n"
    assert load_config(_write(tmp_path, text)).name == "bot"


def test_import_harness_does_not_load_pydantic() -> None:
    code = "import sys, harness; print('pydantic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "harness.yaml"
    path.write_text(text)
    return path

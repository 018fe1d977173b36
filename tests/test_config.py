"""``harness.yaml``: the README's example parses; mistakes name the key; paths are relative to the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, RemoteFilesystem
from harness import ConfigError, Harness, RuntimeContext
from harness.config import load_config

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_example() -> str:
    match = re.search(r"## Configuration \(`harness.yaml`\)\n\n```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_readme_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "harness.yaml"
    path.write_text(_readme_example())
    config = load_config(path)
    assert config.name == "assistant" and config.filesystem == "local-shell"
    assert config.workspace == (tmp_path / "workspace").resolve()
    assert config.repositories[0].startswith("git+https://") and config.repositories[2] == "pkg:acme_skills/skills"
    assert config.catalog_budget is None and config.market_timeout == 10


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

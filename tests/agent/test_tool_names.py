"""Two tools with one name are refused when the agent is built, not shadowed at turn time."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import ConfigError, DemoModel, Harness, Tool, tool_from_function


async def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return query


async def read_file(path: str) -> str:
    """Read a file my way.

    Args:
        path: The file.
    """
    return path


def test_two_user_tools_with_one_name_are_refused(tmp_path: Path) -> None:
    twin: Tool = tool_from_function(lookup)
    with pytest.raises(ConfigError, match="two tools are named 'lookup'"):
        Harness(model=DemoModel(), workspace=tmp_path, tools=[lookup, twin])


def test_a_user_tool_named_like_a_built_in_tool_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'read_file' is the name of a built-in tool"):
        Harness(model=DemoModel(), workspace=tmp_path, tools=[read_file])


def test_a_learning_tool_name_is_refused_when_learning_is_on(tmp_path: Path) -> None:
    async def propose_skill(name: str) -> str:
        """Propose.

        Args:
            name: The name.
        """
        return name

    Harness(model=DemoModel(), workspace=tmp_path, tools=[propose_skill])
    with pytest.raises(ConfigError, match="'propose_skill' is the name of a built-in tool"):
        Harness(model=DemoModel(), workspace=tmp_path, tools=[propose_skill], learning=True)


def test_distinct_tool_names_build_an_agent(tmp_path: Path) -> None:
    agent = Harness(model=DemoModel(), workspace=tmp_path, tools=[lookup])
    assert [t.name for t in agent.tools] == ["lookup"]

"""``harness demo``: the offline demo speaks of layers and shadowing and ends with commands that work."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import HARNESS, run_harness


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The demo run once in a fresh folder: that folder and what it printed."""
    cwd = tmp_path_factory.mktemp("demo")
    result = subprocess.run([HARNESS, "demo"], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return cwd, result.stdout


def _explore_commands(output: str) -> list[str]:
    tail = output.partition("===== explore what the demo built")[2]
    return [line.strip() for line in tail.splitlines() if line.startswith("  ") and not line.strip().startswith("#")]


def test_the_demo_names_the_four_layers_lowest_first(demo: tuple[Path, str]) -> None:
    _, output = demo
    assert "global < market < workspace < user" in output
    assert "  user       unit-convert   unit-convert_workspace-namespaced" in output


def test_the_demo_says_which_skill_shadows_which(demo: tuple[Path, str]) -> None:
    _, output = demo
    assert (
        "shadowed: alice's unit-convert (user layer) shadows the market layer's unit-convert_git-demo-workspace-market"
        in output
    )
    assert "shadowed: nothing" in output  # bob's turn
    assert "10 km = 6.2137 miles (alice override" in output and "10 km = 6.21 miles (git market version)" in output


def test_the_demo_ends_with_commands_to_explore_what_it_built(demo: tuple[Path, str]) -> None:
    cwd, output = demo
    commands = _explore_commands(output)
    assert [shlex.split(c)[1:3] for c in commands] == [
        ["skills", "list"],
        ["skills", "list"],
        ["skills", "prompt"],
        ["skills", "show"],
        ["skills", "stage"],
        ["run", "Please convert 10 km to miles."],
    ]
    assert all(shlex.split(c)[0] == HARNESS and "--config demo-workspace/harness.yaml" in c for c in commands)
    assert (cwd / "demo-workspace" / "harness.yaml").is_file()


def test_the_printed_commands_run_on_what_the_demo_built(demo: tuple[Path, str]) -> None:
    cwd, output = demo
    outputs = []
    for command in _explore_commands(output):
        result = run_harness(*shlex.split(command)[1:], cwd=cwd)  # the first word is HARNESS (above)
        assert result.returncode == 0, (command, result.stderr)
        outputs.append(result.stdout)
    alice, bob, prompt, show, stage, run = outputs
    assert "shadows the one from market layer" in alice and "unit-convert                 user" in alice
    assert "shadow" not in bob and "unit-convert                 market" in bob
    assert "<shadowed>" in prompt and "Alice's own converter" in show
    assert stage.strip() == "written 0, unchanged 8, removed 0"  # the demo staged them already
    assert "10 km = 6.21 miles (git market version)" in run


def test_the_demo_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    result = run_harness("demo", str(tmp_path))
    assert result.returncode == 1 and "was not made by 'harness demo'" in result.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"

"""A hostile ``harness.yaml`` through the real ``harness`` console script: an alias bomb, Python and
custom tags, a 50 MB file, bytes that are not UTF-8, deep nesting. Each is one clear line on
stderr naming the file and the problem, exit code 2 (a configuration error), nothing on stdout,
no traceback, nothing run — in a process whose memory and CPU time are capped, so a defence that
gave way ends the process instead of the machine."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import HARNESS

#: The caps of the command's process: far above what reading a configuration takes.
MEMORY = 1024 * 1024 * 1024
CPU_SECONDS = 60


def _billion_laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefgh":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [{', '.join([f'*{previous}'] * 8)}]")
    return "\n".join(lines) + "\nrepositories: *h\n"


def _block_nesting(depth: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(depth)) + " " * depth + "v\n"


#: Each attack: the bytes of harness.yaml, and words its error must hold.
ATTACKS: dict[str, tuple[bytes, str]] = {
    "billion laughs within the alias limit": (_billion_laughs().encode(), "aliases"),
    "python object tag": (b"name: !!python/object/apply:os.system ['touch pwned']\n", "python/object"),
    "python name tag": (b"model: !!python/name:os.system\n", "python/name"),
    "custom tag": (b"name: !vault secret/agent-name\n", "!vault"),
    "not UTF-8": (b"name: caf\xe9\nworkspace: ws\n", "UTF-8"),
    "UTF-16": ("name: agent\n".encode("utf-16"), "UTF-8"),
    "deep flow nesting": (b"repositories: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "deeper"),
    "deep block nesting": (_block_nesting(300).encode(), "deeper"),
    "a recursive alias": (b"repositories: &r [*r]\n", "itself"),
}


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def _harness(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real console script in ``tmp_path``, capped (see :data:`MEMORY`, :data:`CPU_SECONDS`)."""
    return subprocess.run(
        [HARNESS, *argv], cwd=tmp_path, capture_output=True, text=True, preexec_fn=_capped, timeout=300
    )


def _assert_refused(done: subprocess.CompletedProcess[str], config: Path, words: str) -> None:
    assert done.returncode == 2, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"harness: configuration error: {config}: "), line
    assert words in line, line
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_hostile_config_is_a_clear_configuration_error(tmp_path: Path, attack: str) -> None:
    data, words = ATTACKS[attack]
    config = tmp_path / "harness.yaml"
    config.write_bytes(data)
    done = _harness(tmp_path, "skills", "list", "--config", str(config))
    _assert_refused(done, config, words)
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "workspace").exists()


def test_a_50_mb_config_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    with config.open("w") as out:
        out.write("repositories:\n")
        line = "  - dir:./market-with-a-rather-long-name-to-fill-the-file\n"
        out.write(line * (50 * 1024 * 1024 // len(line)))
    done = _harness(tmp_path, "skills", "list", "--config", str(config))
    _assert_refused(done, config, "larger than")


def test_aliases_a_config_uses_within_the_limits_still_work(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(
        "name: agent\nworkspace: ws\napproval:\n  default: deny\n  rules:\n"
        "    - &echo {action: allow, tool: execute_shell_command, pattern: 'echo *'}\n"
        "    - {<<: *echo, pattern: 'ls *'}\n"
    )
    done = _harness(tmp_path, "skills", "list", "--config", str(config))
    assert done.returncode == 0, done.stderr

"""Every ```python block of the documentation site and the README runs, so no snippet can rot.

Each block runs verbatim as a script of its own, in a process forked with the harness already
imported (``tests.support.cli``; the README's quick start runs in a fresh interpreter), in a
temporary folder that holds a link to the repository's ``examples/`` (the snippets are written to
run from a checkout's root), offline. A
block preceded by ``<!-- needs: mysql -->`` gets the test MariaDB as ``HARNESS_MYSQL_DSN``;
``<!-- needs: bwrap -->`` runs only where bubblewrap works.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import python_command
from tests.support.filesystems import shared_dir

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_NEEDS = re.compile(r"<!--\s*needs:\s*(?P<needs>[\w, -]+?)\s*-->\s*$")
KNOWN_NEEDS = {"mysql", "bwrap"}


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    code: str
    needs: frozenset[str]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(page: Path) -> list[Snippet]:
    """The ```python blocks of ``page``, with what the comment line before each says it needs."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        needs = _NEEDS.search(before)
        wanted = frozenset(n.strip() for n in needs["needs"].split(",")) if needs else frozenset()
        line = text.count("\n", 0, match.start()) + 1
        found.append(Snippet(page, line, textwrap.dedent(match["code"]), wanted))
    return found


ALL = [snippet for page in PAGES for snippet in snippets(page)]


def test_the_site_and_the_readme_have_snippets_to_run() -> None:
    assert len(ALL) >= 15
    assert any(s.page.name == "README.md" for s in ALL)


@pytest.mark.parametrize("snippet", ALL, ids=[s.id for s in ALL])
def test_snippet_runs(snippet: Snippet, request: pytest.FixtureRequest) -> None:
    run_snippet(snippet, request)


def test_the_readme_quick_start_shows_a_catalog_a_loaded_skill_and_a_scripts_output(
    request: pytest.FixtureRequest,
) -> None:
    out = run_snippet(snippets(ROOT / "README.md")[0], request, fresh=True)
    assert "<name>hello-world</name>" in out and "<skill-id>hello-world_global</skill-id>" in out
    assert re.search(r"<files-root>/\S+/workspace/\.skills-cache/global/hello-world</files-root>", out)
    assert "SkillLoaded(skill_id='hello-world_global'" in out
    assert "The hello-world skill ran." in out


def run_snippet(snippet: Snippet, request: pytest.FixtureRequest, *, fresh: bool = False) -> str:
    """Run ``snippet`` as a script in a fresh folder (in a fresh interpreter when ``fresh``); its
    stdout, after asserting it exited 0."""
    assert snippet.needs <= KNOWN_NEEDS, f"{snippet.id}: unknown needs {sorted(snippet.needs - KNOWN_NEEDS)}"
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    if "mysql" in snippet.needs:
        env["HARNESS_MYSQL_DSN"] = request.getfixturevalue("mysql_dsn")
    if "bwrap" in snippet.needs:
        request.getfixturevalue("bwrap")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # A folder the sandbox's unprivileged uid can traverse (pytest's tmp_path is 0700).
    with shared_dir("harness-snippet-") as folder:
        (folder / "examples").symlink_to(ROOT / "examples")
        script = folder / "snippet.py"
        script.write_text(snippet.code, encoding="utf-8")
        command = [sys.executable, str(script)] if fresh else python_command(script)
        completed = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=60, env=env)
    assert completed.returncode == 0, f"{snippet.id} failed:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout

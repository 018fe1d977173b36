"""``harness``'s public surface: every exported name imports, and the README's imports exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]  # the README and the site


def _readme_imports() -> set[str]:
    names: set[str] = set()
    text = "".join(page.read_text(encoding="utf-8") for page in PAGES)
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module == "harness":
                names.update(alias.name for alias in node.names)
    return names


def test_every_name_in_all_imports() -> None:
    missing = [name for name in harness.__all__ if not hasattr(harness, name)]
    assert missing == []


def test_all_has_no_duplicates_and_is_sorted() -> None:
    assert len(set(harness.__all__)) == len(harness.__all__)
    assert list(harness.__all__) == sorted(harness.__all__)


def test_the_readme_imports_only_exported_names() -> None:
    names = _readme_imports()
    assert names, "the README shows no 'from harness import ...'"
    assert names <= set(harness.__all__)


def test_building_blocks_stay_in_their_subpackages() -> None:
    assert not {"render_catalog", "Stager", "split_frontmatter", "LOAD_TOOL"} & set(harness.__all__)

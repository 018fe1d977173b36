"""The ingest scan leaves skills shaped like the public collections' alone: none of the files of
the shapes these tests run (placeholders, hosted paths, module scripts, ``#!`` scripts, binary
assets, dot-files, Python environments) is flagged by the built-in rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.learning import scan
from tests.skills_compat.layouts import public_skill
from tests.skills_compat.runnable import SHAPES
from tests.skills_compat.test_skill_environments import SKILLS


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_runnable_shape_is_not_flagged(name: str) -> None:
    verdict = scan(dict(SHAPES[name].files))
    assert not verdict.findings, verdict.summary()


@pytest.mark.parametrize("name", sorted(SKILLS))
def test_a_skill_with_a_python_environment_is_not_flagged(name: str) -> None:
    verdict = scan(dict(SKILLS[name]))
    assert not verdict.findings, verdict.summary()


def test_a_public_layout_is_not_flagged(tmp_path: Path) -> None:
    folder = public_skill(tmp_path, "report-maker")
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    verdict = scan(files)
    assert not verdict.findings, verdict.summary()

"""The spellings of a skill's folder that served text resolves, and the ones it leaves alone."""

from __future__ import annotations

import pytest

from harness.skills.placeholders import HOSTED_ROOTS, SKILL_DIR_PLACEHOLDERS, resolve_skill_dir

FOLDER = "/ws/.skills-cache/git-acme/pdf"


@pytest.mark.parametrize("spelling", SKILL_DIR_PLACEHOLDERS)
def test_each_documented_spelling_becomes_the_folder(spelling: str) -> None:
    assert resolve_skill_dir(f"python {spelling}/scripts/x.py", FOLDER, ["pdf"]) == f"python {FOLDER}/scripts/x.py"


@pytest.mark.parametrize("root", HOSTED_ROOTS)
@pytest.mark.parametrize("name", ["pdf", "pdf-tools"])
def test_hosted_folders_of_this_skill_by_name_or_folder_become_the_folder(root: str, name: str) -> None:
    text = f'python {root}/{name}/scripts/x.py; cd "{root}/{name}"'
    assert resolve_skill_dir(text, FOLDER, ["pdf-tools", "pdf"]) == f'python {FOLDER}/scripts/x.py; cd "{FOLDER}"'


@pytest.mark.parametrize(
    "text",
    [
        "/mnt/skills/public/docx/scripts/x.py",  # another skill's hosted folder
        "/mnt/skills/public/pdfx/scripts/x.py",  # a longer name
        "$SKILL_DIRS and $CLAUDE_SKILL_DIR_OLD",  # other variables
        "{basedir} <path-to-skills> /mnt/skills/private/pdf",
    ],
)
def test_other_text_is_left_alone(text: str) -> None:
    assert resolve_skill_dir(text, FOLDER, ["pdf"]) == text


def test_replacement_is_one_pass() -> None:
    assert resolve_skill_dir("{baseDir}/x", "/ws/{baseDir}", ["pdf"]) == "/ws/{baseDir}/x"

"""SkillIndex ranking: FTS5/BM25 and the word scorer agree on what a query is about."""

from __future__ import annotations

import pytest

from harness.pipeline.search import SkillIndex, when_to_use
from harness.skills.skill import Layer, Skill, load_skill


def _skill(name: str, description: str, extra: str = "") -> Skill:
    text = f"---\nname: {name}\ndescription: {description}\n{extra}---\nBody\n"
    skill, _ = load_skill(text.encode(), folder=name, location=f"/m/{name}", source="m", layer=Layer.MARKET)
    assert skill is not None
    return skill


SKILLS = [
    _skill("pdf-forms", "Fill in PDF forms.", "when_to_use: a tax form arrives\n"),
    _skill("slides", "Build slide decks from notes."),
    _skill("notes-digest", "Summarise meeting notes.", "metadata:\n  when_to_use: after a long meeting\n"),
    _skill("secret", "Special internal thing.", "disable-model-invocation: true\n"),
]
ALL = {s.skill_id for s in SKILLS}


@pytest.mark.parametrize("fts", [True, False], ids=["fts5", "word-scorer"])
@pytest.mark.parametrize(
    ("query", "first"),
    [("tax", "pdf-forms"), ("slides", "slides"), ("long meeting", "notes-digest"), ("notes", "notes-digest")],
)
def test_the_best_match_comes_first(fts: bool, query: str, first: str) -> None:
    assert SkillIndex(SKILLS, fts=fts).search(query, 3, ALL)[0].split("_")[0] == first


@pytest.mark.parametrize("fts", [True, False], ids=["fts5", "word-scorer"])
def test_hidden_and_disallowed_skills_are_never_returned(fts: bool) -> None:
    index = SkillIndex(SKILLS, fts=fts)
    assert index.search("special internal", 5, ALL) == []
    allowed = ALL - {SKILLS[1].skill_id}
    assert SKILLS[1].skill_id not in index.search("slide decks notes", 5, allowed)


def test_when_to_use_is_read_at_the_top_level_and_under_metadata() -> None:
    assert when_to_use(SKILLS[0]) == "a tax form arrives"
    assert when_to_use(SKILLS[2]) == "after a long meeting"
    assert when_to_use(SKILLS[1]) == ""


def test_a_query_without_words_finds_nothing() -> None:
    assert SkillIndex(SKILLS).search(" -- ", 5, ALL) == []

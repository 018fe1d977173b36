"""Short market labels: unique, stable, never another source, and an alias that names exactly the
skill its full id names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.pipeline.labels import SourceLabels
from repositories import disambiguate_sources, make_source


def test_a_label_is_the_fewest_leading_words_that_no_other_market_shares() -> None:
    labels = SourceLabels.for_markets(
        [
            "git-anthropics-skills-main",
            "git-acme-labs-skills",
            "git-acme-tools-skills",
            "mysql-harness-skills",
            "pkg-acme_skills",
            "team",
        ]
    )
    assert labels.by_slug == {
        "git-anthropics-skills-main": "anthropics",
        "git-acme-labs-skills": "acme-labs",
        "git-acme-tools-skills": "acme-tools",
        "mysql-harness-skills": "harness",
        "pkg-acme_skills": "acme_skills",
    }
    assert labels.label("team") == "team" and labels.label("workspace") == "workspace"


def test_a_label_never_reads_as_another_source() -> None:
    labels = SourceLabels.for_markets(["git-workspace-tools", "dir-global", "git-acme-x", "dir-acme-x", "acme"])
    assert labels.label("git-workspace-tools") == "workspace-tools"
    assert labels.label("dir-global") == "dir-global"
    # "acme" is a market's own slug and "acme-x" two markets' words: these keep their slugs.
    assert labels.label("git-acme-x") == "git-acme-x" and labels.label("dir-acme-x") == "dir-acme-x"


def test_a_plugin_source_keeps_its_plugin_after_the_label() -> None:
    labels = SourceLabels.for_markets(["plugins-acme-plugins"])
    assert labels.label("plugins-acme-plugins.docs-kit") == "acme.docs-kit"
    assert list(labels.full_ids("pdf_acme.docs-kit")) == ["pdf_plugins-acme-plugins.docs-kit"]


def test_an_alias_stands_for_the_full_id_only() -> None:
    labels = SourceLabels.for_markets(["git-anthropics-skills-main"])
    assert list(labels.full_ids("pdf_anthropics")) == ["pdf_git-anthropics-skills-main"]
    assert list(labels.full_ids("my_anthropics_notes_anthropics")) == ["my_anthropics_notes_git-anthropics-skills-main"]
    assert list(labels.full_ids("pdf_anthropicsx")) == [] and list(labels.full_ids("_anthropics")) == []


@given(
    st.lists(st.lists(st.sampled_from(["acme", "labs", "skills", "main", "x", "git", "dir"]), min_size=1, max_size=4))
)
def test_labels_are_unique_and_distinct_from_every_slug(parts: list[list[str]]) -> None:
    slugs = disambiguate_sources(make_source(*words) for words in parts)
    labels = SourceLabels.for_markets(slugs)
    shown = [labels.label(slug) for slug in slugs]
    assert len(set(shown)) == len(slugs)
    assert all(label == slug or label not in slugs for slug, label in zip(slugs, shown))
    assert all(len(label) <= len(slug) for slug, label in zip(slugs, shown))

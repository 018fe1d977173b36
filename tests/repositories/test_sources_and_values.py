"""Source slugs, their disambiguation, and validation of the bundle values."""

from __future__ import annotations

import logging

import pytest

from repositories import (
    FileContents,
    InvalidBundle,
    InvalidRepositoryConfig,
    MemoryRepository,
    SkillBundleContents,
    check_source,
    disambiguate_sources,
    make_source,
    sub_source,
)


def test_make_source_derives_a_valid_slug() -> None:
    assert make_source("git", "Acme", "Team Skills", "main") == "git-acme-team-skills-main"
    assert make_source("dir", "Ünïcode!!") == "dir-unicode"
    assert make_source("dir", "日本") == "dir"
    assert make_source("", "") == "repo"
    long = make_source("mysql", "d" * 40, "t" * 40)
    assert len(long) == 64 and check_source(long) == long


def test_sub_source_appends_the_part_as_a_slug_within_64() -> None:
    assert sub_source("plugins-acme-market", "Docs Kit") == "plugins-acme-market.docs-kit"
    long = sub_source("plugins-" + "m" * 50, "document-skills")
    assert long == "plugins-" + "m" * 50 + ".docum" and check_source(long) == long
    assert sub_source("x" * 64, "part") == "x" * 64


@pytest.mark.parametrize("bad", ["", "Upper", "has space", "a/b", "x" * 65])
def test_check_source_refuses_invalid_slugs(bad: str) -> None:
    with pytest.raises(InvalidRepositoryConfig):
        check_source(bad)


def test_source_override_is_validated() -> None:
    assert MemoryRepository(source="team.skills_1").source == "team.skills_1"
    with pytest.raises(InvalidRepositoryConfig):
        MemoryRepository(source="Bad Slug")


def test_duplicates_get_numbered_in_registration_order_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="repositories"):
        result = disambiguate_sources(["x", "y", "x", "x", "x_2"])
    assert result == ["x", "y", "x_3", "x_4", "x_2"]
    assert len(caplog.records) == 2
    assert "'x_3'" in caplog.records[0].getMessage()


def test_disambiguated_long_slugs_stay_within_64() -> None:
    slug = "s" * 64
    assert [len(s) for s in disambiguate_sources([slug, slug])] == [64, 64]


@pytest.mark.parametrize("folder", ["", ".hidden", "a/b", "a\\b", "tab\tname", "x" * 256])
def test_bundle_folder_must_be_a_safe_segment(folder: str) -> None:
    with pytest.raises(InvalidBundle):
        SkillBundleContents(folder=folder, skill_md=b"")


@pytest.mark.parametrize("path", ["../x", "/abs", ".git/HEAD", "a/.git/config", "a//b", "SKILL.md", "x\0y"])
def test_bundle_file_paths_must_be_clean_and_safe(path: str) -> None:
    with pytest.raises(InvalidBundle):
        SkillBundleContents(folder="ok", skill_md=b"", files=(FileContents(path=path, data=b""),))


def test_duplicate_paths_and_bad_modes_are_refused() -> None:
    with pytest.raises(InvalidBundle):
        SkillBundleContents(folder="ok", skill_md=b"", files=(FileContents(path="a", data=b""),) * 2)
    with pytest.raises(InvalidBundle):
        FileContents(path="a", data=b"", mode=0o10000)

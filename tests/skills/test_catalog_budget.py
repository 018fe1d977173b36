"""A catalog budget smaller than even the skills' names still says how many skills exist."""

from __future__ import annotations

import re

from harness.pipeline.catalog import CatalogEntry, render_catalog


def _entries(count: int) -> list[CatalogEntry]:
    return [
        CatalogEntry(
            name=f"skill-{i:05d}", description="Use when the task needs it. " * 4, skill_id=f"s{i}_m", files_root=None
        )
        for i in range(count)
    ]


def test_names_that_do_not_fit_are_counted_not_dropped() -> None:
    text = render_catalog(_entries(10_000), load_tool="load_skill_through_path", shell_tool=None, budget=20_000)
    assert len(text) <= 20_000
    more = re.search(r'<more count="(\d+)">(.*)</more>', text)
    assert more is not None
    listed = more.group(2).split(", ")
    unlisted = int(re.search(r"and (\d+) more not listed for space", more.group(2)).group(1))  # type: ignore[union-attr]
    described = text.count("<skill>")
    assert int(more.group(1)) + described == 10_000
    assert described + len(listed) - 1 + unlisted == 10_000


def test_a_budget_that_fits_the_names_lists_them_all() -> None:
    text = render_catalog(_entries(300), load_tool="load_skill_through_path", shell_tool=None, budget=8_000)
    assert len(text) <= 8_000 and "not listed" not in text
    assert text.count("<skill>") + int(re.search(r'count="(\d+)"', text).group(1)) == 300  # type: ignore[union-attr]

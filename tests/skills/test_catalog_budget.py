"""The catalog budget: the whole text fits, the most important skills keep their entries, and
nothing is dropped without a count."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pipeline.catalog import (
    LOAD_TOOL,
    SEARCH_TOOL,
    SHELL_TOOL,
    CatalogEntry,
    build_catalog,
    render_catalog,
)
from harness.skills.skill import Layer


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


def _entry(name: str, rank: int, description: str = "Use when the task needs it. " * 4) -> CatalogEntry:
    return CatalogEntry(
        name=name, description=description, skill_id=f"{name}_{rank}", files_root=f"/ws/{name}", rank=rank
    )


def _render(entries: list[CatalogEntry], budget: int | None) -> str:
    return render_catalog(entries, load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, budget=budget, search_tool=SEARCH_TOOL)


def _descriptions(text: str) -> dict[str, str]:
    return dict(re.findall(r"<name>(.*?)</name>\n<description>(.*?)</description>", text))


def test_the_header_counts_toward_the_budget() -> None:
    entries = [_entry("only", 2)]
    budget = len(_render(entries, None)) - 1
    text = _render(entries, budget)
    assert len(text) <= budget and text.startswith("You can use skills")
    assert "<name>only</name>" in text or '<more count="1">' in text


def test_a_budget_smaller_than_the_header_still_holds() -> None:
    entries = [_entry(f"skill-{i}", 2) for i in range(5)]
    for budget in (0, 10, 100, 300):
        assert len(_render(entries, budget)) <= budget


def test_a_user_skill_keeps_its_description_when_market_skills_are_cut() -> None:
    mine = _entry("zz-my-own", Layer.USER.rank, "Use for my own very particular report format, every Monday.")
    market = [_entry(f"market-{i:03d}", Layer.MARKET.rank) for i in range(200)]
    text = _render([*market, mine], 6_000)
    assert len(text) <= 6_000
    assert _descriptions(text)["zz-my-own"] == "Use for my own very particular report format, every Monday."
    assert "market-199" not in _descriptions(text)


def test_workspace_skills_are_kept_before_market_and_market_before_global() -> None:
    entries = [
        _entry("a-global", Layer.GLOBAL.rank),
        _entry("b-market", Layer.MARKET.rank),
        _entry("c-workspace", Layer.WORKSPACE.rank),
    ]
    room = len(_render(entries[2:], None)) + 400
    described = _descriptions(_render(entries, room))
    assert "c-workspace" in described and "a-global" not in described


def test_full_entries_stay_sorted_by_name() -> None:
    entries = [_entry(f"m-{i:02d}", Layer.MARKET.rank) for i in range(40)] + [_entry("a-user", Layer.USER.rank)]
    text = _render(entries, 5_000)
    names = list(_descriptions(text))
    assert names == sorted(names) and "a-user" in names


def test_a_cut_catalog_names_the_search_tool_and_a_whole_one_does_not() -> None:
    entries = [_entry(f"skill-{i:03d}", 2) for i in range(100)]
    assert SEARCH_TOOL not in _render(entries, None)
    cut = build_catalog(entries, load_tool=LOAD_TOOL, shell_tool=None, budget=5_000, search_tool=SEARCH_TOOL)
    assert f"{SEARCH_TOOL}(" in cut.text and not cut.complete


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=40_000),
    count=st.integers(min_value=1, max_value=150),
    ranks=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=150),
    length=st.integers(min_value=1, max_value=400),
)
def test_the_catalog_never_exceeds_the_budget(budget: int, count: int, ranks: list[int], length: int) -> None:
    entries = [_entry(f"s-{i:03d}", ranks[i % len(ranks)], "d" * (length + i % 7)) for i in range(count)]
    text = _render(entries, budget)
    assert len(text) <= budget
    if text:
        described = text.count("<skill>")
        more = re.search(r'<more count="(\d+)">', text)
        assert described + (int(more.group(1)) if more else 0) == count

"""The catalog's forms and its budget: each skill gets an explicit entry with its id and
files-root whenever they fit, the whole text fits, every skill keeps a description before any
loses it, the most important skills keep theirs longest, and nothing is dropped without a count."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pipeline.catalog import (
    CATALOG_FORMATS,
    LOAD_TOOL,
    SEARCH_TOOL,
    SHELL_TOOL,
    CatalogEntry,
    CatalogFormat,
    CatalogParts,
    build_catalog,
    check_catalog_format,
    render_catalog,
)
from harness.skills.skill import Layer
from tests.support.catalog import read_catalog


def _entries(count: int, description: str = "Use when the task needs it. " * 4) -> list[CatalogEntry]:
    return [
        CatalogEntry(name=f"skill-{i:05d}", description=description, source="m", files_root=None) for i in range(count)
    ]


def _entry(
    name: str, rank: int, description: str = "Use when the task needs it. " * 4, relevance: float = 0.0
) -> CatalogEntry:
    return CatalogEntry(
        name=name,
        description=description,
        source=f"source-{rank}",
        files_root=f"/ws/{rank}/{name}",
        rank=rank,
        relevance=relevance,
    )


def _render(
    entries: list[CatalogEntry],
    budget: int | None,
    shadowed: tuple[str, ...] = (),
    catalog_format: CatalogFormat = "auto",
) -> str:
    return render_catalog(
        entries,
        load_tool=LOAD_TOOL,
        shell_tool=SHELL_TOOL,
        budget=budget,
        search_tool=SEARCH_TOOL,
        shadowed=shadowed,
        catalog_format=catalog_format,
    )


def test_each_skill_gets_an_entry_with_its_id_and_files_root() -> None:
    entries = [
        CatalogEntry(name="pdf", description="Use for <PDF> & forms.", source="acme", files_root="/c/acme/pdf"),
        CatalogEntry(name="mine", description="Mine.", source="workspace", files_root="/ws/skills/m&e", rank=3),
        CatalogEntry(name="digest", description="Digest.", source="acme", files_root="/c/acme/digest", workflow=True),
    ]
    text = _render(entries, None, shadowed=("pdf_other",))
    assert (
        "<skill>\n<name>pdf</name>\n<description>Use for &lt;PDF&gt; &amp; forms.</description>\n"
        "<skill-id>pdf_acme</skill-id>\n<files-root>/c/acme/pdf</files-root>\n</skill>\n"
    ) in text
    assert '<skill workflow="true">\n<name>digest</name>' in text and "<files-root>/ws/skills/m&amp;e<" in text
    read = read_catalog(text)
    assert read.explicit and read.shadowed == ["pdf_other"]
    # Priority order: the higher layer first, then by name; each entry as written, nothing composed.
    assert [(s.skill_id, s.files_root, s.workflow) for s in read.skills] == [
        ("mine_workspace", "/ws/skills/m&e", False),
        ("digest_acme", "/c/acme/digest", True),
        ("pdf_acme", "/c/acme/pdf", False),
    ]
    assert "Each <skill> gives its <skill-id>: use it as written" in read.header
    assert "<files-root> is its folder as the shell sees it" in read.header
    assert "grouped by source" not in read.header and "<location>" not in text


def test_an_explicit_catalog_without_files_roots_renders_none_and_no_shell_line() -> None:
    text = render_catalog(_entries(3), load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL)
    read = read_catalog(text)
    assert read.explicit and all(s.files_root is None for s in read.skills)
    assert "files-root" not in text and SHELL_TOOL not in text
    assert [s.skill_id for s in read.skills] == ["skill-00000_m", "skill-00001_m", "skill-00002_m"]


def test_auto_groups_the_skills_when_explicit_entries_would_cost_descriptions() -> None:
    entries = [_entry(f"m-{i:02d}", Layer.MARKET.rank) for i in range(40)]
    explicit = _render(entries, None)
    compact = _render(entries, None, catalog_format="compact")
    assert len(compact) < len(explicit)
    grouped = build_catalog(
        entries, load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, budget=len(explicit) - 1, search_tool=SEARCH_TOOL
    )
    # Every description whole, in groups: nothing is cut, so no search tool either.
    assert grouped.text == compact and grouped.complete
    read = read_catalog(grouped.text)
    assert not read.explicit and read.described == {e.name: e.description for e in entries}
    assert "grouped by source" in read.header and SEARCH_TOOL not in read.header


def test_the_explicit_format_shortens_descriptions_before_it_groups() -> None:
    entries = [_entry(f"m-{i:02d}", Layer.MARKET.rank, f"Use for task {i}. " + "Detail. " * 30) for i in range(30)]
    whole = _render(entries, None, catalog_format="explicit")
    budget = len(whole) * 3 // 4
    read = read_catalog(_render(entries, budget, catalog_format="explicit"))
    assert read.explicit and read.named == [] and read.more == 0
    assert all(d.startswith(f"Use for task {i}.") and d.endswith("…") for i, d in enumerate(read.described.values()))
    assert SEARCH_TOOL in read.header  # cut: the search tool finds the whole descriptions
    assert [s.files_root for s in read.skills] == [e.files_root for e in entries]
    # Not every skill can be described in an entry of its own: groups, as auto gives them.
    small = len(_render(entries, None, catalog_format="compact")) // 3
    assert _render(entries, small, catalog_format="explicit") == _render(entries, small)
    assert not read_catalog(_render(entries, small)).explicit


def test_the_compact_format_always_groups() -> None:
    read = read_catalog(_render([_entry("pdf", 2)], None, catalog_format="compact"))
    assert not read.explicit and [s.skill_id for s in read.skills] == ["pdf_source-2"]
    assert read.skills[0].files_root == "/ws/2/pdf"


@pytest.mark.parametrize("value", ["Explicit", "grouped", "", None, 1])
def test_an_unknown_catalog_format_is_refused_with_the_known_ones(value: object) -> None:
    with pytest.raises(ValueError, match="is not one of auto, explicit, compact"):
        check_catalog_format(value)
    assert [check_catalog_format(f) for f in CATALOG_FORMATS] == ["auto", "explicit", "compact"]


def test_names_that_do_not_fit_are_counted_not_dropped() -> None:
    text = render_catalog(_entries(10_000), load_tool=LOAD_TOOL, shell_tool=None, budget=20_000)
    assert len(text) <= 20_000
    read = read_catalog(text)
    assert read.described and read.named and read.more
    assert len(read.skills) + read.more == 10_000
    # The first skills in priority order are the described ones, then the named ones.
    assert [s.name for s in read.skills] == [f"skill-{i:05d}" for i in range(len(read.skills))]


def test_a_budget_that_fits_the_names_lists_them_all() -> None:
    text = render_catalog(_entries(300), load_tool=LOAD_TOOL, shell_tool=None, budget=8_000)
    read = read_catalog(text)
    assert len(text) <= 8_000 and read.more == 0
    assert read.described and read.named and len(read.skills) == 300


def test_every_skill_keeps_a_shortened_description_before_any_loses_it() -> None:
    entries = [
        _entry(f"m-{i:03d}", Layer.MARKET.rank, f"Use for task {i}. " + "Long detail. " * 60) for i in range(150)
    ]
    whole = len(_render(entries, None))
    text = _render(entries, whole // 4)
    read = read_catalog(text)
    assert len(text) <= whole // 4 and read.named == [] and read.more == 0
    lengths = {len(d) for d in read.described.values()}
    assert len(read.described) == 150 and max(lengths) - min(lengths) <= 2  # one common cut
    assert all(d.startswith(f"Use for task {i}.") and d.endswith("…") for i, d in enumerate(read.described.values()))


def test_short_descriptions_stay_whole_while_the_longest_are_cut() -> None:
    short = "Use for quick things."
    entries = [_entry(f"m-{i:02d}", 2, short if i % 2 else "Use for long things. " * 40) for i in range(40)]
    read = read_catalog(_render(entries, len(_render(entries, None)) // 2))
    assert read.named == [] and all(read.described[e.name] == short for e in entries[1::2])
    assert all(read.described[e.name].endswith("…") for e in entries[::2])


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
def test_the_header_counts_toward_the_budget(catalog_format: CatalogFormat) -> None:
    entries = [_entry("only", 2, "Use when the task needs it. " * 20)]
    budget = len(_render(entries, None, catalog_format=catalog_format)) - 1
    text = _render(entries, budget, catalog_format=catalog_format)
    assert len(text) <= budget and text.startswith("You can use skills")
    read = read_catalog(text)
    assert [s.name for s in read.skills] == ["only"] or read.more == 1


def test_a_budget_smaller_than_the_header_still_holds() -> None:
    entries = [_entry(f"skill-{i}", 2) for i in range(5)]
    for budget in (0, 10, 100, 300):
        assert len(_render(entries, budget)) <= budget


def test_a_tiny_budget_names_what_fits_and_counts_the_rest() -> None:
    entries = [_entry(f"skill-{i:03d}", 2) for i in range(200)]
    header = len(build_catalog(entries[:1], load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, budget=None).text)
    text = _render(entries, header + 400)
    read = read_catalog(text)
    assert len(text) <= header + 400
    assert read.named and read.more and len(read.skills) + read.more == 200


def test_a_huge_budget_shows_everything_whole() -> None:
    entries = [_entry(f"skill-{i:03d}", 2, f"Use for {i}. " * 50) for i in range(200)]
    cut = build_catalog(entries, load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, budget=10_000_000, search_tool=SEARCH_TOOL)
    assert cut.complete and cut.text == _render(entries, None)
    assert read_catalog(cut.text).described == {e.name: e.description for e in entries}


def test_a_user_skill_keeps_its_description_when_market_skills_are_cut() -> None:
    mine = _entry("zz-my-own", Layer.USER.rank, "Use for my own very particular report format, every Monday.")
    market = [_entry(f"market-{i:03d}", Layer.MARKET.rank, "Use for a market task. " * 8) for i in range(200)]
    text = _render([*market, mine], 20_000)
    read = read_catalog(text)
    assert len(text) <= 20_000
    assert read.described["zz-my-own"] == "Use for my own very particular report format, every Monday."
    assert read.described["market-199"].endswith("…")


def test_workspace_skills_are_kept_before_market_and_market_before_global() -> None:
    entries = [
        _entry("a-global", Layer.GLOBAL.rank, "Use for global things. " * 20),
        _entry("b-market", Layer.MARKET.rank, "Use for market things. " * 20),
        _entry("c-workspace", Layer.WORKSPACE.rank, "Use for workspace things. " * 20),
    ]
    whole = {e.name: e.description for e in entries}
    # Room for the workspace skill's whole description, the others shortened.
    read = read_catalog(_render(entries, len(_render(entries, None)) - 300))
    assert read.described["c-workspace"] == whole["c-workspace"]
    assert read.described["a-global"] != whole["a-global"]
    # Not every skill described: the workspace's first, the global one named.
    many = [*entries, *(_entry(f"d-market-{i}", Layer.MARKET.rank) for i in range(30))]
    header = len(_render(many[:1], None))
    read = read_catalog(_render(many, header + 1_000))
    assert "c-workspace" in read.described and "a-global" in read.named


def test_relevance_orders_a_group_and_keeps_descriptions_first() -> None:
    entries = [_entry(f"m-{i:02d}", 2, relevance=float(i % 5 == 3)) for i in range(40)]
    read = read_catalog(_render(entries, None))
    order = [s.name for s in read.skills]
    favourites = [f"m-{i:02d}" for i in range(40) if i % 5 == 3]
    assert order == favourites + sorted(set(order) - set(favourites))
    header = len(_render(entries[:1], None))
    cut = read_catalog(_render(entries, header + 900))
    priority = favourites + sorted(set(order) - set(favourites))
    assert cut.named and [s.name for s in cut.skills if s.description] == priority[: len(cut.described)]


def test_groups_carry_source_and_root_once_and_entries_only_what_differs() -> None:
    entries = [
        CatalogEntry(name="pdf", description="Use for PDFs.", source="team", files_root="/c/git-team/pdf"),
        CatalogEntry(name="docx", description="Use for Word.", source="team", files_root="/c/git-team/word"),
        CatalogEntry(name="mine", description="Use for me.", source="workspace", files_root="/ws/skills/mine", rank=3),
    ]
    text = _render(entries, None, catalog_format="compact")
    assert text.count('source="team"') == 1 and text.count("/c/git-team") == 1
    assert '<skill name="pdf">' in text and '<skill name="docx" folder="word">' in text
    read = read_catalog(text)
    assert [(s.skill_id, s.files_root) for s in read.skills] == [
        ("mine_workspace", "/ws/skills/mine"),
        ("docx_team", "/c/git-team/word"),
        ("pdf_team", "/c/git-team/pdf"),
    ]


def test_without_files_roots_no_root_and_no_shell_line_is_rendered() -> None:
    text = render_catalog(_entries(3), load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, catalog_format="compact")
    assert "root=" not in text and SHELL_TOOL not in text and "files-root" not in text
    assert all(s.files_root is None for s in read_catalog(text).skills)


def test_shadowed_ids_get_one_line_and_a_header_sentence() -> None:
    text = _render([_entry("pdf", 2)], None, shadowed=("pdf_other", "x_global"))
    read = read_catalog(text)
    assert read.shadowed == ["pdf_other", "x_global"] and "<shadowed> lists skills" in read.header
    assert "<shadowed>" not in _render([_entry("pdf", 2)], None)


def test_a_cut_catalog_names_the_search_tool_and_a_whole_one_does_not() -> None:
    entries = [_entry(f"skill-{i:03d}", 2) for i in range(100)]
    assert SEARCH_TOOL not in _render(entries, None)
    cut = build_catalog(entries, load_tool=LOAD_TOOL, shell_tool=None, budget=5_000, search_tool=SEARCH_TOOL)
    assert f"{SEARCH_TOOL}(" in cut.text and not cut.complete


@settings(max_examples=80, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=40_000),
    count=st.integers(min_value=1, max_value=150),
    ranks=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=150),
    length=st.integers(min_value=1, max_value=400),
    text=st.sampled_from(["d", "a&b", '<"x">', "é ", "&&&&"]),
    shadowed=st.lists(st.sampled_from(["a_b", "c&d_e"]), max_size=3),
    catalog_format=st.sampled_from(CATALOG_FORMATS),
)
def test_the_catalog_never_exceeds_the_budget_and_accounts_for_every_skill(
    budget: int,
    count: int,
    ranks: list[int],
    length: int,
    text: str,
    shadowed: list[str],
    catalog_format: CatalogFormat,
) -> None:
    entries = [_entry(f"s-{i:03d}", ranks[i % len(ranks)], text * (length + i % 7)) for i in range(count)]
    rendered = _render(entries, budget, tuple(shadowed), catalog_format)
    assert len(rendered) <= budget
    if rendered:
        read = read_catalog(rendered)  # well-formed, escaped, even when descriptions are cut
        assert len(read.skills) + read.more == count
        assert len({s.name for s in read.skills}) == len(read.skills)
        # Described skills come first in priority order, then named ones, then the counted rest.
        priority = [e.name for e in sorted(entries, key=lambda e: (-e.rank, e.name))]
        described, named = len(read.described), len(read.named)
        assert set(read.described) == set(priority[:described])
        assert set(read.named) == set(priority[described : described + named])


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=60),
    ranks=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=60),
    text=st.sampled_from(["d", "a&b", '<"x">', "é ", "&&&&"]),
    shadowed=st.lists(st.sampled_from(["a_b", "c&d_e"]), max_size=3),
    roots=st.booleans(),
    slack=st.integers(min_value=-3, max_value=3),
    catalog_format=st.sampled_from(CATALOG_FORMATS),
)
def test_the_whole_catalog_is_given_exactly_when_it_fits_the_budget(
    count: int,
    ranks: list[int],
    text: str,
    shadowed: list[str],
    roots: bool,
    slack: int,
    catalog_format: CatalogFormat,
) -> None:
    # The budget is checked against the whole catalog's size summed from its parts, not rendered:
    # a budget of exactly its length keeps it whole, one less cuts it (or, from explicit
    # entries, groups the skills when every description still fits whole that way).
    entries = [_entry(f"s-{i:03d}", ranks[i % len(ranks)], text * (1 + i % 5)) for i in range(count)]
    if not roots:
        entries = [
            CatalogEntry(name=e.name, description=e.description, source=e.source, files_root=None) for e in entries
        ]
    options = {"load_tool": LOAD_TOOL, "shell_tool": SHELL_TOOL, "shadowed": tuple(shadowed)}
    whole = build_catalog(entries, **options, catalog_format=catalog_format)  # type: ignore[arg-type]
    compact = build_catalog(entries, **options, catalog_format="compact")  # type: ignore[arg-type]
    assert read_catalog(whole.text).explicit == (catalog_format != "compact")
    budget = len(whole.text) + slack
    kept = build_catalog(entries, **options, budget=budget, search_tool=SEARCH_TOOL, catalog_format=catalog_format)  # type: ignore[arg-type]
    assert (kept.text == whole.text) == (slack >= 0)
    assert kept.complete == (kept.text in (whole.text, compact.text))  # else it was cut
    if catalog_format == "auto":
        assert kept.complete == (slack >= 0 or len(compact.text) <= budget)
    assert len(kept.text) <= budget


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=150),
    ranks=st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=10),
    # Mostly a layer above the shared ones (the user's), sometimes one among them.
    own=st.lists(st.sampled_from([4, 4, 4, 5, 5, 2]), max_size=6),
    text=st.sampled_from(["d", "a&b", '<"x">', "é "]),
    shadowed=st.lists(st.sampled_from(["a_b", "c&d_e"]), max_size=2),
    share=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.1)),
    longer=st.integers(min_value=1, max_value=8),
    catalog_format=st.sampled_from(CATALOG_FORMATS),
)
def test_a_users_catalog_built_on_the_shared_parts_is_the_catalog_of_all_its_skills(
    count: int,
    ranks: list[int],
    own: list[int],
    text: str,
    shadowed: list[str],
    share: float | None,
    longer: int,
    catalog_format: CatalogFormat,
) -> None:
    # A user's own skills (usually of a layer above every shared one) are laid out before the
    # shared layout, which is built once; the text must be what one catalog of everything gives,
    # whole or cut to any share of its length.
    base = [_entry(f"s-{i:03d}", ranks[i % len(ranks)], text * (1 + i % 9) * longer) for i in range(count)]
    extra = [
        CatalogEntry(
            name=f"own-{i}",
            description=text * (2 + i) * longer * 3,
            source="user",
            files_root=f"/u/{i}/own-{i}",
            rank=rank,
            workflow=i == 1,
        )
        for i, rank in enumerate(own)
    ]
    whole = build_catalog([*base, *extra], load_tool=LOAD_TOOL, shell_tool=SHELL_TOOL, shadowed=tuple(shadowed))
    budget = None if share is None else int(len(whole.text) * share)
    options = {
        "load_tool": LOAD_TOOL,
        "shell_tool": SHELL_TOOL,
        "budget": budget,
        "search_tool": SEARCH_TOOL,
        "catalog_format": catalog_format,
    }
    parts = CatalogParts(base)
    for _ in range(2):  # the second build reuses the shared layout
        built = parts.build(**options, shadowed=tuple(shadowed), extra=extra)
        assert built == build_catalog([*base, *extra], **options, shadowed=tuple(shadowed))

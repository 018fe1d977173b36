"""The catalog of five public-collection-sized git markets (177 served skills, long descriptions,
long slugs, same-name skills across markets) under the default budget, and the shadowed skills it
keeps loadable by id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import DEFAULT_CATALOG_BUDGET
from harness.pipeline.plan import TurnPlan
from harness.tools.skills import LOAD_TOOL, skill_tools
from tests.support.catalog import read_catalog
from tests.support.filesystems import open_filesystem
from tests.support.markets import FIVE_MARKETS, SHADOWED, Market, build_markets, open_markets
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")


@pytest.fixture(scope="module")
def markets(tmp_path_factory: pytest.TempPathFactory) -> list[Market]:
    return build_markets(tmp_path_factory.mktemp("remotes"))


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The markets' clone cache, shared by the module: no test changes a market."""
    return tmp_path_factory.mktemp("clones")


@asynccontextmanager
async def _pipeline(
    markets: list[Market], clones: Path, root: Path, mode: str = "local-shell", bwrap: str | None = None
) -> AsyncIterator[SkillPipeline]:
    async with (
        open_filesystem(mode, root / "ws", bwrap=bwrap) as fs,
        SkillPipeline(filesystem=fs, repositories=open_markets(markets, clones), watch=False) as pipeline,
    ):
        yield pipeline


async def _load(plan: TurnPlan, skill_id: str) -> str:
    tools = {t.name: t for t in skill_tools(plan)}
    return await tools[LOAD_TOOL].call({"skillId": skill_id})


def _slug(index: int) -> str:
    return f"git-{FIVE_MARKETS[index][0]}-remote-main"


async def test_every_skill_of_five_markets_keeps_a_description_under_the_default_budget(
    markets: list[Market], clones: Path, tmp_path: Path
) -> None:
    async with _pipeline(markets, clones, tmp_path) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert pipeline.catalog_budget == DEFAULT_CATALOG_BUDGET
    assert len(plan.skills) == 177 and len(plan.catalog) <= DEFAULT_CATALOG_BUDGET
    read = read_catalog(plan.catalog)  # well-formed and escaped
    assert len(read.skills) == 177 and read.named == [] and read.more == 0
    for shown in read.skills:
        found = plan.find(shown.skill_id)  # the id and the folder derive from the group
        assert found is not None and found.skill.name == shown.name
        assert shown.description and found.skill.description.startswith(shown.description.removesuffix("…"))
        assert shown.files_root == found.files_root and Path(shown.files_root, "SKILL.md").is_file()
    sources = {s.skill_id.rpartition("_")[2] for s in read.skills}
    assert sources == {"northwind", "acme-labs", "acme-tools", "contoso", "fabrikam"}


@pytest.mark.parametrize("mode", ["local-shell", "sandbox"])
async def test_without_a_budget_each_skill_shows_the_id_and_files_root_to_use_as_written(
    markets: list[Market], clones: Path, tmp_path: Path, mode: str, request: pytest.FixtureRequest
) -> None:
    bwrap = request.getfixturevalue("bwrap") if mode == "sandbox" else None
    root = request.getfixturevalue("sandbox_dir") if mode == "sandbox" else tmp_path
    async with _pipeline(markets, clones, root, mode, bwrap) as pipeline:
        pipeline.catalog_budget = None
        plan = await pipeline.prepare(ALICE)
        read = read_catalog(plan.catalog)
        assert read.explicit and len(read.skills) == 177 and read.more == 0
        for shown in read.skills:
            found = plan.find(shown.skill_id)  # the id as written, nothing composed
            assert found is not None and found.skill.name == shown.name
            assert shown.files_root == found.files_root and shown.description == found.skill.description
            assert f'<skill-folder skill-id="{found.skill.skill_id}">{shown.files_root}<' in await _load(
                plan, shown.skill_id
            )
    if mode == "sandbox":
        assert all(s.files_root and s.files_root.startswith("/workspace/.skills-cache/") for s in read.skills)
    for shown in read.skills:
        host = root / "ws" / shown.files_root.removeprefix("/workspace/") if mode == "sandbox" else shown.files_root
        assert Path(host, "SKILL.md").is_file()


async def test_a_budget_or_format_set_between_turns_is_the_next_turns(
    markets: list[Market], clones: Path, tmp_path: Path
) -> None:
    async with _pipeline(markets, clones, tmp_path) as pipeline:
        cut = await pipeline.prepare(ALICE)
        assert cut.search is not None and not read_catalog(cut.catalog).explicit
        pipeline.catalog_budget = None
        whole = await pipeline.prepare(ALICE)
        assert whole.search is None and read_catalog(whole.catalog).explicit
        pipeline.catalog_format = "compact"
        grouped = await pipeline.prepare(ALICE)
        assert not read_catalog(grouped.catalog).explicit and len(grouped.catalog) > DEFAULT_CATALOG_BUDGET
        with pytest.raises(ValueError, match="catalog_format: 'grouped' is not one of auto, explicit, compact"):
            pipeline.catalog_format = "grouped"  # type: ignore[assignment]
        assert pipeline.catalog_format == "compact"


async def test_without_a_budget_the_compact_form_still_saves_the_repeated_source(
    markets: list[Market], clones: Path, tmp_path: Path
) -> None:
    async with _pipeline(markets, clones, tmp_path) as pipeline:
        pipeline.catalog_budget = None
        pipeline.catalog_format = "compact"
        plan = await pipeline.prepare(ALICE)
    read = read_catalog(plan.catalog)
    assert all(read.described[name] == d for m in markets for name, d in m.skills.items() if name not in SHADOWED)
    for index in range(len(FIVE_MARKETS)):
        assert plan.catalog.count(_slug(index)) == 1  # once, in its group's root


async def test_a_shadowed_market_skill_loads_by_its_full_id_and_the_name_means_the_winner(
    markets: list[Market], clones: Path, tmp_path: Path
) -> None:
    async with _pipeline(markets, clones, tmp_path) as pipeline:
        plan = await pipeline.prepare(ALICE)
        read = read_catalog(plan.catalog)
        assert [s.skill_id for s in read.skills if s.name == "skill-creator"] == ["skill-creator_contoso"]
        assert read.shadowed == ["brainstorming_contoso", "pdf_acme-labs", "skill-creator_northwind"]
        shadowed = f"skill-creator_{_slug(0)}"
        assert "From northwind-agent-skills-collection." in await _load(plan, shadowed)
        assert "From northwind-agent-skills-collection." in await _load(plan, "skill-creator_northwind")
        assert "From contoso-superpowers-skill-pack." in await _load(plan, "skill-creator")
        loser = plan.find(shadowed)
        assert loser is not None and loser.files_root is not None
        assert Path(loser.files_root, "scripts", "run.py").read_text() == "print('northwind-agent-skills-collection')\n"
        assert shadowed not in plan.skills


async def test_a_user_skill_shadows_a_market_one_for_that_user_only(
    markets: list[Market], clones: Path, tmp_path: Path
) -> None:
    make_skill(tmp_path / "ws" / "alice" / "skills", "pdf", description="Alice's own PDF habits.", body="Alice's.\n")
    async with _pipeline(markets, clones, tmp_path) as pipeline:
        alice, bob = await pipeline.prepare(ALICE), await pipeline.prepare(BOB)
    assert "Alice's." in await _load(alice, "pdf")
    for market in (1, 2):  # acme-tools lost to alice, acme-labs to acme-tools: both load by id
        assert "From acme-" in await _load(alice, f"pdf_{_slug(market)}")
    assert read_catalog(alice.catalog).shadowed == [
        "brainstorming_contoso",
        "pdf_acme-labs",
        "pdf_acme-tools",
        "skill-creator_northwind",
    ]
    assert "From acme-tools" in await _load(bob, "pdf")
    assert bob.find("pdf_workspace-namespaced") is None and "Alice" not in bob.catalog

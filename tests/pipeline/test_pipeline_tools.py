"""The catalog the model sees and the load tool it reads skills with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.context import RuntimeContext
from harness.errors import SkillNotFound
from harness.pipeline import SkillPipeline
from harness.pipeline.catalog import CatalogFormat
from harness.pipeline.plan import TurnPlan
from harness.tools.skills import LOAD_TOOL, MAX_LINES, MAX_PAGE_BYTES, SHELL_TOOL, skill_tools
from repositories import FileContents, MemoryRepository, SkillBundleContents
from tests.support.catalog import read_catalog
from tests.support.pipeline import bundle, open_filesystem, put_skill, skill_text, write_skill
from tests.support.sizing import sized
from tests.support.skills import make_skill, served_body

ALICE = RuntimeContext(user_id="alice")
HIDDEN = "disable-model-invocation: true\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


async def _plan(
    tmp_path: Path,
    market: MemoryRepository,
    *,
    catalog_budget: int | None = None,
    catalog_format: CatalogFormat = "auto",
) -> TurnPlan:
    async with (
        open_filesystem("local-shell", tmp_path) as fs,
        SkillPipeline(
            filesystem=fs,
            repositories=[market],
            watch=False,
            catalog_budget=catalog_budget,
            catalog_format=catalog_format,
        ) as pipeline,
    ):
        return await pipeline.prepare(ALICE)


async def _load(plan: TurnPlan, **arguments: object) -> str:
    """What the load tool serves after its header."""
    tools = {t.name: t for t in skill_tools(plan)}
    return served_body(await tools[LOAD_TOOL].call(arguments))


def _docs_market() -> MemoryRepository:
    long_text = "".join(f"line {i}\n" for i in range(1, 5001))
    wide = "".join(f"{i:05d} " + "x" * 93 + "\n" for i in range(1, 1001))  # 100 bytes a line
    files = (
        FileContents(path="scripts/run.sh", data=b"#!/bin/sh\necho hi\n"),
        FileContents(path="references/long.md", data=long_text.encode()),
        FileContents(path="references/wide.md", data=wide.encode()),
        FileContents(path="assets/logo.png", data=PNG),
    )
    return MemoryRepository(
        [SkillBundleContents(folder="docs", skill_md=skill_text("docs").encode(), files=files)], name="acme"
    )


# -- catalog ----------------------------------------------------------------------------------


async def test_catalog_lists_visible_skills_sorted_with_the_registered_tool_names(tmp_path: Path) -> None:
    market = MemoryRepository([bundle("zeta"), bundle("alpha"), bundle("mid")], name="acme")
    plan = await _plan(tmp_path, market)
    assert [s.name for s in read_catalog(plan.catalog).skills] == ["alpha", "mid", "zeta"]
    assert f'{LOAD_TOOL}(skillId="<skill-id>")' in plan.catalog
    assert f'{SHELL_TOOL}("python3 <files-root>/scripts/' in plan.catalog
    assert {t.name for t in skill_tools(plan)} == {LOAD_TOOL, SHELL_TOOL}


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
async def test_catalog_text_is_xml_escaped(tmp_path: Path, catalog_format: CatalogFormat) -> None:
    ws = tmp_path / "a&b <ws>"
    market = MemoryRepository([bundle("tool", description='Use for <b>bold</b> & "quoted" text')], name="acme")
    plan = await _plan(ws, market, catalog_format=catalog_format)
    description = 'Use for &lt;b&gt;bold&lt;/b&gt; &amp; "quoted" text'
    if catalog_format == "explicit":
        assert f"<description>{description}</description>" in plan.catalog
        assert f"<files-root>{tmp_path}/a&amp;b &lt;ws&gt;/.skills-cache/acme/tool</files-root>" in plan.catalog
    else:
        assert f'<skill name="tool">{description}</skill>' in plan.catalog
        assert f'root="{tmp_path}/a&amp;b &lt;ws&gt;/.skills-cache/acme"' in plan.catalog
    assert "<b>" not in plan.catalog
    [tool] = read_catalog(plan.catalog).skills
    assert tool.description == 'Use for <b>bold</b> & "quoted" text'
    assert tool.files_root == plan.skills["tool_acme"].files_root == f"{ws}/.skills-cache/acme/tool"


@pytest.mark.parametrize("catalog_format", ["explicit", "compact"])
async def test_a_budget_shortens_the_longest_descriptions_first(tmp_path: Path, catalog_format: CatalogFormat) -> None:
    skills = [bundle(f"skill-{i:02d}", description=f"Short one {i}.") for i in range(5)]
    skills.append(bundle("verbose", description="Use when " + "very " * 200 + "long."))
    full = await _plan(tmp_path / "a", MemoryRepository(skills, name="acme"), catalog_format=catalog_format)
    budget = len(full.catalog) - 500
    market = MemoryRepository(skills, name="acme")
    plan = await _plan(tmp_path / "b", market, catalog_budget=budget, catalog_format=catalog_format)
    assert len(plan.catalog) <= budget
    read = read_catalog(plan.catalog)
    assert read.explicit == (catalog_format == "explicit")
    assert read.described["verbose"].endswith("…") and read.named == [] and read.more == 0
    for i in range(5):
        assert read.described[f"skill-{i:02d}"] == f"Short one {i}."


async def test_a_tight_budget_lists_the_rest_by_name(tmp_path: Path) -> None:
    skills = [bundle(f"skill-{i:02d}", description="Use when " + "many words " * 20) for i in range(30)]
    plan = await _plan(tmp_path, MemoryRepository(skills, name="acme"), catalog_budget=2200)
    assert len(plan.catalog) <= 2200
    read = read_catalog(plan.catalog)
    assert read.described and read.named and read.more == 0
    assert sorted(s.name for s in read.skills) == [f"skill-{i:02d}" for i in range(30)]  # nothing dropped silently
    assert all(s.skill_id in plan.skills and s.files_root == plan.skills[s.skill_id].files_root for s in read.skills)


async def test_a_tighter_budget_counts_what_it_cannot_name(tmp_path: Path) -> None:
    skills = [bundle(f"skill-{i:02d}", description="Use when " + "many words " * 20) for i in range(100)]
    plan = await _plan(tmp_path, MemoryRepository(skills, name="acme"), catalog_budget=2000)
    read = read_catalog(plan.catalog)
    assert len(plan.catalog) <= 2000 and read.named and read.more
    assert len(read.skills) + read.more == 100


async def test_hidden_skills_stay_out_of_the_catalog_but_can_be_invoked(tmp_path: Path) -> None:
    market = MemoryRepository([bundle("secret", extra=HIDDEN), bundle("open")], name="acme")
    plan = await _plan(tmp_path, market)
    assert [s.name for s in read_catalog(plan.catalog).skills] == ["open"] and "secret" not in plan.catalog
    assert "secret_acme" in plan.skills and plan.find("secret") is None
    with pytest.raises(SkillNotFound):
        await _load(plan, skillId="secret_acme")
    assert plan.invoke("secret").skill.skill_id == "secret_acme"
    assert (await _load(plan, skillId="secret_acme")).startswith("---\nname: secret\n")
    assert (tmp_path / ".skills-cache" / "acme" / "secret" / "scripts" / "run.sh").is_file()  # staged all the same


async def test_no_block_at_all_when_nothing_is_visible(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, MemoryRepository([bundle("secret", extra=HIDDEN)], name="acme"))
    assert plan.catalog == ""
    empty = await _plan(tmp_path / "empty", MemoryRepository([], name="acme"))
    assert empty.catalog == ""


async def test_invoking_an_unknown_skill_says_so(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, MemoryRepository([bundle("tool")], name="acme"))
    with pytest.raises(SkillNotFound, match="tool"):
        plan.invoke("nope")


# -- the load tool ----------------------------------------------------------------------------


async def test_load_returns_the_original_bytes_by_id_or_bare_name(tmp_path: Path) -> None:
    text = "---\nname: tool\ndescription: 'Quoted:  spacing kept'\nmetadata: {a: b}\n---\n# Body\n"
    market = MemoryRepository([SkillBundleContents(folder="tool", skill_md=text.encode())], name="acme")
    plan = await _plan(tmp_path, market)
    assert await _load(plan, skillId="tool_acme") == text
    assert await _load(plan, skillId="tool") == text
    assert await _load(plan, skillId="tool", path="./SKILL.md") == text
    assert await _load(plan, skillId="tool", path=".") == text


async def test_long_files_are_paged_by_lines_with_the_offset_to_continue(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, _docs_market())
    first = await _load(plan, skillId="docs", path="references/long.md")
    assert first.count("\n") == MAX_LINES + 1 and first.startswith("line 1\n")
    assert first.endswith(f"[showing lines 1-{MAX_LINES} of 5000; continue with offset={MAX_LINES + 1}]")
    second = await _load(plan, skillId="docs", path="references/long.md", offset=MAX_LINES + 1)
    assert second.startswith(f"line {MAX_LINES + 1}\n") and "continue with offset=4001" in second
    last = await _load(plan, skillId="docs", path="references/long.md", offset=4001)
    assert last.startswith("line 4001\n") and last.endswith("line 5000\n") and "continue" not in last
    few = await _load(plan, skillId="docs", path="references/./long.md", offset=10, limit=3)
    assert few.startswith("line 10\nline 11\nline 12\n") and "continue with offset=13" in few
    huge_limit = await _load(plan, skillId="docs", path="references/long.md", limit=10_000)
    assert huge_limit == first


async def test_pages_stay_under_fifty_kilobytes(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, _docs_market())
    page = await _load(plan, skillId="docs", path="references/wide.md")
    body, _, note = page.rpartition("\n[")
    assert len(body.encode()) <= MAX_PAGE_BYTES
    shown = body.count("\n")
    assert shown == MAX_PAGE_BYTES // 100 and f"continue with offset={shown + 1}]" in note
    rest = await _load(plan, skillId="docs", path="references/wide.md", offset=shown + 1)
    assert rest.startswith(f"{shown + 1:05d} ")


async def test_binary_files_are_described_not_dumped(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, _docs_market())
    text = await _load(plan, skillId="docs", path="assets/logo.png")
    root = tmp_path / ".skills-cache" / "acme" / "docs"
    assert (
        text
        == f"assets/logo.png is a binary file (image/png, {len(PNG)} bytes) at {root}/assets/logo.png; it is not shown as text."
    )


@pytest.mark.parametrize("path", ["/etc/passwd", "../../x", "scripts/../../x", "~/x"])
async def test_absolute_and_escaping_paths_are_refused_with_the_real_paths(tmp_path: Path, path: str) -> None:
    plan = await _plan(tmp_path, _docs_market())
    with pytest.raises(PermissionError) as refused:
        await _load(plan, skillId="docs", path=path)
    message = str(refused.value)
    assert path in message
    assert (
        "available paths: SKILL.md, assets/logo.png, references/long.md, references/wide.md, scripts/run.sh" in message
    )
    assert "root:" not in message


async def test_a_missing_file_lists_the_real_paths(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, _docs_market())
    with pytest.raises(FileNotFoundError, match=r"no file 'scripts/nope.sh'; available paths: SKILL.md, "):
        await _load(plan, skillId="docs", path="scripts/nope.sh")


async def test_an_unknown_skill_is_not_found(tmp_path: Path) -> None:
    plan = await _plan(tmp_path, _docs_market())
    with pytest.raises(SkillNotFound, match=r"'nope' is not available in this turn; available: docs_acme"):
        await _load(plan, skillId="nope")


@pytest.mark.parametrize("mode", ["local", "remote"])
async def test_user_skill_files_are_read_on_demand_through_the_users_area(mode: str, tmp_path: Path) -> None:
    async with open_filesystem(mode, tmp_path / "ws") as fs:
        alice = fs.scoped("alice")
        await put_skill(alice, "mine", description="alice's own")
        await alice.write_text("skills/mine/references/guide.md", "first guide\n")
        async with SkillPipeline(filesystem=fs, watch=False) as pipeline:
            plan = await pipeline.prepare(ALICE)
            await alice.write_text("skills/mine/references/guide.md", "edited guide\n")
            text = await _load(plan, skillId="mine", path="references/guide.md")
    assert text == "edited guide\n"  # read when asked, not preloaded


async def test_loads_and_shell_uses_are_reported_with_the_real_skill_id(tmp_path: Path) -> None:
    write_skill(tmp_path / "alice" / "skills", "mine", script="#!/bin/sh\necho mine\n")
    events: list[tuple[str, str]] = []

    class Hooks:
        async def record_view(self, skill_id: str, context: RuntimeContext) -> None:
            events.append(("view", skill_id))

        async def record_use(self, skill_id: str, context: RuntimeContext) -> None:
            events.append(("use", skill_id))

    async with open_filesystem("local-shell", tmp_path) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        tools = {t.name: t for t in skill_tools(plan, usage=Hooks())}
        await tools[LOAD_TOOL].call({"skillId": "mine"})
        root = plan.skills["mine_workspace-namespaced"].files_root
        output = await tools[SHELL_TOOL].call({"command": f"sh {root}/scripts/run.sh"})
        await tools[SHELL_TOOL].call({"command": "true"})
    assert output == "exit code: 0\nstdout:\nmine"
    assert events == [("view", "mine_workspace-namespaced"), ("use", "mine_workspace-namespaced")]


async def test_a_single_line_of_mebibytes_is_split_across_pages_that_stay_within_the_limit(tmp_path: Path) -> None:
    # Each page re-reads the whole line: 1 MiB (20 pages) proves the split, 5 MiB with --large.
    line = ("0123456789abcdé" * (sized(1, full=5) * 1024 * 1024 // 16)).encode()
    files = (FileContents(path="data/one-line.txt", data=line + b"\nlast\n"),)
    market = MemoryRepository(
        [SkillBundleContents(folder="wide", skill_md=skill_text("wide").encode(), files=files)], name="acme"
    )
    plan = await _plan(tmp_path, market)
    pieces: list[str] = []
    offset = 1
    while True:
        page = await _load(plan, skillId="wide", path="data/one-line.txt", offset=offset)
        text, _, note = page.partition("\n[showing lines ")
        assert len(text.encode()) <= MAX_PAGE_BYTES
        pieces.append(text)
        found = re.search(r"continue with offset=(\d+)\]$", note)
        if found is None:
            break
        assert "the last line continues on the next page" in note or text.endswith("\n")
        offset = int(found.group(1))
    assert "".join(pieces).encode() == line + b"\nlast\n"


async def test_read_file_splits_a_line_longer_than_a_page(tmp_path: Path) -> None:
    from harness.tools.files import file_tools

    async with open_filesystem("local-shell", tmp_path) as fs:
        await fs.write_text("big.txt", "y" * (MAX_PAGE_BYTES * 3) + "\n")
        read = {t.name: t for t in file_tools(fs, skill_dirs=["skills"])}["read_file"]
        first = await read.call({"path": "big.txt"})
        second = await read.call({"path": "big.txt", "offset": 2})
    assert first.startswith("y" * MAX_PAGE_BYTES + "\n[showing lines 1-1 of 4; the last line continues")
    assert first.endswith("continue with offset=2]")
    assert second.startswith("y" * MAX_PAGE_BYTES + "\n[showing lines 2-2 of 4")


async def test_only_a_skill_another_source_shadowed_stays_loadable_by_id(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills" / "a", "dup", description="The first workspace dup.")
    make_skill(tmp_path / "skills" / "b", "dup", description="The second workspace dup.")
    plan = await _plan(tmp_path, MemoryRepository([bundle("dup", description="The market dup.")], name="acme"))
    assert set(plan.shadowed_skills) == {"dup_acme"}  # the second workspace dup has the winner's id
    assert (await _load(plan, skillId="dup_acme")).startswith(skill_text("dup", "The market dup."))
    found = plan.find("dup_workspace")
    assert found is not None and found.skill.description == "The first workspace dup."
    assert read_catalog(plan.catalog).shadowed == ["dup_acme"]

"""Attacks by a well-known index's publisher: digest lies, hostile archives (links, ``..``,
absolute paths, duplicates, too many entries, too big, a gzip bomb) and artifact URLs that try to
leave the site the operator named (rule 13). Each costs only its entry, never the market."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from repositories import WellKnownRepository
from repositories.archives import MAX_NAMED_SKIPS
from tests.support.wellknown import Site, serve, tar_gz, zipped


def _md(name: str, body: str = "Do it.") -> bytes:
    return f"---\nname: {name}\ndescription: the {name} skill\n---\n{body}\n".encode()


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


async def test_a_digest_lie_is_refused_and_the_last_good_artifact_stays(site: Site) -> None:
    site.add("hello", _md("hello"))
    async with WellKnownRepository(site.root) as repo:
        first = await repo.snapshot()
        assert first.bundle("hello") is not None
        site.add("hello", _md("hello", "Evil."), digest="sha256:" + hashlib.sha256(b"other").hexdigest())
        site.add("liar", _md("liar"), digest="sha256:" + "0" * 64)
        snapshot = await repo.snapshot()
        assert snapshot.bundle("liar") is None
        hello = snapshot.bundle("hello")
        assert hello is not None and b"Evil" not in hello.skill_md
        assert any("liar" in p and "not sha256:" + "0" * 64 in p or "digest" in p for p in snapshot.problems)
        assert any("previous artifact" in p for p in snapshot.problems)


@pytest.mark.parametrize(
    ("artifact", "reason"),
    [
        (tar_gz({"SKILL.md": _md("bad")}, links={"scripts/passwd": "/etc/passwd"}), "a link"),
        (tar_gz({"SKILL.md": _md("bad"), "../escape.sh": b"x"}), "escapes"),
        (tar_gz({"SKILL.md": _md("bad"), "/abs.sh": b"x"}), "absolute"),
        (zipped({"SKILL.md": _md("bad"), "../../escape.sh": b"x"}), "escapes"),
    ],
)
async def test_hostile_entries_inside_an_archive_are_skipped_and_reported(
    site: Site, artifact: bytes, reason: str
) -> None:
    site.add("bad", artifact, kind="archive")
    async with WellKnownRepository(site.root) as repo:
        snapshot = await repo.snapshot()
        bundle = snapshot.bundle("bad")
        # The skill itself is served without the hostile entry, which never reaches a listing.
        assert bundle is not None and bundle.files == ()
        assert any(p.startswith("skill bad: entry") and reason in p for p in snapshot.problems), snapshot.problems


@pytest.mark.parametrize(
    ("artifact", "reason"),
    [
        (tar_gz({"SKILL.md": _md("bad"), "a.md": b"1", "./a.md": b"2"}), "same path"),
        (tar_gz({"SKILL.md": _md("bad"), "A.md": b"1", "a.md": b"2"}), "same path"),
        (tar_gz({"SKILL.md": _md("bad"), **{f"f{i}.md": b"x" for i in range(40)}}), "more than 16 entries"),
        (tar_gz({"SKILL.md": _md("bad"), "big.bin": b"\0" * 200_000}), "unpacks to"),
        (tar_gz({"README.md": b"no skill here"}), "no SKILL.md"),
        (b"not an archive at all", "not a tar archive"),
    ],
)
async def test_hostile_archives_are_refused_whole(site: Site, artifact: bytes, reason: str) -> None:
    site.add("bad", artifact, kind="archive")
    site.add("good", _md("good"))
    async with WellKnownRepository(site.root, max_entries=16, max_file_size=1000, max_package_size=100_000) as repo:
        snapshot = await repo.snapshot()
        assert snapshot.bundle("bad") is None
        assert snapshot.bundle("good") is not None  # one bad entry costs only itself
        assert any(reason in p and "skill bad" in p for p in snapshot.problems), snapshot.problems


async def test_a_gzip_bomb_is_cut_off_while_decompressing(site: Site) -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        info = tarfile.TarInfo("SKILL.md")
        data = _md("bomb") + b"\0" * 5_000_000
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    site.add("bomb", out.getvalue(), kind="archive")
    async with WellKnownRepository(site.root, max_file_size=10_000, max_package_size=50_000) as repo:
        snapshot = await repo.snapshot()
        assert snapshot.bundle("bomb") is None
        assert any("more than" in p for p in snapshot.problems), snapshot.problems


async def test_artifact_urls_cannot_leave_the_site(site: Site, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_bytes(_md("secret"))
    digest = "sha256:" + hashlib.sha256(secret.read_bytes()).hexdigest()
    site.entries = [
        {"name": "a", "type": "skill-md", "url": f"file://{secret}", "digest": digest},
        {"name": "b", "type": "skill-md", "url": "../../../secret.md", "digest": digest},
        {"name": "c", "type": "skill-md", "url": "https://elsewhere.invalid/SKILL.md", "digest": digest},
    ]
    site.write()
    (site.folder / "d").mkdir()
    (site.folder / "d" / "SKILL.md").symlink_to(secret)
    site.entries.append({"name": "d", "type": "skill-md", "url": "d/SKILL.md", "digest": digest})
    site.write()
    async with WellKnownRepository(site.root) as repo:
        snapshot = await repo.snapshot()
        assert snapshot.bundles == ()
        assert len(snapshot.problems) == 4, snapshot.problems
    with serve(site.root) as base:
        async with WellKnownRepository(base) as repo:
            snapshot = await repo.snapshot()
            # The server chose to serve d's file; a file:// URL and another host stay refused.
            assert [b.folder for b in snapshot.bundles] == ["d"]
            assert any("skill a:" in p and "leaves" in p for p in snapshot.problems)


async def test_unknown_types_names_and_duplicates_are_skipped(site: Site) -> None:
    site.add("ok", _md("ok"))
    site.entries += [
        {"name": "../x", "type": "skill-md", "url": "ok/SKILL.md", "digest": site.entries[0]["digest"]},
        {"name": "ok", "type": "skill-md", "url": "ok/SKILL.md", "digest": site.entries[0]["digest"]},
        {"name": "odd", "type": "plugin", "url": "ok/SKILL.md", "digest": site.entries[0]["digest"]},
    ]
    site.write()
    async with WellKnownRepository(site.root) as repo:
        snapshot = await repo.snapshot()
        assert [b.folder for b in snapshot.bundles] == ["ok"]
        assert len(snapshot.problems) == 3


DOT_FILES = {".DS_Store": b"\0\0", ".env": b"TOKEN=secret\n", ".git/config": b"[core]\n", "scripts/.cache/x": b"x"}


@pytest.mark.parametrize("pack", [tar_gz, zipped], ids=["tar", "zip"])
async def test_each_dot_file_an_archive_holds_is_skipped_and_named(site: Site, pack: Callable[..., bytes]) -> None:
    site.add("tool", pack({"SKILL.md": _md("tool"), "scripts/run.sh": b"echo hi\n", **DOT_FILES}), kind="archive")
    with serve(site.root) as base:
        market = WellKnownRepository(base + "#check_interval=0")
        async with Harness(
            workspace=site.root.parent / "ws", repositories=[market], pipeline=PipelineOptions(watch=False)
        ) as agent:
            plan = await agent.pipeline.prepare(RuntimeContext(user_id="u1"), stage=False)
            tool = (await market.snapshot()).bundle("tool")
    assert tool is not None and [f.path for f in tool.files] == ["scripts/run.sh"]
    reported = [d for d in plan.diagnostics if d.code == "market-problem" and d.location == market.source]
    for path in DOT_FILES:  # one diagnostic per file, naming the market (location), the skill and the path
        assert [d for d in reported if d.message.startswith(f"skill tool: entry {path} skipped: ")], path
    assert "skill tool: entry .env skipped: a dot-file (dot-files are not served)" in [d.message for d in reported]


async def test_a_flood_of_dot_files_names_the_first_and_counts_the_rest(site: Site) -> None:
    flood = {f".junk/{i:03d}": b"x" for i in range(200)}
    site.add("tool", tar_gz({"SKILL.md": _md("tool"), **flood}), kind="archive")
    async with WellKnownRepository(site.root) as repo:
        snapshot = await repo.snapshot()
    problems = [p for p in snapshot.problems if p.startswith("skill tool:")]
    assert len(problems) == MAX_NAMED_SKIPS + 1
    assert problems[0] == "skill tool: entry .junk/000 skipped: a dot-file (dot-files are not served)"
    assert problems[-1] == (
        f"skill tool: {200 - MAX_NAMED_SKIPS} more entries skipped, not named "
        f"({200 - MAX_NAMED_SKIPS} a dot-file (dot-files are not served))"
    )
    assert snapshot.bundle("tool") is not None

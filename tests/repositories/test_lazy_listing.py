"""DirectoryRepository(lazy_files=True): skills' folders are listed on first use, with the same rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from repositories import BundleNotFound, DirectoryRepository, FileListing
from tests.support.io import IORecorder
from tests.support.repositories import write_skill


def tree(root: Path) -> None:
    alpha = write_skill(root, "alpha")
    for path in ("scripts/run.py", "references/guide.md", "references/deep/more.md", "notes.txt", ".env.example"):
        (alpha / path).parent.mkdir(parents=True, exist_ok=True)
        (alpha / path).write_text(path)
    (alpha / "references" / "passwd").symlink_to("/etc/passwd")
    (alpha / "references" / "build").mkdir()
    (alpha / "references" / "build" / "out.bin").write_bytes(b"x")
    (alpha / "scripts" / "node_modules").mkdir()
    (alpha / "scripts" / "node_modules" / "pkg.js").write_text("x")
    (root / ".gitignore").write_text("build/\n")  # applies inside deferred folders too
    write_skill(root, "flat")
    (root / "flat" / "notes.txt").write_text("flat")
    comet = write_skill(root, "team/flow")
    (comet / "comet").mkdir()
    (comet / "comet" / "skill.yaml").write_text("x")
    (comet / "comet" / "parts").mkdir()
    (comet / "comet" / "parts" / "a.yaml").write_text("x")


async def test_a_lazy_walk_lists_top_levels_only_and_the_listing_matches_an_eager_one(tmp_path: Path) -> None:
    tree(tmp_path)
    async with (
        DirectoryRepository(tmp_path, nested=True) as eager,
        DirectoryRepository(tmp_path, nested=True, lazy_files=True, look_for=["comet/skill.yaml"]) as lazy,
    ):
        with IORecorder({"os.scandir"}) as listed:
            snap = await lazy.snapshot()
        folders = {str(Path(str(path)).relative_to(tmp_path)) for _, path in listed}
        assert folders == {".", "alpha", "flat", "team", "team/flow", "team/flow/comet"}
        bundles = {b.key: b for b in snap.bundles}
        assert not bundles["alpha"].listed
        assert [f.path for f in bundles["alpha"].files] == [".env.example", "notes.txt"]
        assert bundles["flat"].listed  # nothing to defer
        assert [f.path for f in bundles["team/flow"].files] == ["comet/skill.yaml"]
        assert not bundles["team/flow"].listed
        for bundle in (await eager.snapshot()).bundles:
            # The same files, and the same content token as a whole listing at load.
            assert await lazy.list_files(bundle.key) == FileListing(files=bundle.files, digest=bundle.digest)
        assert [f.path for f in (await lazy.list_files("alpha")).files] == [
            ".env.example",
            "notes.txt",
            "references/deep/more.md",
            "references/guide.md",
            "scripts/run.py",
        ]


async def test_a_listing_is_cached_until_the_tree_is_walked_again(tmp_path: Path) -> None:
    tree(tmp_path)
    async with DirectoryRepository(tmp_path, nested=True, lazy_files=True) as repo:
        await repo.snapshot()
        first = await repo.list_files("alpha")
        with IORecorder({"os.scandir"}) as listed:
            assert await repo.list_files("alpha") == first
        assert listed == []
        (tmp_path / "alpha" / "scripts" / "new.py").write_text("new")
        await repo.version()  # the freshness check: a new walk
        second = await repo.list_files("alpha")
        assert "scripts/new.py" in [f.path for f in second.files]
        assert second.digest != first.digest


async def test_listing_an_unknown_or_unsafe_bundle_is_refused(tmp_path: Path) -> None:
    tree(tmp_path)
    async with DirectoryRepository(tmp_path, nested=True, lazy_files=True) as repo:
        await repo.snapshot()
        for key in ("missing", "../alpha", ".hidden"):
            with pytest.raises(BundleNotFound):
                await repo.list_files(key)


async def test_other_markets_answer_list_files_from_their_snapshot(tmp_path: Path) -> None:
    tree(tmp_path)
    async with DirectoryRepository(tmp_path) as repo:
        bundle = (await repo.snapshot()).bundle("alpha")
        assert bundle is not None and bundle.listed
        assert await repo.list_files("alpha") == FileListing(files=bundle.files, digest=bundle.digest)

"""CompositeFilesystem: longest-prefix routing, full paths back, moves across routes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    CompositeFilesystem,
    LocalFilesystem,
    MemoryKeyValueStore,
    RemoteFilesystem,
)


def remote() -> RemoteFilesystem:
    return RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent")


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[dict[str, AbstractFilesystem]]:
    built: dict[str, AbstractFilesystem] = {
        "default": LocalFilesystem(tmp_path / "ws"),
        "data": remote(),
        "data/deep": remote(),
    }
    yield built


@pytest.fixture
async def composite(parts: dict[str, AbstractFilesystem]) -> AsyncIterator[CompositeFilesystem]:
    routes = {"data": parts["data"], "data/deep": parts["data/deep"]}
    async with CompositeFilesystem(parts["default"], routes) as fs:
        yield fs


async def test_longest_prefix_wins_and_paths_map_back(
    composite: CompositeFilesystem, parts: dict[str, AbstractFilesystem]
) -> None:
    stat = await composite.write_text("data/deep/x.txt", "deep")
    await composite.write_text("data/y.txt", "data")
    await composite.write_text("z.txt", "default")
    assert stat.path == "data/deep/x.txt"
    assert await parts["data/deep"].read_text("x.txt") == "deep"
    assert await parts["data"].read_text("y.txt") == "data"
    assert await parts["default"].read_text("z.txt") == "default"
    assert not await parts["data"].exists("deep/x.txt")


async def test_route_prefixes_show_as_folders(composite: CompositeFilesystem) -> None:
    await composite.write_text("top.txt", "x")
    assert [(s.path, s.is_dir) for s in await composite.list()] == [
        ("data", True),
        ("top.txt", False),
    ]
    assert [s.path for s in await composite.list("data")] == ["data/deep"]
    assert (await composite.stat("data")).is_dir


async def test_walk_and_read_many_span_routes(composite: CompositeFilesystem) -> None:
    for path in ("a.txt", "data/b.txt", "data/deep/c.txt"):
        await composite.write_text(path, path)
    assert [s.path for s in await composite.walk()] == ["a.txt", "data/b.txt", "data/deep/c.txt"]
    assert [s.path for s in await composite.walk("data")] == ["data/b.txt", "data/deep/c.txt"]
    found = await composite.read_many(["a.txt", "data/b.txt", "data/deep/c.txt", "none"])
    assert found == {p: p.encode() for p in ("a.txt", "data/b.txt", "data/deep/c.txt")}


async def test_move_across_routes_copies_then_deletes(
    composite: CompositeFilesystem, parts: dict[str, AbstractFilesystem]
) -> None:
    await composite.write_bytes("local/tool/run.sh", b"#!/bin/sh\n", mode=0o755)
    await composite.write_bytes("local/tool/README", b"read me")
    await composite.move("local/tool", "data/tool")
    assert await parts["data"].read_bytes("tool/README") == b"read me"
    assert (await parts["data"].stat("tool/run.sh")).mode == 0o755
    assert not await parts["default"].exists("local/tool")
    await composite.move("data/tool/README", "README")
    assert await parts["default"].read_bytes("README") == b"read me"


async def test_delete_covers_routes_below(composite: CompositeFilesystem, parts: dict[str, AbstractFilesystem]) -> None:
    await composite.write_text("data/b.txt", "x")
    await composite.write_text("data/deep/c.txt", "x")
    await composite.delete("data")
    assert await parts["data"].walk() == [] and await parts["data/deep"].walk() == []


async def test_scoped_composite_scopes_every_route(composite: CompositeFilesystem) -> None:
    alice = composite.scoped("alice")
    await alice.write_text("data/mine.txt", "alice")
    assert not await composite.scoped("bob").exists("data/mine.txt")
    assert not await composite.exists("data/mine.txt")
    assert await alice.read_text("data/mine.txt") == "alice"


async def test_closing_the_composite_closes_every_child(tmp_path: Path) -> None:
    closed: list[str] = []

    class Recording(RemoteFilesystem):
        async def _aclose(self) -> None:
            closed.append(self._prefix)
            await super()._aclose()

    children = {"a": Recording(MemoryKeyValueStore(), agent_id="a")}
    default = Recording(MemoryKeyValueStore(), agent_id="default")
    async with CompositeFilesystem(default, children):
        pass
    assert sorted(closed) == ["agents/a/shared/", "agents/default/shared/"]


async def test_generation_sums_children_when_all_have_one() -> None:
    fs = CompositeFilesystem(remote(), {"x": remote()})
    before = await fs.generation()
    await fs.write_text("x/file", "1")
    assert before is not None and (await fs.generation() or 0) > before
    assert await CompositeFilesystem(LocalFilesystem("/nonexistent")).generation() is None

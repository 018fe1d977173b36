"""The shared async-resource lifecycle, the attributes a resource is built with, and scoped views
built fresh by their constructors."""

from __future__ import annotations

from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    AsyncResource,
    CompositeFilesystem,
    Fixed,
    LocalFilesystem,
    MemoryKeyValueStore,
    RemoteFilesystem,
)


class _Counting(AsyncResource):
    def __init__(self, *, fail: bool = False) -> None:
        super().__init__()
        self.releases = 0
        self.fail = fail

    async def _aclose(self) -> None:
        self.releases += 1
        if self.fail:
            raise OSError("disk gone")


class _Built(AsyncResource):
    part: Fixed[str] = Fixed("build another one")

    def __init__(self, part: str) -> None:
        super().__init__()
        self.part = part


def test_a_fixed_attribute_is_set_once_by_the_constructor_and_refuses_the_next_assignment() -> None:
    built = _Built("a")
    assert built.part == "a" and isinstance(_Built.part, Fixed)
    with pytest.raises(AttributeError, match=r"^_Built\.part is fixed when it is built; build another one$"):
        built.part = "b"
    with pytest.raises(AttributeError, match=r"^_Built\.part is fixed"):
        del built.part
    assert built.part == "a" and _Built("c").part == "c"  # each instance its own
    with pytest.raises(AttributeError, match=r"^_Built\.part is not set yet$"):
        _ = _Built.__new__(_Built).part


async def test_aclose_releases_once_however_often_it_is_called() -> None:
    resource = _Counting()
    await resource.aclose()
    await resource.aclose()
    assert resource.releases == 1 and resource.closed


async def test_a_failed_release_still_closes_and_is_not_retried() -> None:
    resource = _Counting(fail=True)
    with pytest.raises(OSError, match="disk gone"):
        await resource.aclose()
    await resource.aclose()
    assert resource.closed and resource.releases == 1


async def test_the_context_manager_yields_the_resource_and_closes_it() -> None:
    async with _Counting() as resource:
        assert not resource.closed
    assert resource.closed and resource.releases == 1


def _views(tmp_path: Path) -> list[tuple[AbstractFilesystem, AbstractFilesystem]]:
    local = LocalFilesystem(tmp_path / "local", shell=True, env={"TEAM": "a"})
    remote = RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent")
    composite = CompositeFilesystem(LocalFilesystem(tmp_path / "c"), {"data": LocalFilesystem(tmp_path / "d")})
    return [(fs, fs.scoped("alice")) for fs in (local, remote, composite)]


async def test_closing_a_scoped_view_leaves_its_base_open(tmp_path: Path) -> None:
    for base, view in _views(tmp_path):
        await view.aclose()
        await base.write_text("still.txt", "open")
        assert view.closed and not base.closed, base
        assert await base.read_text("still.txt") == "open"
        await base.aclose()


async def test_a_scoped_view_is_a_fresh_instance_sharing_no_mutable_state(tmp_path: Path) -> None:
    for base, view in _views(tmp_path):
        assert type(view) is type(base) and view is not base
        shared = [
            name
            for name, value in vars(view).items()
            if isinstance(value, dict | list | set) and value is vars(base).get(name)
        ]
        assert shared == [], base
        await base.aclose()


async def test_a_view_of_a_closed_base_still_starts_open(tmp_path: Path) -> None:
    base = LocalFilesystem(tmp_path)
    await base.aclose()
    assert not base.scoped("alice").closed

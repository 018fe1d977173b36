"""Crafted ZIP packages from a Nacos market: two entries naming one path (exactly or once
folded), sizes the central directory does not tell truthfully, a download larger than the
package cap and a directory of too many entries. Each costs only its skill, with a diagnostic;
nothing of the hostile copy is served. The server is the local stand-in of
``tests/support/nacos.py`` (real SDK, real HTTP)."""

from __future__ import annotations

import io
import os
import struct
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from repositories import NacosRepository, Snapshot
from repositories.archives import DEFAULT_MAX_ENTRIES, ArchiveRefused, ZipPackage, path_key
from tests.support import skills
from tests.support.nacos import NacosStandIn, running_stand_in, skill_zip, zip_entries

BENIGN = "Benign instructions."
HOSTILE = "HOSTILE-INSTRUCTIONS-5c1d"


def md(name: str, text: str = BENIGN) -> bytes:
    return skills.skill_md(name, f"The {name} skill.", body=f"{text}\n").encode()


def _with_duplicates(entries: list[tuple[str, bytes]]) -> bytes:
    """A ZIP holding ``entries`` in order, repeated names included."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": the point of the package
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def nacos() -> Iterator[NacosStandIn]:
    with running_stand_in() as stand_in:
        yield stand_in


async def _snapshot(nacos: NacosStandIn, tmp_path: Path, **options: object) -> Snapshot:
    nacos.publish("review", skill_zip("review", md("review")))
    repo = NacosRepository(
        nacos.address, skills=["deploy", "review"], check_interval=0, log_dir=tmp_path / "logs", **options
    )  # type: ignore[arg-type]
    async with repo:
        return await repo.snapshot()


def _refused(snap: Snapshot, reason: str) -> None:
    assert [b.folder for b in snap.bundles] == ["review"], [b.folder for b in snap.bundles]
    assert any("deploy" in p and "package refused" in p and reason in p for p in snap.problems), snap.problems
    assert snap.error is None


async def test_a_second_entry_of_one_name_never_slips_past_the_size_check(nacos: NacosStandIn, tmp_path: Path) -> None:
    package = _with_duplicates(
        [("deploy/SKILL.md", md("deploy")), ("deploy/data.bin", b"small"), ("deploy/data.bin", b"\0" * 64_000)]
    )
    nacos.publish("deploy", package)
    _refused(await _snapshot(nacos, tmp_path, max_file_size=1024), "name the same path")


async def test_a_second_skill_md_is_never_the_one_served(nacos: NacosStandIn, tmp_path: Path) -> None:
    package = _with_duplicates([("deploy/SKILL.md", md("deploy")), ("deploy/SKILL.md", md("deploy", HOSTILE))])
    nacos.publish("deploy", package)
    snap = await _snapshot(nacos, tmp_path)
    _refused(snap, "name the same path")
    assert not any(HOSTILE.encode() in b.skill_md for b in snap.bundles)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("deploy/a/b.txt", "deploy/a//b.txt"),
        ("deploy/b.txt", "deploy/./b.txt"),
        ("deploy/b.txt", "deploy/B.txt"),
        ("deploy/SKILL.md", "deploy/skill.MD"),
        ("deploy/caf\u00e9.txt", "deploy/cafe\u0301.txt"),
        ("deploy/a/b.txt", "deploy\\a\\b.txt"),
    ],
    ids=["double-slash", "dot-segment", "case", "skill-md-case", "unicode-nfd", "backslash"],
)
async def test_entries_that_fold_to_one_path_refuse_the_package(
    nacos: NacosStandIn, tmp_path: Path, first: str, second: str
) -> None:
    package = zip_entries({"deploy/SKILL.md": md("deploy"), first: b"one", second: b"two"})
    nacos.publish("deploy", package)
    _refused(await _snapshot(nacos, tmp_path), "name the same path")


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "streamed"])
async def test_a_download_over_the_package_cap_is_cut_off(
    nacos: NacosStandIn, tmp_path: Path, declare_length: bool
) -> None:
    nacos.declare_length = declare_length
    package = zip_entries({"deploy/SKILL.md": md("deploy"), "deploy/noise.bin": os.urandom(256 * 1024)})
    nacos.publish("deploy", package)
    snap = await _snapshot(nacos, tmp_path, max_file_size=16 * 1024, max_package_size=64 * 1024)
    _refused(snap, "the download is larger than 65536 bytes")


async def test_a_package_of_too_many_entries_is_refused_before_its_directory_is_read(
    nacos: NacosStandIn, tmp_path: Path
) -> None:
    entries = {"deploy/SKILL.md": md("deploy"), **{f"deploy/f/{i}": b"" for i in range(DEFAULT_MAX_ENTRIES)}}
    nacos.publish("deploy", zip_entries(entries))
    _refused(await _snapshot(nacos, tmp_path), f"more than {DEFAULT_MAX_ENTRIES} entries")


def _declaring(size: int, data: bytes) -> bytes:
    """A one-file ZIP whose headers declare ``size`` bytes for ``data`` (its CRC is honest)."""
    package = bytearray(zip_entries({"deploy/x.bin": data}))
    info = zipfile.ZipFile(io.BytesIO(bytes(package))).infolist()[0]
    struct.pack_into("<L", package, info.header_offset + 22, size)  # local header: uncompressed size
    directory = package.rfind(b"PK\x01\x02")
    struct.pack_into("<L", package, directory + 24, size)  # central directory: uncompressed size
    return bytes(package)


@pytest.mark.parametrize("declared", [10, 100_000], ids=["declares-less", "declares-more"])
def test_an_entry_is_never_read_past_or_short_of_its_declared_size(declared: int) -> None:
    with ZipPackage(_declaring(declared, b"\0" * 50_000), max_file_size=200_000, max_total_size=200_000) as package:
        [entry] = package.entries
        with pytest.raises(ArchiveRefused):
            package.read(entry)


@pytest.mark.parametrize(
    ("path", "key"),
    [("a//b", "a/b"), ("./a/./b/", "a/b"), ("A\\B", "a/b"), ("cafe\u0301", "caf\u00e9"), ("Stra\u00dfe", "strasse")],
)
def test_path_keys_fold_what_readers_and_filesystems_fold(path: str, key: str) -> None:
    assert path_key(path) == key

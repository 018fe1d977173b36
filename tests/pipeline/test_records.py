"""Comparing an installed environment with its distributions' RECORD files."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from harness.pipeline.records import changes
from tests.support.io import IORecorder


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _installed(folder: Path, files: dict[str, bytes]) -> Path:
    """``folder`` holding ``files`` and a RECORD of ``pkg-1.0`` listing them."""
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files.items())
    for path, data in {**files, "pkg-1.0.dist-info/RECORD": (record + "pkg-1.0.dist-info/RECORD,,\n").encode()}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return folder


def test_an_untouched_environment_has_no_changes(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "env", {"pkg/__init__.py": b"VALUE = 1\n", "bin/pkg": b"#!/bin/sh\n"})
    assert changes(folder) is None


def test_added_changed_and_missing_files_are_named(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "env", {"pkg/__init__.py": b"VALUE = 1\n", "pkg/util.py": b"", "bin/pkg": b""})
    (folder / "sitecustomize.py").write_text("print('hi')\n")
    (folder / "pkg" / "__init__.py").write_text("VALUE = 2\n")
    (folder / "pkg" / "util.py").unlink()
    assert changes(folder) == "not installed by it: sitecustomize.py; changed: pkg/__init__.py; missing: pkg/util.py"


def test_links_and_pipes_are_changes_never_followed_or_waited_on(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_bytes(b"VALUE = 1\n")
    folder = _installed(tmp_path / "env", {"pkg/__init__.py": b"VALUE = 1\n", "pkg/pipe.py": b""})
    (folder / "pkg" / "__init__.py").unlink()
    (folder / "pkg" / "__init__.py").symlink_to(outside)  # the same bytes, through a link
    (folder / "pkg" / "pipe.py").unlink()
    os.mkfifo(folder / "pkg" / "pipe.py")
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    assert changes(folder) == "not installed by it: linked; changed: pkg/__init__.py, pkg/pipe.py"


def test_a_record_naming_paths_outside_the_folder_opens_nothing_there(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "env", {"pkg/__init__.py": b""})
    record = folder / "pkg-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + f"../outside.py,{_digest(b'')},0\n{tmp_path}/outside.py,,\n")
    (tmp_path / "outside.py").write_bytes(b"")
    with IORecorder({"open"}) as opened:
        assert changes(folder) == f"missing: ../outside.py, {tmp_path}/outside.py"
    paths = [str(path) for _, path in opened if isinstance(path, (str, Path))]
    assert paths and all(path.startswith(f"{folder}/") for path in paths), paths


def test_a_long_list_is_cut_short(tmp_path: Path) -> None:
    folder = _installed(tmp_path / "env", {})
    for i in range(25):
        (folder / f"planted{i:02}.pth").write_text("")
    found = changes(folder) or ""
    assert found.startswith("not installed by it: planted00.pth, ") and found.endswith(", ... (25 in all)")

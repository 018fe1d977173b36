"""Property-based checks of every place a path from outside is cleaned: no generated path ever
resolves outside its root, through normalisation, the load tool, staging, or a real folder
with a symlink leading out."""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import unicodedata
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from filesystems import (
    InvalidUserId,
    LocalFilesystem,
    PathEscapeError,
    normalize_path,
    relative_path_problem,
    validate_user_id,
)
from harness.context import RuntimeContext
from harness.engine.store import check_run_id
from harness.pipeline import SkillPipeline
from harness.pipeline.plan import TurnPlan
from harness.skills.rules import unsafe_name_reason, unsafe_segment_reason
from harness.tools.skills import load_skill_file
from tests.support.reliability import skill_md, tree_state, write_skill

SEGMENTS = [
    "..",
    ".",
    "",
    "a",
    "b",
    "link",
    "secret",
    "SKILL.md",
    ".env",
    "~",
    "C:",
    "\\",
    "..\\..",
    "\0",
    " ",
    "é",
    "a..b",
    "...",
]
paths = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), max_size=8).map("/".join),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.text(alphabet=st.sampled_from("./\\\0a~:é "), max_size=24),
)
ROOT = "/srv/root"


def _inside(root: str, relative: str) -> bool:
    joined = posixpath.normpath(posixpath.join(root, relative))
    return joined == root or joined.startswith(root + "/")


@given(paths)
def test_normalize_path_never_leaves_the_root(path: str) -> None:
    try:
        clean = normalize_path(path)
    except PathEscapeError:
        return
    assert _inside(ROOT, clean)
    assert ".." not in clean.split("/") and not clean.startswith("/") and "\0" not in clean
    assert normalize_path(clean) == clean


@given(paths)
def test_the_skill_file_path_check_accepts_only_paths_inside_the_folder(path: str) -> None:
    if relative_path_problem(path) is None:
        assert _inside(ROOT, path) and posixpath.normpath(posixpath.join(ROOT, path)) != ROOT
        assert not any(part in {".git", ".hg", ".svn"} for part in path.split("/"))


@pytest.fixture(scope="module")
def skill_plan(tmp_path_factory: pytest.TempPathFactory) -> TurnPlan:
    """A turn whose skill ``good`` has two files, and a link from its folder to a secret outside."""
    base = tmp_path_factory.mktemp("props")
    ws = base / "ws"
    write_skill(ws / "skills", "good", files={"a/b": b"ab\n", "SKILL.md.bak": b"bak\n"})
    (base / "secret").write_text("secret")
    (ws / "skills" / "good" / "link").symlink_to(base)

    async def prepare() -> TurnPlan:
        async with LocalFilesystem(ws) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
            return await pipeline.prepare(RuntimeContext(user_id="alice"))

    return anyio.run(prepare)


@settings(max_examples=150)
@given(path=paths)
def test_load_tool_serves_only_the_skills_own_files(skill_plan: TurnPlan, path: str) -> None:
    async def load() -> str | None:
        try:
            return await load_skill_file(skill_plan, "good", path)
        except (PermissionError, FileNotFoundError):
            return None

    text = anyio.run(load)
    if text is not None:
        assert text in {skill_md("good").decode(), "ab\n", "bak\n"}, (path, text)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150, deadline=None)
@given(path=paths, data=st.binary(max_size=8))
def test_local_filesystem_writes_and_reads_never_leave_the_root(tmp_path: Path, path: str, data: bytes) -> None:
    root = tmp_path / "root"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret").write_text("secret")
    (root / "link").symlink_to(outside, target_is_directory=True)
    before = tree_state(tmp_path, skip=("root",))

    async def attempt() -> bytes | None:
        fs = LocalFilesystem(root)
        try:
            await fs.write_bytes(path, data)
            return await fs.read_bytes(path)
        except (PermissionError, OSError, ValueError):
            return None

    read = anyio.run(attempt)
    if read is not None:
        assert read == data
        landed = os.path.realpath(root / normalize_path(path))
        assert landed.startswith(os.path.realpath(root) + os.sep)
    assert tree_state(tmp_path, skip=("root",)) == before


# -- identifiers ---------------------------------------------------------------------------

IDENTIFIER_CHARS = st.sampled_from(
    list("ab-_.Z09 ")
    + [
        "\t",
        "\n",
        "\r",
        "\x00",
        "\x1b",
        "\x7f",
        "\x85",
        "\x9b",
        "\xa0",
        "\u200b",
        "\u202e",
        "\u2028",
        "\ufeff",
        "é",
        "e\u0301",
        "ｄ",
    ]
)
identifiers = st.lists(IDENTIFIER_CHARS, max_size=12).map("".join)


def _foldable(text: str) -> bool:
    """What a store or filesystem could fold into another name, or an invisible/control char."""
    return (
        text != text.strip()
        or not unicodedata.is_normalized("NFC", text)
        or any(unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"} for c in text)
    )


@settings(max_examples=500, deadline=None)
@given(identifiers)
def test_an_accepted_user_id_has_no_control_characters_and_cannot_be_folded(user_id: str) -> None:
    try:
        validate_user_id(user_id)
    except InvalidUserId:
        return
    assert not _foldable(user_id)


@settings(max_examples=500, deadline=None)
@given(identifiers)
def test_an_accepted_skill_name_is_one_exact_segment_without_whitespace(name: str) -> None:
    if unsafe_segment_reason(name) is None:
        assert name and name not in {".", ".."} and not _foldable(name)
        assert not any(c in "/\\" for c in name)
    if unsafe_name_reason(name) is None:
        assert unsafe_segment_reason(name) is None
        assert not any(c.isspace() for c in name)


@settings(max_examples=500, deadline=None)
@given(st.one_of(identifiers, st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,5}\n?", fullmatch=True)))
def test_an_accepted_run_id_is_a_full_match_of_the_documented_characters(run_id: str) -> None:
    try:
        check_run_id(run_id)
    except ValueError:
        assert not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", run_id)
        return
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", run_id)


@pytest.mark.parametrize("run_id", ["x\n", "run-1\n", "a\nb"])
def test_a_run_id_with_a_trailing_newline_is_refused(run_id: str) -> None:
    with pytest.raises(ValueError, match="run id"):
        check_run_id(run_id)

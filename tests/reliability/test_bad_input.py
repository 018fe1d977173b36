"""Hostile skills and requests: each yields a clear diagnostic or error, the turn goes on with
the good skills, and nothing outside the intended folders is read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filesystems import InvalidUserId, LocalFilesystem, MemoryKeyValueStore, RemoteFilesystem
from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.errors import SkillNotFound
from harness.events import ToolReturned, TurnPrepared
from harness.models import Message, ScriptedModel, ToolCall
from harness.pipeline import SkillPipeline
from harness.tools.skills import load_skill_file
from repositories import FileContents, InvalidRepositoryConfig, MemoryRepository, SkillBundleContents, check_source
from tests.support.catalog import read_catalog
from tests.support.reliability import (
    CACHE,
    HostileRepository,
    HostileSkill,
    cache_problems,
    skill_md,
    tree_state,
    write_skill,
)
from tests.support.skills import served_body

ALICE = RuntimeContext(user_id="alice")

ALIAS_BOMB = (
    b"---\nname: bomb\na: &a [x, x, x, x, x, x, x, x, x]\n"
    + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n".encode()
        for i in range(9)
    )
    + b"description: boom\n---\nbody\n"
)

# folder -> (SKILL.md bytes, the diagnostic code that must name it)
BROKEN: dict[str, tuple[bytes, str]] = {
    "broken-yaml": (b"---\nname: broken-yaml\ndescription: [unclosed\n---\nbody\n", "invalid-yaml"),
    "huge-frontmatter": (skill_md("huge-frontmatter", "x" * 100_000), "frontmatter-too-large"),
    "alias-bomb": (ALIAS_BOMB, "yaml-too-many-aliases"),
    "deep-nesting": (b"---\nname: deep-nesting\ndescription: " + b"[" * 200 + b"]" * 200 + b"\n---\n", "yaml-too-deep"),
    "binary": (bytes(range(256)) * 8, "invalid-utf8"),
    "nul-bytes": (b"\0" * 512, "no-frontmatter"),
    "invalid-utf8": (b"---\nname: invalid-utf8\ndescription: caf\xe9 \xff\xfe\n---\nbody\n", "invalid-utf8"),
    "no-description": (b"---\nname: no-description\n---\nbody\n", "missing-description"),
    "not-a-mapping": (b"---\n- just\n- a list\n---\nbody\n", "frontmatter-not-mapping"),
    "unclosed": (b"---\nname: unclosed\ndescription: never closed\n", "unclosed-frontmatter"),
    "name-slash": (skill_md("a/b"), "unsafe-name"),
    "name-dotdot": (skill_md('".."'), "unsafe-name"),
    "name-nul": (skill_md('"evil\\0name"'), "unsafe-name"),
    "name-newline": (skill_md('"two\\nlines"'), "unsafe-name"),
    "empty-description-trailing-space": (
        b"---\nname: empty-description-trailing-space\ndescription: \n---\nbody\n",
        "missing-description",
    ),
    "name-c1-control": (skill_md('"a\\x85b"'), "unsafe-name"),
    "name-csi": (skill_md('"a\\x9b31mb"'), "unsafe-name"),
    "folder-trailing-space ": (
        b"---\ndescription: the name comes from a folder ending in a space\n---\nbody\n",
        "unsafe-name",
    ),
    "sp ace": (b"---\ndescription: the name comes from a folder with a space\n---\nbody\n", "unsafe-name"),
}


def _python_tag(marker: Path) -> bytes:
    return (
        "---\nname: python-tag\n"
        f'description: !!python/object/apply:os.system ["touch {marker}"]\n'
        f'extra: !!python/object/new:os.system ["touch {marker}"]\n---\nbody\n'
    ).encode()


@pytest.fixture
def hostile_workspace(tmp_path: Path) -> Path:
    """A workspace whose shared and per-user skill folders hold the broken corpus next to good skills."""
    ws = tmp_path / "ws"
    for root in (ws / "skills", ws / "alice" / "skills"):
        write_skill(root, "good" if root.parent == ws else "alice-good", files={"scripts/run.sh": b"echo ok\n"})
        for folder, (data, _) in BROKEN.items():
            write_skill(root, folder, data)
        write_skill(root, "python-tag", _python_tag(tmp_path / "pwned"))
    return ws


async def test_broken_skills_are_skipped_with_a_diagnostic_and_good_ones_load(
    hostile_workspace: Path, tmp_path: Path
) -> None:
    ws = hostile_workspace
    before = tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness"))
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
    assert {s.skill.name for s in plan.skills.values()} == {"good", "alice-good"}
    for folder, (_, code) in BROKEN.items():
        for root in ("skills", "alice/skills"):
            codes = {d.code for d in plan.diagnostics if d.location.startswith(str(ws / root / folder) + "/")}
            assert code in codes, (root, folder, codes)
    python_codes = {d.code for d in plan.diagnostics if "/python-tag/" in d.location}
    assert python_codes == {"invalid-yaml"}
    assert not (tmp_path / "pwned").exists()
    assert all(d.severity == "error" for d in plan.diagnostics if d.code in {code for _, code in BROKEN.values()})
    assert sorted(read_catalog(plan.catalog).described) == ["alice-good", "good"]
    assert tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness")) == before


async def test_device_names_are_ordinary_names_that_stay_inside_their_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    market = MemoryRepository(
        [_contents("nul"), _contents("CON"), _contents("aux")],
        name="devices",
    )
    for folder in ("lpt1", "PRN"):
        write_skill(ws / "skills", folder, skill_md(folder))
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    assert {"lpt1_workspace", "PRN_workspace", "nul_devices", "CON_devices", "aux_devices"} <= set(plan.skills)
    assert "name-not-lowercase" in {d.code for d in plan.diagnostics if "CON" in d.location}
    assert "name-not-lowercase" in {d.code for d in plan.diagnostics if "PRN" in d.location}
    for folder in ("nul", "CON", "aux"):
        staged = ws / CACHE / "devices" / folder / "scripts" / "run.sh"
        assert staged.read_bytes() == f"echo {folder}\n".encode()
    assert Path("/dev/null").is_char_device()
    assert cache_problems(ws) == []


def _contents(name: str) -> SkillBundleContents:
    return SkillBundleContents(
        folder=name,
        skill_md=skill_md(name),
        files=(FileContents(path="scripts/run.sh", data=f"echo {name}\n".encode()),),
    )


async def test_symlink_loops_and_escapes_in_skill_folders_are_never_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_bytes(skill_md("stolen", "the secret outside the workspace"))
    skills = ws / "skills"
    write_skill(skills, "good", files={"references/guide.md": b"guide\n"})
    good = skills / "good"
    (good / "references" / "passwd").symlink_to("/etc/passwd")
    (good / "references" / "secret").symlink_to(secret)
    (good / "references" / "loop").symlink_to(good / "references" / "loop")
    (good / "references" / "up").symlink_to(good)  # a directory loop
    escape = skills / "escape"
    escape.mkdir()
    (escape / "SKILL.md").symlink_to(secret)
    (skills / "linked-out").symlink_to(secret.parent, target_is_directory=True)
    (skills / "self-loop").symlink_to(skills / "self-loop")
    before = tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness"))
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        resolved = plan.skills["good_workspace"]
        assert set(await resolved.list_files()) == {"references/guide.md"}
        assert set(plan.skills) == {"good_workspace"}
        for path in ("references/passwd", "references/secret", "references/loop", "references/up/SKILL.md"):
            with pytest.raises(FileNotFoundError, match="available paths: SKILL.md, references/guide.md"):
                await load_skill_file(plan, "good", path)
        with pytest.raises(PermissionError):
            await plan.filesystem.read_bytes("../skills/escape/SKILL.md")
        unscoped = LocalFilesystem(ws)
        with pytest.raises(PermissionError, match="outside"):
            await unscoped.read_bytes("skills/escape/SKILL.md")
    assert "stolen" not in plan.catalog
    assert tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness")) == before


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/etc/passwd", PermissionError),
        ("../../x", PermissionError),
        ("references/../../../etc/passwd", PermissionError),
        ("..", PermissionError),
        ("~/.ssh/id_rsa", PermissionError),
        ("C:\\Windows\\win.ini", PermissionError),
        ("\\\\server\\share", PermissionError),
        ("SKILL.md\0.txt", PermissionError),
        ("references/missing.md", FileNotFoundError),
        (".git/config", FileNotFoundError),
    ],
)
async def test_load_tool_refuses_paths_outside_the_skill_and_lists_real_ones(
    tmp_path: Path, path: str, error: type[Exception]
) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "good", files={"references/guide.md": b"guide\n", ".env": b"TOKEN=1\n"})
    (tmp_path / "x").write_text("outside")
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        with pytest.raises(error) as caught:
            await load_skill_file(plan, "good", path)
    assert "available paths: SKILL.md, .env, references/guide.md" in str(caught.value)
    assert "TOKEN" not in str(caught.value) and "outside" not in str(caught.value).replace("outside the", "")


@pytest.mark.parametrize("path", ["./SKILL.md", "SKILL.md", ".//SKILL.md", "", ".", "references/./guide.md"])
async def test_load_tool_normalises_harmless_relative_paths(tmp_path: Path, path: str) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "good", files={"references/guide.md": b"guide\n"})
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        plan = await pipeline.prepare(ALICE)
        text = await load_skill_file(plan, "good", path)
    expected = "guide\n" if "guide" in path else skill_md("good").decode()
    assert text == expected


async def test_load_tool_never_serves_an_unknown_or_other_users_skill(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "bob" / "skills", "bob-secret")
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        bob = await pipeline.prepare(RuntimeContext(user_id="bob"))
        alice = await pipeline.prepare(ALICE)
        assert "bob-secret_workspace-namespaced" in bob.skills
        for skill_id in ("bob-secret", "bob-secret_workspace-namespaced", "../bob/skills/bob-secret", "/etc/passwd"):
            with pytest.raises(SkillNotFound, match="not available in this turn"):
                await load_skill_file(alice, skill_id)


HOSTILE_FILES = {
    "ok.txt": b"fine\n",
    "../../../outside.txt": b"escape\n",
    "scripts/../../../../outside2.txt": b"escape\n",
    "/tmp/absolute.txt": b"absolute\n",
    ".env": b"TOKEN=1\n",
    "scripts/.hidden/x": b"hidden\n",
    "a\0b": b"nul\n",
    "": b"empty\n",
    "scripts//double.sh": b"echo double\n",
}


async def test_market_file_paths_escaping_the_cache_are_refused_per_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    market = HostileRepository(
        [HostileSkill(folder="tricky", skill_md=skill_md("tricky"), files=HOSTILE_FILES)],
        extra={"../../injected.txt": b"injected\n", "/tmp/injected-abs": b"x"},
    )
    good = MemoryRepository([_contents("fine")], name="good")
    before = tree_state(tmp_path, skip=("ws/.skills-cache",))
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market, good], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
        assert await load_skill_file(plan, "tricky", "ok.txt") == "fine\n"
        with pytest.raises(PermissionError):
            await load_skill_file(plan, "tricky", "../../../outside.txt")
    assert {"tricky_hostile", "fine_good"} <= set(plan.skills)
    assert (ws / CACHE / "hostile" / "tricky" / "ok.txt").read_bytes() == b"fine\n"
    assert (ws / CACHE / "good" / "fine" / "scripts" / "run.sh").exists()
    refused = [d for d in plan.diagnostics if d.code in {"unsafe-market-path", "market-problem"}]
    assert refused, plan.diagnostics
    for name in ("outside.txt", "outside2.txt", "injected.txt"):
        assert not list(tmp_path.rglob(name)), name
    assert not Path("/tmp/absolute.txt").exists() and not Path("/tmp/injected-abs").exists()
    assert tree_state(tmp_path, skip=("ws/.skills-cache",)) == before
    staged = {
        p.relative_to(ws / CACHE / "hostile" / "tricky").as_posix()
        for p in (ws / CACHE / "hostile" / "tricky").rglob("*")
        if p.is_file()
    }
    assert {"SKILL.md", "ok.txt", ".env", "scripts/.hidden/x"} <= staged  # dot-files inside a skill are its files
    assert staged <= {"SKILL.md", "ok.txt", "scripts/double.sh", ".env", "scripts/.hidden/x"}
    assert cache_problems(ws) == []


@pytest.mark.parametrize("folder", ["..", ".", "a/b", "../escape", "x\0y", "", ".hidden", "a\\b"])
async def test_market_folder_names_that_are_not_one_safe_segment_are_skipped(tmp_path: Path, folder: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    market = HostileRepository(
        [
            HostileSkill(folder=folder, skill_md=skill_md("sneaky"), files={"run.sh": b"echo hi\n"}),
            HostileSkill(folder="fine", skill_md=skill_md("fine"), files={}),
        ]
    )
    before = tree_state(tmp_path, skip=("ws/.skills-cache",))
    async with (
        LocalFilesystem(ws, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    assert set(plan.skills) == {"fine_hostile"}
    assert any(d.code == "unsafe-market-folder" and d.severity == "error" for d in plan.diagnostics), plan.diagnostics
    assert tree_state(tmp_path, skip=("ws/.skills-cache",)) == before
    assert sorted(p.name for p in (ws / CACHE / "hostile").iterdir()) == ["fine"]
    assert cache_problems(ws) == []


@pytest.mark.parametrize("source", ["..", ".", ".hidden", "../x", "a/b", "", "UPPER"])
def test_market_source_slugs_that_could_leave_the_cache_are_refused(source: str) -> None:
    with pytest.raises(InvalidRepositoryConfig, match="source slug"):
        check_source(source)
    with pytest.raises(InvalidRepositoryConfig, match="source slug"):
        HostileRepository([], source=source)


@pytest.mark.parametrize(
    "user_id",
    [
        "../bob",
        "a/b",
        "skills",
        "Skills",
        ".hidden",
        "_drafts",
        "",
        "..",
        ".",
        "a\0b",
        "a\\b",
        "AGENTS.md",
        "knowledge",
        "x" * 256,
        "a\x85b",
        "a\x9b31mb",
        "alice ",
        " alice",
        "alice\u200b",
        "a\u2028b",
        "e\u0301",
    ],
)
async def test_unsafe_user_ids_are_refused_before_anything_is_touched(tmp_path: Path, user_id: str) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "bob" / "skills", "bob-secret")
    before = tree_state(tmp_path)
    with pytest.raises(InvalidUserId):
        RuntimeContext(user_id=user_id)
    async with LocalFilesystem(ws, shell=True) as fs:
        with pytest.raises(InvalidUserId):
            fs.scoped(user_id)
    async with RemoteFilesystem(MemoryKeyValueStore(), agent_id="agent") as remote:
        with pytest.raises(InvalidUserId):
            remote.scoped(user_id)
    assert tree_state(tmp_path) == before


async def test_a_user_named_like_a_device_or_with_dots_inside_is_an_ordinary_user(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    async with LocalFilesystem(ws, shell=True) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        for user_id in ("nul", "CON", "a..b", "bob.smith"):
            plan = await pipeline.prepare(RuntimeContext(user_id=user_id))
            await plan.filesystem.write_text("note.txt", user_id)
            assert (ws / user_id / "note.txt").read_text() == user_id
    assert sorted(os.listdir(ws)) == sorted([".skills-cache", "nul", "CON", "a..b", "bob.smith", *_harness_dirs(ws)])


def _harness_dirs(ws: Path) -> list[str]:
    return [".harness"] if (ws / ".harness").exists() else []


async def test_a_whole_turn_over_the_hostile_corpus_answers_and_reads_nothing_outside(
    hostile_workspace: Path, tmp_path: Path
) -> None:
    ws = hostile_workspace
    write_skill(ws / "bob" / "skills", "bob-secret")
    (ws / "bob" / "note.txt").write_text("bob's note")
    market = HostileRepository(
        [
            HostileSkill(folder="tricky", skill_md=skill_md("tricky"), files=HOSTILE_FILES),
            HostileSkill(folder="../escape", skill_md=skill_md("escape"), files={}),
        ]
    )
    probes = [
        ("load_skill_through_path", {"skillId": "good", "path": "/etc/passwd"}),
        ("load_skill_through_path", {"skillId": "good", "path": "../../x"}),
        ("load_skill_through_path", {"skillId": "good", "path": "./SKILL.md"}),
        ("load_skill_through_path", {"skillId": "tricky", "path": "../../../outside.txt"}),
        ("load_skill_through_path", {"skillId": "bob-secret", "path": "SKILL.md"}),
        ("read_file", {"path": "../bob/note.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("write_file", {"path": "../bob/note.txt", "content": "overwritten"}),
        ("list_files", {"path": ".."}),
    ]
    script = [
        Message.assistant(
            "", [ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(probes)]
        ),
        "done",
    ]
    before = tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness"))
    async with Harness(
        model=ScriptedModel(script), workspace=ws, repositories=[market], pipeline=PipelineOptions(watch=False)
    ) as agent:
        result = await agent.run("go", context=ALICE)
    assert result.reply == "done"
    returned = [e for e in result.events if isinstance(e, ToolReturned)]
    assert [e.error for e in returned] == [True, True, False, True, True, True, True, True, True]
    assert served_body(returned[2].content) == skill_md("good").decode()
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    assert not any(passwd in e.content or "bob's note" in e.content for e in returned)
    prepared = next(e for e in result.events if isinstance(e, TurnPrepared))
    assert prepared.diagnostics >= 2 * len(BROKEN)
    assert (ws / "bob" / "note.txt").read_text() == "bob's note"
    assert tree_state(tmp_path, skip=("ws/.skills-cache", "ws/.harness")) == before


async def test_an_empty_description_with_a_trailing_space_in_a_market_fails_no_turn(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "good")
    market = MemoryRepository(
        [
            SkillBundleContents(folder="deploy", skill_md=b"---\nname: deploy\ndescription: \n---\nbody\n"),
            _contents("helper"),
        ],
        name="acme",
    )
    async with Harness(
        model=ScriptedModel(["done", "done"]),
        workspace=ws,
        repositories=[market],
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        for user in ("alice", "bob"):
            result = await agent.run("go", context=RuntimeContext(user_id=user))
            assert result.reply == "done"
        plan = await agent.prepare(ALICE)
    assert {"good_workspace", "helper_acme"} <= set(plan.skills)
    (problem,) = [d for d in plan.diagnostics if d.code == "missing-description"]
    assert "deploy" in problem.location and problem.severity == "error"

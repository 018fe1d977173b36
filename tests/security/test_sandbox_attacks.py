"""A tenant with a sandbox shell attacks: links out of the merged skills view, machine-owned
state, the shared learning state, and the resource limits. Each attempt must be refused or
bounded and leave no trace outside the tenant's own area."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from filesystems import PathEscapeError, SandboxFilesystem, SandboxLimits
from harness import RuntimeContext, SkillPipeline
from harness.tools.skills import SHELL_TOOL, skill_tools
from tests.support.filesystems import shared_dir

pytestmark = pytest.mark.usefixtures("bwrap")

SECRET = "bob's secret"


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below ``root``: file bytes, link targets, ``"dir"`` for folders."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = f"link:{os.readlink(path)}"
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


class Scene:
    """A workspace with shared skills and learning state, tenants alice (attacker) and bob."""

    def __init__(self, root: Path, fs: SandboxFilesystem) -> None:
        self.root = root
        self.fs = fs
        self.alice = fs.scoped("alice")
        self.bob_area = root / "bob"
        self.shared_skills = root / "skills"
        self._before: dict[str, dict[str, bytes | str]] = {}

    async def populate(self) -> None:
        await self.fs.write_text("skills/shared/SKILL.md", "shared skill")
        await self.fs.write_text("skills/.reviews/r-1.json", '{"user": "bob", "draft": "x"}')
        await self.fs.write_text("skills/.audit/2026-11-30.jsonl", '{"user": "bob"}\n')
        await self.fs.write_text("skills/.usage.json", '{"bob": 1}')
        await self.fs.write_text("skills/.archive/old-1/SKILL.md", "archived")
        bob = self.fs.scoped("bob")
        await bob.write_text("diary.txt", SECRET)
        await bob.write_text("skills/bobs/SKILL.md", "bob's skill")
        await self.alice.write_text("skills/own/SKILL.md", "alice's skill")
        await self.alice.write_text("skills/.usage.json", '{"own": 1}')
        await self.alice.write_text(".harness/runs/run-1.json", '{"step": 1}')
        await self.alice.write_text("notes.txt", "mine")

    def remember(self) -> None:
        """Snapshot everything outside alice's area that an attack must not change."""
        self._before = {"bob": _tree(self.bob_area), "skills": _tree(self.shared_skills)}

    def assert_untouched(self) -> None:
        assert _tree(self.bob_area) == self._before["bob"]
        assert _tree(self.shared_skills) == self._before["skills"]


@pytest.fixture
def workspace_dir() -> Iterator[Path]:
    """A workspace the unprivileged sandbox uid can traverse (pytest's tmp root is 0700)."""
    with shared_dir("sandbox-attacks-") as path:
        yield path


async def _scene(root: Path, **options: object) -> Scene:
    fs = SandboxFilesystem(root, output_limit=16384, **options)  # type: ignore[arg-type]
    scene = Scene(root, fs)
    await scene.populate()
    scene.remember()
    return scene


@pytest.fixture
async def scene(workspace_dir: Path) -> AsyncIterator[Scene]:
    built = await _scene(workspace_dir)
    async with built.fs:
        yield built


def _plant_link(scene: Scene, relative: str, target: str) -> Path:
    """A link in alice's area made behind the sandbox's back (e.g. by a promoted draft)."""
    link = scene.root / "alice" / relative
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return link


# -- links out of the merged skills view ----------------------------------------------------


async def test_the_shell_cannot_plant_a_link_in_the_skills_folder(scene: Scene) -> None:
    result = await scene.alice.run(f"ln -s {scene.bob_area} /workspace/skills/steal")
    assert not result.ok and "Read-only" in result.stderr
    assert not os.path.lexists(scene.root / "alice" / "skills" / "steal")


async def test_an_absolute_link_to_another_tenants_area_is_not_bound(scene: Scene) -> None:
    _plant_link(scene, "skills/steal", str(scene.bob_area))
    result = await scene.alice.run(
        "cat /workspace/skills/steal/diary.txt; echo x > /workspace/skills/steal/planted; ls -A /workspace/skills"
    )
    assert SECRET not in result.stdout
    assert result.stdout.split() == ["own", "shared"]
    scene.assert_untouched()


async def test_a_relative_link_to_another_tenants_area_is_not_bound(scene: Scene) -> None:
    _plant_link(scene, "skills/steal", "../../bob")
    result = await scene.alice.run("cat /workspace/skills/steal/diary.txt; touch /workspace/skills/steal/planted")
    assert not result.ok and SECRET not in result.stdout
    scene.assert_untouched()


async def test_links_to_host_tmp_and_etc_are_not_bound(scene: Scene) -> None:
    marker = f"sandbox-attack-{uuid.uuid4().hex}"
    _plant_link(scene, "skills/tmp", "/tmp")
    _plant_link(scene, "skills/etc", "/etc")
    result = await scene.alice.run(
        f"echo x > /workspace/skills/tmp/{marker}; cat /workspace/skills/etc/shadow; ls /workspace/skills"
    )
    assert "tmp/" + marker + ": Directory nonexistent" in result.stderr
    assert "etc/shadow: No such file or directory" in result.stderr
    assert result.stdout.split() == ["own", "shared"]
    assert not os.path.exists(f"/tmp/{marker}")


async def test_a_link_swapped_in_between_two_commands_is_not_bound(scene: Scene) -> None:
    await scene.alice.write_text("skills/swap/SKILL.md", "real folder")
    assert (await scene.alice.run("cat /workspace/skills/swap/SKILL.md")).stdout == "real folder"
    shutil.rmtree(scene.root / "alice" / "skills" / "swap")
    _plant_link(scene, "skills/swap", str(scene.bob_area))
    result = await scene.alice.run("cat /workspace/skills/swap/diary.txt")
    assert not result.ok and SECRET not in result.stdout
    scene.assert_untouched()


async def test_a_link_inside_a_nested_skill_folder_leads_nowhere(scene: Scene) -> None:
    _plant_link(scene, "skills/own/data/absolute", str(scene.bob_area))
    _plant_link(scene, "skills/own/data/relative", "../../../../bob")
    result = await scene.alice.run(
        "cat /workspace/skills/own/data/absolute/diary.txt /workspace/skills/own/data/relative/diary.txt"
    )
    assert not result.ok and SECRET not in result.stdout
    scene.assert_untouched()


async def test_a_link_replacing_the_users_skills_folder_refuses_the_command(
    scene: Scene,
) -> None:
    shutil.rmtree(scene.root / "alice" / "skills")
    _plant_link(scene, "skills", "../bob/skills")
    with pytest.raises(PathEscapeError, match="'skills' in the user's area is a link"):
        await scene.alice.run("ls /workspace/skills/bobs")
    scene.assert_untouched()


async def test_a_link_in_the_shared_skills_folder_is_not_bound(scene: Scene) -> None:
    os.symlink(scene.bob_area, scene.shared_skills / "promoted")
    result = await scene.alice.run("cat /workspace/skills/promoted/diary.txt; ls /workspace/skills")
    assert SECRET not in result.stdout
    assert result.stdout.split() == ["own", "shared"]


# -- machine-owned and shared learning state ------------------------------------------------


async def test_writing_into_the_skills_view_is_refused(scene: Scene) -> None:
    alice_skills = _tree(scene.root / "alice" / "skills")
    for command in (
        "echo x > /workspace/skills/new.md",
        "mkdir /workspace/skills/fresh",
        "echo tampered > /workspace/skills/own/SKILL.md",
        "rm -rf /workspace/skills/own",
        "rm -rf /workspace/skills",
    ):
        result = await scene.alice.run(command)
        assert not result.ok, command
    assert _tree(scene.root / "alice" / "skills") == alice_skills
    scene.assert_untouched()


async def test_writing_run_records_in_dot_harness_is_refused(scene: Scene) -> None:
    for command in (
        "echo forged > /workspace/.harness/runs/run-1.json",
        "echo forged > /workspace/.harness/runs/run-2.json",
        "rm -rf /workspace/.harness",
        "mv /workspace/.harness /workspace/moved",
    ):
        assert not (await scene.alice.run(command)).ok, command
    assert await scene.alice.read_text(".harness/runs/run-1.json") == '{"step": 1}'
    assert not await scene.alice.exists(".harness/runs/run-2.json")


async def test_staged_files_and_the_scan_verdicts_cannot_be_forged_from_the_shell(scene: Scene) -> None:
    """The shared ``.skills-cache`` holds staged market files and the market scan's verdicts with
    their key: a tenant may run the staged scripts, never change them, forge a verdict (to unblock
    a market skill) or replace the key."""
    cache = scene.root / ".skills-cache"
    await scene.fs.write_text(".skills-cache/acme/tool/scripts/run.sh", "echo staged\n")
    await scene.fs.write_text(".skills-cache/.scan-verdicts.json", '{"verdicts": {}}')
    await scene.fs.write_text(".skills-cache/.scan.key", "00" * 32)
    before = _tree(cache)
    for command in (
        'echo \'{"verdicts": {"forged": 1}}\' > /workspace/.skills-cache/.scan-verdicts.json',
        "echo 11 > /workspace/.skills-cache/.scan.key",
        "rm -f /workspace/.skills-cache/.scan.key",
        "echo evil > /workspace/.skills-cache/acme/tool/scripts/run.sh",
        "mv /workspace/.skills-cache /workspace/moved",
        "echo x > /workspace/.skills-cache/.manifest.json",
    ):
        assert not (await scene.alice.run(command)).ok, command
    assert _tree(cache) == before
    scene.assert_untouched()


async def test_a_missing_dot_harness_cannot_be_created_from_the_shell(scene: Scene) -> None:
    await scene.alice.delete(".harness")
    result = await scene.alice.run("mkdir -p /workspace/.harness/runs && echo x > /workspace/.harness/runs/r.json")
    assert not result.ok and "Read-only" in result.stderr
    assert not await scene.alice.exists(".harness/runs")


async def test_the_users_usage_sidecar_is_invisible_and_unwritable(scene: Scene) -> None:
    result = await scene.alice.run("cat /workspace/skills/.usage.json; echo '{}' > /workspace/skills/.usage.json")
    assert not result.ok and '"own"' not in result.stdout
    assert await scene.alice.read_text("skills/.usage.json") == '{"own": 1}'


async def test_shared_reviews_audit_usage_and_archive_are_not_projected(scene: Scene) -> None:
    result = await scene.alice.run(
        "ls -A /workspace/skills; cat /workspace/skills/.reviews/r-1.json "
        "/workspace/skills/.audit/2026-11-30.jsonl /workspace/skills/.usage.json "
        "/workspace/skills/.archive/old-1/SKILL.md"
    )
    assert result.stdout.split() == ["own", "shared"]
    assert "bob" not in result.stdout and "archived" not in result.stdout


async def test_the_rest_of_the_users_area_stays_writable(scene: Scene) -> None:
    result = await scene.alice.run("echo more >> notes.txt && mkdir -p work && echo y > work/out")
    assert result.ok, result.stderr
    assert await scene.alice.read_text("notes.txt") == "minemore\n"
    assert await scene.alice.read_text("work/out") == "y\n"


# -- resource limits ----------------------------------------------------------------------

FORK_BOMB = """
import os, time
children = 0
try:
    while children < 2000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
    print("unbounded", children)
except OSError as error:
    print("refused after", children, error.strerror)
"""


async def _limited(workspace_dir: Path, limits: SandboxLimits) -> Scene:
    return await _scene(workspace_dir, limits=limits, timeout=60)


async def test_a_fork_bomb_hits_the_process_limit(workspace_dir: Path) -> None:
    built = await _limited(workspace_dir, SandboxLimits(processes=100))
    async with built.fs:
        await built.alice.write_text("bomb.py", FORK_BOMB)
        result = await built.alice.run("python3 bomb.py")
    assert "refused after" in result.stdout, result.stdout + result.stderr
    assert int(result.stdout.split()[2]) < 100
    assert not result.timed_out
    built.assert_untouched()


async def test_allocating_huge_memory_fails_under_the_default_limit(scene: Scene) -> None:
    result = await scene.alice.run("python3 -c 'b = bytearray(16 * 1024**3)'")
    assert not result.ok and "MemoryError" in result.stderr


async def test_writing_a_huge_file_stops_at_the_file_size_limit(workspace_dir: Path) -> None:
    built = await _limited(workspace_dir, SandboxLimits(file_size=1024 * 1024))
    async with built.fs:
        result = await built.alice.run("head -c 8M /dev/zero > big.bin")
        size = (workspace_dir / "alice" / "big.bin").stat().st_size
    assert not result.ok
    assert size <= 1024 * 1024


async def test_filling_tmp_stops_at_its_size(workspace_dir: Path) -> None:
    built = await _limited(workspace_dir, SandboxLimits(tmp_size=1024 * 1024))
    async with built.fs:
        result = await built.alice.run("head -c 8M /dev/zero > /tmp/big.bin")
    assert not result.ok and "No space left" in result.stderr


async def test_opening_too_many_files_is_refused(workspace_dir: Path) -> None:
    script = (
        "import os\nfds = []\ntry:\n    while len(fds) < 10000:\n"
        "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "    print('unbounded')\nexcept OSError as e:\n    print('refused', len(fds))\n"
    )
    built = await _limited(workspace_dir, SandboxLimits(open_files=64))
    async with built.fs:
        await built.alice.write_text("fds.py", script)
        result = await built.alice.run("python3 fds.py")
    assert result.stdout.startswith("refused"), result.stdout + result.stderr
    assert int(result.stdout.split()[1]) < 64


async def test_output_beyond_the_cap_is_dropped(scene: Scene) -> None:
    result = await scene.alice.run("head -c 1000000 /dev/zero | tr '\\0' x")
    assert result.truncated and len(result.stdout) == 16384


# -- the timeout is the operator's ----------------------------------------------------------


async def test_a_huge_timeout_passed_to_run_is_lowered_to_the_filesystem_ceiling(
    workspace_dir: Path,
) -> None:
    built = await _scene(workspace_dir, timeout=0.2)
    async with built.fs:
        result = await built.alice.run("sleep 5", timeout=1e9)
    assert result.timed_out


async def test_the_model_asking_for_a_huge_timeout_gets_the_shell_tool_ceiling(
    scene: Scene,
) -> None:
    async with SkillPipeline(filesystem=scene.fs, watch=False) as pipeline:
        plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
    tools = {tool.name: tool for tool in skill_tools(plan, shell_timeout=0.2)}
    answer = await tools[SHELL_TOOL].call({"command": "sleep 5", "timeout": 1e9})
    assert "(timed out)" in answer


# -- folders on filesystem.path ---------------------------------------------------------------


@pytest.mark.parametrize("planted", ["folder", "link to bob", "link to /root"])
async def test_a_path_folder_in_a_tenants_area_is_refused_whatever_she_put_there(
    scene: Scene, workspace_dir: Path, planted: str
) -> None:
    made = {
        "folder": "mkdir -p /workspace/.venv/bin",
        "link to bob": "mkdir -p /workspace/.venv && ln -s ../../bob /workspace/.venv/bin",
        "link to /root": "ln -s /root /workspace/.venv",
    }[planted]
    assert (await scene.alice.run(made)).ok
    with pytest.raises(ValueError, match="cannot be shown in the sandbox"):
        SandboxFilesystem(workspace_dir, path=[f"{workspace_dir}/alice/.venv/bin"])
    scene.assert_untouched()

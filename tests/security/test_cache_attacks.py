"""A tenant with a local shell tampers with the shared staging cache: overwrites a staged script
with a payload (same size, old mtime), swaps a file or the whole folder, plants links, forges the
file's record in the manifest. The next user's command of that skill runs the market's bytes, at
the cost of that skill's stat walk only, and nothing a link points at is read, changed or removed."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import ResolvedSkill, SkillPipeline, TurnPlan
from repositories import DirectoryRepository
from tests.support.io import IORecorder
from tests.support.reliability import tree_state
from tests.support.skills import make_skill, skill_md

ALICE = RuntimeContext(user_id="alice")
BOB = RuntimeContext(user_id="bob")
SCRIPT = "#!/bin/sh\necho market\n"
PAYLOAD = "#!/bin/sh\necho PWNED\n\n"  # as long as SCRIPT: a same-size overwrite
OTHERS = 30  # other staged skills: a check must not cost anything for them

#: Shell commands a tenant runs against the staged folder ``$F``, with ``$A`` her own area and
#: ``$P`` the payload.
TAMPERING = {
    "same-size overwrite with the old mtime": (
        't=$(stat -c %y "$F/scripts/run.sh"); printf %s "$P" > "$F/scripts/run.sh"; touch -d "$t" "$F/scripts/run.sh"'
    ),
    "file replaced by a new one": 'printf %s "$P" > "$A/x"; mv -f "$A/x" "$F/scripts/run.sh"',
    "file replaced by a link": 'printf %s "$P" > "$A/x"; chmod +x "$A/x"; rm -f "$F/scripts/run.sh"; ln -s "$A/x" "$F/scripts/run.sh"',
    "file deleted": 'rm -f "$F/scripts/run.sh"',
    "folders opened and an output dropped": 'chmod 777 "$F" "$F/scripts"; printf x > "$F/scripts/out.txt"',
    "folder replaced by a link to the tenant's area": (
        'mkdir -p "$A/evil/scripts"; printf %s "$P" > "$A/evil/scripts/run.sh"; chmod +x "$A/evil/scripts/run.sh"; '
        'rm -rf "$F"; ln -s "$A/evil" "$F"'
    ),
    "script folder swapped": (
        'mkdir -p "$A/s"; printf %s "$P" > "$A/s/run.sh"; chmod +x "$A/s/run.sh"; rm -rf "$F/scripts"; cp -r "$A/s" "$F/scripts"'
    ),
}


@asynccontextmanager
async def cache_scene(root: Path) -> AsyncIterator[SkillPipeline]:
    """A local-shell workspace whose directory market offers ``tool`` and ``OTHERS`` more skills."""
    market = root / "market"
    make_skill(market, "tool", text=skill_md("tool"), files={"scripts/run.sh": SCRIPT, "references/a.md": "a\n"})
    for index in range(OTHERS):
        make_skill(market, f"other-{index}", text=skill_md(f"other-{index}"), files={"scripts/run.sh": SCRIPT})
    async with (
        LocalFilesystem(root / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[DirectoryRepository(market)], watch=False) as pipeline,
    ):
        yield pipeline


async def tool_of(pipeline: SkillPipeline, context: RuntimeContext) -> tuple[TurnPlan, ResolvedSkill]:
    plan = await pipeline.prepare(context)
    tool = plan.find("tool")
    assert tool is not None and tool.files_root is not None
    return plan, tool


async def run_tool(plan: TurnPlan, tool: ResolvedSkill) -> str:
    """What the next command of ``tool`` prints, after the plan's check of the skill."""
    if plan.before_run is not None:
        await plan.before_run(tool)
    result = await plan.filesystem.run(f"{tool.files_root}/scripts/run.sh")
    return result.stdout + result.stderr


def is_in(path: str, folder: Path) -> bool:
    return path == str(folder) or path.startswith(f"{folder}/")


def touched(events: list[tuple[str, object]]) -> set[str]:
    return {os.fsdecode(path) for _, path in events if isinstance(path, (str, bytes, os.PathLike))}


@pytest.mark.parametrize("attack", sorted(TAMPERING))
async def test_a_tampered_staged_skill_runs_the_markets_bytes_for_the_next_user(tmp_path: Path, attack: str) -> None:
    async with cache_scene(tmp_path) as pipeline:
        alice, tool = await tool_of(pipeline, ALICE)
        folder = Path(str(tool.files_root))
        staged = tree_state(folder.parent)
        area = {"F": str(folder), "A": str(tmp_path / "ws" / "alice"), "P": PAYLOAD}
        done = await alice.filesystem.run(TAMPERING[attack], env=area)
        assert done.ok, done.stderr
        assert tree_state(folder.parent) != staged
        bob, tool = await tool_of(pipeline, BOB)
        with IORecorder() as events:
            assert plan_ran(await run_tool(bob, tool))
        assert tree_state(folder.parent) == staged
        assert {stat.S_IMODE(p.lstat().st_mode) for p in [folder, *folder.rglob("*")] if p.is_dir()} == {0o555}
        others = [p for p in touched(events) if p.startswith(f"{folder.parent}/") and not is_in(p, folder)]
        assert others == []  # no other skill's folder was walked or read


def plan_ran(output: str) -> bool:
    assert output == "market\n", output
    return True


async def test_checking_an_untouched_skill_costs_only_its_own_folder_walk(tmp_path: Path) -> None:
    async with cache_scene(tmp_path) as pipeline:
        plan, tool = await tool_of(pipeline, BOB)
        folder = Path(str(tool.files_root))
        assert plan.before_run is not None
        with IORecorder() as events:
            await plan.before_run(tool)
        # One listing per folder of the skill (itself, scripts/, references/), nothing opened.
        assert sorted(events) == sorted(
            ("os.scandir", str(folder / sub).rstrip("/")) for sub in ("", "scripts", "references")
        )


async def test_links_planted_in_a_staged_folder_are_removed_without_being_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "keep.txt").write_text("keep")
    (outside / "secret.txt").write_text("secret")
    async with cache_scene(tmp_path) as pipeline:
        plan, tool = await tool_of(pipeline, ALICE)
        folder = Path(str(tool.files_root))
        staged = tree_state(folder.parent)
        before = tree_state(outside)
        plant = (
            f'ln -s {outside}/dir "$F/scripts/linked-dir"; ln -s {outside}/secret.txt "$F/leak.txt"; '
            f'rm -rf "$F/references"; ln -s {outside}/dir "$F/references"; mkdir "$F/__pycache__"; '
            f'ln -s {outside}/dir "$F/__pycache__/deep"'
        )
        assert (await plan.filesystem.run(plant, env={"F": str(folder)})).ok
        assert await run_tool(plan, tool) == "market\n"
        assert tree_state(folder.parent) == staged
        assert tree_state(outside) == before
        assert (outside / "secret.txt").stat().st_mode & 0o777 == 0o644  # never chmod-ed through a link


#: The tenant overwrites the staged script and rewrites its record in the cache's manifest to the
#: payload's hash, mode and ``lstat``, as if the stager had written it.
FORGED_RECORD = r"""
python3 - <<'PY'
import hashlib, json, os
folder, cache, payload = os.environ["F"], os.environ["C"], os.environ["P"]
script = folder + "/scripts/run.sh"
os.chmod(folder + "/scripts", 0o755)
os.unlink(script)
with open(script, "w") as handle:
    handle.write(payload)
os.chmod(script, 0o555)
os.chmod(folder + "/scripts", 0o555)
st = os.lstat(script)
with open(cache + "/.manifest.json") as handle:
    manifest = json.load(handle)
key = os.path.relpath(folder, cache)
manifest[key]["files"]["scripts/run.sh"] = {
    "sha256": hashlib.sha256(payload.encode()).hexdigest(), "mode": 0o555, "size": st.st_size,
    "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "ino": st.st_ino,
}
with open(cache + "/.manifest.json", "w") as handle:
    json.dump(manifest, handle, sort_keys=True)
PY
"""


async def test_a_record_forged_in_the_manifest_does_not_make_a_payload_the_markets(tmp_path: Path) -> None:
    async with cache_scene(tmp_path) as pipeline:
        alice, tool = await tool_of(pipeline, ALICE)
        folder = Path(str(tool.files_root))
        area = {"F": str(folder), "C": str(folder.parent.parent), "P": PAYLOAD}
        done = await alice.filesystem.run(FORGED_RECORD, env=area)
        assert done.ok, done.stderr
        bob, tool = await tool_of(pipeline, BOB)
        assert plan_ran(await run_tool(bob, tool))
        assert (folder / "scripts" / "run.sh").read_text() == SCRIPT

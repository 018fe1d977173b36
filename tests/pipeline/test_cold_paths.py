"""Cold paths do only the work they need: a restart over a staged cache trusts its manifest
(no staged file is read or hashed until a verify pass), and a user without skills of their own
costs no file operation on their first turn. Counted with the I/O recorder, never timed."""

from __future__ import annotations

from pathlib import Path

from filesystems import LocalFilesystem
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import DirectoryRepository, FileContents, MemoryRepository, SkillBundleContents
from tests.support.io import IORecorder
from tests.support.skills import make_skill

ALICE = RuntimeContext(user_id="alice")
CACHE = ".skills-cache"


def market() -> MemoryRepository:
    return MemoryRepository(
        [
            SkillBundleContents(
                folder=f"tool-{index}",
                skill_md=f"---\nname: tool-{index}\ndescription: Use for tool {index}.\n---\nRun it.\n".encode(),
                files=(FileContents(path="scripts/run.sh", data=b"#!/bin/sh\necho hi\n", mode=0o755),),
            )
            for index in range(3)
        ],
        name="acme",
    )


def staged_reads(events: list[tuple[str, object]], cache: Path) -> list[tuple[str, object]]:
    """File events on the staged skill folders (not the manifest, lock or leases)."""
    return [
        (event, path)
        for event, path in events
        if isinstance(path, str) and path.startswith(f"{cache}/acme") and event != "os.chmod"
    ]


async def test_a_restart_serves_from_the_manifest_without_rehashing(tmp_path: Path) -> None:
    cache = tmp_path / CACHE
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], watch=False) as first,
    ):
        assert (await first.stage()).written == 6
    (cache / "acme" / "tool-0" / "scripts" / "run.sh").write_text("changed behind the stager's back\n")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], watch=False) as restarted,
    ):
        await restarted.prepare(ALICE, stage=False)
        with IORecorder() as events:
            result = await restarted.stage()
        assert (result.written, result.unchanged) == (0, 6)
        assert staged_reads(events, cache) == []  # nothing staged is opened, listed or rewritten
        opened = {path for event, path in events if event == "open"}
        assert str(cache / ".manifest.json") in opened
        with IORecorder() as events:
            verified = await restarted.stage(verify=True)
        assert verified.written == 1  # the verify pass re-hashes and repairs
        assert staged_reads(events, cache)
    assert (cache / "acme" / "tool-0" / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho hi\n"


async def test_a_restart_with_a_changed_market_stages_the_change(tmp_path: Path) -> None:
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], watch=False) as first,
    ):
        await first.stage()
    changed = market()
    await changed.save(
        SkillBundleContents(
            folder="tool-1",
            skill_md=b"---\nname: tool-1\ndescription: Use for tool 1, now better.\n---\nRun it.\n",
            files=(FileContents(path="scripts/run.sh", data=b"#!/bin/sh\necho v2\n", mode=0o755),),
        )
    )
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[changed], watch=False) as restarted,
    ):
        result = await restarted.stage()
    assert (result.written, result.unchanged) == (2, 4)
    assert (tmp_path / CACHE / "acme" / "tool-1" / "scripts" / "run.sh").read_bytes() == b"#!/bin/sh\necho v2\n"


async def test_a_users_first_turn_without_own_skills_touches_no_file(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()]) as pipeline,
    ):
        await pipeline.prepare(ALICE)
        with IORecorder() as events:
            plan = await pipeline.prepare(RuntimeContext(user_id="bob"))
        assert events == []
        assert len(plan.skills) == 3
        shared = await pipeline.prepare(RuntimeContext(user_id="carol"))
        assert shared.catalog == plan.catalog


async def test_the_first_stage_after_a_reboot_verifies_before_trusting_the_manifest(tmp_path: Path) -> None:
    cache = tmp_path / CACHE
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], watch=False) as first,
    ):
        await first.stage()
    assert (cache / ".manifest.boot").read_text() == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    # A power loss kept the rename of a file but not its data; the machine booted again.
    (cache / "acme" / "tool-2" / "scripts" / "run.sh").write_bytes(b"")
    (cache / ".manifest.boot").write_text("an-earlier-boot\n")
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[market()], watch=False) as restarted,
    ):
        result = await restarted.stage()
        assert (result.written, result.unchanged) == (1, 5)
        again = await restarted.stage()
    assert (again.written, again.unchanged) == (0, 6)
    assert (cache / "acme" / "tool-2" / "scripts" / "run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"


class CountingDirectory(DirectoryRepository):
    """Counts how the stager reads: batches of folders, or one folder at a time."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[int] = []
        self.singles = 0

    async def _read_files_batch(
        self, requests: list[tuple[str, tuple[str, ...]]]
    ) -> list[dict[str, bytes] | Exception]:
        self.batches.append(len(requests))
        return await super()._read_files_batch(requests)

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        self.singles += 1
        return await super()._read_files(folder, paths)


async def test_a_folder_market_is_read_for_staging_in_batches_and_a_bad_skill_costs_only_itself(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "market"
    for index in range(70):
        make_skill(tree, f"tool-{index:02d}", description=f"Tool {index}.", files={"scripts/run.sh": "echo hi\n"})
    repository = CountingDirectory(tree)
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repository], watch=False) as pipeline,
    ):
        await pipeline.prepare(ALICE, stage=False)
        (tree / "tool-03" / "scripts" / "run.sh").unlink()  # gone between the listing and the read
        assert pipeline._base is not None and pipeline.stager is not None
        result = await pipeline.stager.stage(pipeline._base.stage_items)  # the turn's staging step
    # the ingest scan read all 70 folders in one batch at load; staging then reads in batches of 64
    assert repository.batches == [70, 64, 6] and repository.singles == 0
    failed = [d for d in result.diagnostics if d.code == "stage-read-failed"]
    assert len(failed) == 1 and "tool-03" in failed[0].message
    assert result.written == 69 * 2
    assert (tmp_path / "ws" / CACHE / repository.source / "tool-69" / "scripts" / "run.sh").is_file()


async def test_a_cold_load_of_the_workspace_lists_no_skill_folder_below_its_top_level(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    for index in range(3):
        folder = make_skill(skills, f"tool-{index}")
        (folder / "scripts").mkdir()
        (folder / "scripts" / "run.sh").write_text("echo hi\n")
    flow = make_skill(skills, "flow")
    (flow / "workflow.yaml").write_text("steps: []\n")
    (flow / "scripts").mkdir()
    (flow / "scripts" / "step.sh").write_text("echo step\n")
    async with LocalFilesystem(tmp_path) as fs, SkillPipeline(filesystem=fs, watch=False) as pipeline:
        with IORecorder({"os.scandir"}) as listed:
            plan = await pipeline.prepare(ALICE)
        assert not [path for _, path in listed if str(path).endswith("/scripts")]
        assert plan.skills["flow_workspace"].workflow  # found by name, without a walk
        assert not plan.skills["tool-0_workspace"].workflow
        # The listing is produced when first needed, and then served from the cache.
        assert await plan.skills["tool-0_workspace"].list_files() == ("scripts/run.sh",)
        with IORecorder({"os.scandir"}) as again:
            assert await plan.skills["tool-0_workspace"].list_files() == ("scripts/run.sh",)
        assert again == []

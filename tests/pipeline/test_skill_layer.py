"""The one layer type every skill source goes through: freshness, parse once, last good."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.pipeline.layers import SkillLayer
from harness.skills.skill import Layer
from repositories import DirectoryRepository, MemoryRepository
from tests.support.pipeline import bundle, write_skill


def _folder_layer(root: Path) -> SkillLayer:
    return SkillLayer(DirectoryRepository(root, source="workspace", nested=True), layer=Layer.WORKSPACE)


def _descriptions(layer: SkillLayer) -> dict[str, str]:
    return {e.skill.name: e.skill.description for e in layer.result.entries}


async def test_a_watched_layer_serves_its_last_result_until_marked_stale(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha", description="first")
    layer = _folder_layer(tmp_path)
    layer.watch(True)
    await layer.load()
    write_skill(tmp_path, "alpha", description="second")
    await layer.load()
    assert _descriptions(layer) == {"alpha": "first"}
    layer.mark_stale()
    await layer.load()
    assert _descriptions(layer) == {"alpha": "second"}


async def test_an_unwatched_layer_sees_changes_on_every_load(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha", description="first")
    layer = _folder_layer(tmp_path)
    await layer.load()
    write_skill(tmp_path, "alpha", description="second")
    await layer.load()
    assert _descriptions(layer) == {"alpha": "second"}


async def test_an_unchanged_bundle_is_parsed_once(tmp_path: Path) -> None:
    repository = MemoryRepository([bundle("alpha")], source="team")
    layer = SkillLayer(repository)
    first = await layer.load()
    await repository.save(bundle("beta"))
    second = await layer.load()
    [alpha_before] = first.entries
    alpha_after = next(e for e in second.entries if e.skill.name == "alpha")
    assert alpha_after is alpha_before
    assert {e.skill.name for e in second.entries} == {"alpha", "beta"}


async def test_an_unchanged_repository_gives_the_same_result_object(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha")
    layer = _folder_layer(tmp_path)
    assert await layer.load() is await layer.load()


@pytest.mark.parametrize(
    ("layer", "code", "wording"),
    [
        (Layer.WORKSPACE, "layer-unavailable", "serving the last good ones"),
        (Layer.MARKET, "market-unavailable", "failed to refresh, serving its last good skills"),
    ],
)
async def test_a_failing_layer_serves_its_last_good_skills_with_one_diagnostic(
    tmp_path: Path, layer: Layer, code: str, wording: str
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "alpha")
    source = SkillLayer(DirectoryRepository(root, source="team", nested=True), layer=layer)
    await source.load()
    shutil.rmtree(root)
    down = await source.load()
    assert down.failed and [e.skill.name for e in down.entries] == ["alpha"]
    [problem] = down.diagnostics
    assert problem.code == code and problem.severity == "error"
    assert wording in problem.message and str(root) in problem.message


async def test_a_failure_makes_a_watched_layer_ask_again_on_the_next_load(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "alpha")
    layer = _folder_layer(root)
    layer.watch(True)
    await layer.load()
    shutil.rmtree(root)
    layer.mark_stale()
    assert (await layer.load()).failed
    write_skill(root, "beta")
    healed = await layer.load()  # not marked stale again: the failure itself asks for a retry
    assert not healed.failed and [e.skill.name for e in healed.entries] == ["beta"]


async def test_a_timed_out_layer_reports_the_reason_and_keeps_its_entries(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha")
    layer = _folder_layer(tmp_path)
    await layer.load()
    stale = layer.failed("did not answer within 1s")
    assert [e.skill.name for e in stale.entries] == ["alpha"]
    assert stale.diagnostics[-1].message.endswith("did not answer within 1s")


async def test_nested_folders_of_one_name_are_kept_apart_and_read_by_path(tmp_path: Path) -> None:
    write_skill(tmp_path / "team-a", "tool", description="a")
    write_skill(tmp_path / "team-b", "tool", description="b", script="echo b\n")
    layer = SkillLayer(
        DirectoryRepository(tmp_path, source="workspace", nested=True), layer=Layer.WORKSPACE, prefix="skills"
    )
    result = await layer.load()
    assert sorted(e.path for e in result.entries) == ["skills/team-a/tool", "skills/team-b/tool"]
    team_b = next(e for e in result.entries if e.key == "team-b/tool")
    assert await layer.read_files(team_b, ["scripts/run.sh"]) == {"scripts/run.sh": b"echo b\n"}

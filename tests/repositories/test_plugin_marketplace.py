"""Claude Code plugin marketplaces (``.claude-plugin/marketplace.json``) served as skill markets."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from filesystems import Progress
from harness.agent import Harness, PipelineOptions, TrustOptions
from harness.context import RuntimeContext
from harness.events import SkillWarning
from harness.models import ScriptedModel
from repositories import (
    DirectoryRepository,
    GitRepository,
    PluginMarketplaceRepository,
    RepositoryUnavailable,
    open_repository,
)
from tests.support.catalog import read_catalog
from tests.support.cli import run_harness
from tests.support.pipeline import local_pipeline
from tests.support.repositories import GitRemote
from tests.support.skills import make_skill

SCRIPT = "#!/usr/bin/env python\nprint('report')\n"
ASSET = bytes(range(256)) * 4


def _write_manifest(root: Path, plugins: list[dict[str, Any]], where: str = ".claude-plugin") -> None:
    path = root / where / "marketplace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": "team", "owner": {"name": "Team"}, "plugins": plugins}))


def _tools_plugin(root: Path) -> dict[str, Any]:
    """A local plugin with two skills: one with a python script and a binary asset."""
    skills = root / "plugins" / "tools" / "skills"
    make_skill(
        skills,
        "report",
        body="Run `python scripts/report.py`.\n",
        files={"scripts/report.py": SCRIPT, "assets/logo.bin": ASSET},
        executable=["scripts/report.py"],
    )
    make_skill(skills, "review")
    return {"name": "tools", "source": "./plugins/tools"}


@pytest.fixture
def other(tmp_path: Path) -> GitRemote:
    """A second repository holding one plugin with a ``deploy`` skill."""
    remote = GitRemote(tmp_path / "other")
    make_skill(remote.work / "skills", "deploy")
    remote.commit()
    return remote


@pytest.fixture
def marketplace(remote: GitRemote, other: GitRemote) -> GitRemote:
    _write_manifest(
        remote.work,
        [_tools_plugin(remote.work), {"name": "deploy-kit", "source": {"source": "url", "url": other.url}}],
    )
    remote.commit()
    return remote


def _market(remote: GitRemote, cache_dir: Path) -> PluginMarketplaceRepository:
    """The marketplace in ``remote``, its ``file://`` plugin sources allowed (the test remotes)."""
    return PluginMarketplaceRepository(
        GitRepository(remote.url, cache_dir=cache_dir), cache_dir=cache_dir, allowed_schemes=("https", "file")
    )


async def test_local_and_remote_plugins_are_staged_through_the_pipeline(
    tmp_path: Path, marketplace: GitRemote, cache_dir: Path
) -> None:
    async with local_pipeline(tmp_path / "ws", _market(marketplace, cache_dir), watch=False) as pipeline:
        plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
    by_name = {s.skill.name: s for s in plan.skills.values()}
    assert {name: s.skill.skill_id for name, s in by_name.items()} == {
        "report": "report_plugins-git-remote.tools",
        "review": "review_plugins-git-remote.tools",
        "deploy": "deploy_plugins-git-remote.deploy-kit",
    }
    staged = Path(str(by_name["report"].files_root))
    assert (staged / "assets" / "logo.bin").read_bytes() == ASSET
    script = staged / "scripts" / "report.py"
    assert script.read_text() == SCRIPT and os.access(script, os.X_OK)


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_harness(
        "skills",
        *argv,
        "--workspace",
        str(tmp_path / "ws"),
        "--user",
        "alice",
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")},
    )


def test_cli_lists_and_shows_each_skill_with_its_plugin_in_the_slug(
    tmp_path: Path, marketplace: GitRemote, cache_dir: Path
) -> None:
    url = f"claude-plugins+{marketplace.url.replace('file:', 'git+file:', 1)}#cache_dir={cache_dir}&allowed_schemes=https,file"
    listed_json = _cli(tmp_path, "list", "--json", "--repo", url)
    assert listed_json.returncode == 0, listed_json.stderr
    listed = {s["name"]: (s["source"], s["skill_id"]) for s in json.loads(listed_json.stdout)["skills"]}
    assert listed == {
        "report": ("plugins-git-remote.tools", "report_plugins-git-remote.tools"),
        "review": ("plugins-git-remote.tools", "review_plugins-git-remote.tools"),
        "deploy": ("plugins-git-remote.deploy-kit", "deploy_plugins-git-remote.deploy-kit"),
    }
    text = _cli(tmp_path, "list", "--repo", url)
    assert text.returncode == 0, text.stderr
    assert "report_plugins-git-remote.tools" in text.stdout
    assert "deploy_plugins-git-remote.deploy-kit" in text.stdout
    for skill_id, body in [("report_plugins-git-remote.tools", "python scripts/report.py"), ("deploy", "# deploy")]:
        shown = _cli(tmp_path, "show", skill_id, "--repo", url)
        assert shown.returncode == 0, shown.stderr
        assert body in shown.stdout


async def test_each_skill_carries_its_plugin_in_its_source_and_id(tmp_path: Path) -> None:
    root = tmp_path / "market"
    make_skill(root / "plugins" / "docs" / "skills", "pdf")
    _write_manifest(root, [_tools_plugin(root), {"name": "Docs Kit", "source": "./plugins/docs"}])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        assert {b.folder: b.sub_source for b in (await repo.snapshot()).bundles} == {
            "pdf": "Docs Kit",
            "report": "tools",
            "review": "tools",
        }
        async with local_pipeline(tmp_path / "ws", repo, watch=False) as pipeline:
            plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
    assert {s.skill.name: s.skill.source for s in plan.skills.values()} == {
        "pdf": "plugins-market.docs-kit",
        "report": "plugins-market.tools",
        "review": "plugins-market.tools",
    }
    # The catalog shows the market's short label; the id it gives loads the skill.
    shown = {s.name: s.skill_id for s in read_catalog(plan.catalog).skills}
    assert shown["pdf"] == "pdf_market.docs-kit"
    assert plan.find(shown["pdf"]) is plan.skills["pdf_plugins-market.docs-kit"]
    # Staging keeps one folder per market: the plugin is in the id, not in the cache path.
    assert str(plan.skills["report_plugins-market.tools"].files_root).endswith("/plugins-market/report")


async def test_folder_marketplace_serves_local_plugins(tmp_path: Path) -> None:
    root = tmp_path / "market"
    _write_manifest(root, [_tools_plugin(root)], where=".agents/plugins")
    async with open_repository(f"claude-plugins+dir:{root}") as repo:
        snapshot = await repo.snapshot()
        assert repo.source == "plugins-market"
        assert [b.folder for b in snapshot.bundles] == ["report", "review"]
        assert await repo.read_file("report", "assets/logo.bin") == ASSET


async def test_skills_list_of_an_entry_replaces_the_skills_folder(tmp_path: Path) -> None:
    root = tmp_path / "market"
    make_skill(root / "docs", "xlsx")
    make_skill(root / "docs", "pdf")
    make_skill(root / "skills", "unlisted")
    _write_manifest(root, [{"name": "documents", "source": "./", "skills": ["./docs/xlsx"]}])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["xlsx"]


@pytest.mark.parametrize("source", ["../outside", "{tmp}/outside"])
async def test_source_escaping_the_marketplace_is_refused_with_a_problem(tmp_path: Path, source: str) -> None:
    root = tmp_path / "market"
    make_skill(tmp_path / "outside" / "skills", "stolen")
    source = source.format(tmp=tmp_path)
    _write_manifest(root, [{"name": "escape", "source": source}, _tools_plugin(root)])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        snapshot = await repo.snapshot()
    assert [b.folder for b in snapshot.bundles] == ["report", "review"]
    assert any(f"plugin 'escape' source {source!r} refused" in p for p in snapshot.problems), snapshot.problems


async def test_link_to_a_plugin_folder_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "market"
    make_skill(tmp_path / "outside" / "skills", "stolen")
    (root / "plugins").mkdir(parents=True)
    (root / "plugins" / "linked").symlink_to(tmp_path / "outside")
    _write_manifest(root, [{"name": "linked", "source": "./plugins/linked"}])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        snapshot = await repo.snapshot()
    assert snapshot.bundles == ()
    assert any("'linked'" in p and "link" in p for p in snapshot.problems), snapshot.problems


async def test_unreachable_remote_plugin_is_reported_and_the_rest_served(
    tmp_path: Path, remote: GitRemote, cache_dir: Path
) -> None:
    missing = (tmp_path / "nowhere.git").as_uri()
    _write_manifest(
        remote.work, [{"name": "gone", "source": {"source": "url", "url": missing}}, _tools_plugin(remote.work)]
    )
    remote.commit()
    async with _market(remote, cache_dir) as repo:
        snapshot = await repo.snapshot()
    assert [b.folder for b in snapshot.bundles] == ["report", "review"]
    assert snapshot.error is None
    assert any("'gone' unavailable" in p for p in snapshot.problems), snapshot.problems


async def test_unsupported_source_type_is_a_problem(tmp_path: Path) -> None:
    root = tmp_path / "market"
    _write_manifest(root, [{"name": "npm-kit", "source": {"source": "npm", "package": "kit"}}, _tools_plugin(root)])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        snapshot = await repo.snapshot()
    assert len(snapshot.bundles) == 2
    assert any("'npm-kit'" in p and "'npm'" in p for p in snapshot.problems), snapshot.problems


async def test_malformed_marketplace_keeps_the_last_good_skills(marketplace: GitRemote, cache_dir: Path) -> None:
    async with _market(marketplace, cache_dir) as repo:
        good = await repo.snapshot()
        (marketplace.work / ".claude-plugin" / "marketplace.json").write_text('{"plugins": [')
        marketplace.commit("break the marketplace")
        broken = await repo.snapshot()
    assert broken.bundles == good.bundles
    assert isinstance(broken.error, RepositoryUnavailable)
    assert ".claude-plugin/marketplace.json is not valid JSON" in str(broken.error)


async def test_marketplace_without_a_manifest_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "market").mkdir()
    async with PluginMarketplaceRepository(DirectoryRepository(tmp_path / "market")) as repo:
        with pytest.raises(RepositoryUnavailable, match="marketplace.json"):
            await repo.snapshot()


async def test_same_named_skill_of_a_later_plugin_is_skipped_naming_both_plugins(tmp_path: Path) -> None:
    root = tmp_path / "market"
    make_skill(root / "zeta" / "skills", "lint", description="From zeta.")
    make_skill(root / "alpha" / "skills", "lint", description="From alpha.")
    # Listed first wins, whatever the names' order.
    _write_manifest(root, [{"name": "zeta", "source": "./zeta"}, {"name": "alpha", "source": "./alpha"}])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        snapshot = await repo.snapshot()
        async with local_pipeline(tmp_path / "ws", repo, watch=False) as pipeline:
            plan = await pipeline.prepare(RuntimeContext(user_id="alice"))
    assert [(b.location, b.sub_source) for b in snapshot.bundles] == [(str(root / "zeta" / "skills" / "lint"), "zeta")]
    assert (
        "skill 'lint' of plugin 'alpha' (plugins-market.alpha) skipped: plugin 'zeta' (plugins-market.zeta), "
        "listed before it in the marketplace, has a skill of that name"
    ) in snapshot.problems
    [lint] = plan.skills.values()
    assert (lint.skill.description, lint.skill.skill_id) == ("From zeta.", "lint_plugins-market.zeta")
    assert any("'alpha' (plugins-market.alpha) skipped" in d.message for d in plan.diagnostics)


async def test_a_skill_moved_to_another_plugin_gets_that_plugins_slug(tmp_path: Path) -> None:
    root = tmp_path / "market"
    make_skill(root / "a" / "skills", "lint")
    make_skill(root / "b" / "skills", "lint")
    plugins = [{"name": "a", "source": "./a"}, {"name": "b", "source": "./b"}]
    _write_manifest(root, plugins)
    async with local_pipeline(
        tmp_path / "ws", PluginMarketplaceRepository(DirectoryRepository(root)), watch=False
    ) as pipeline:
        before = await pipeline.prepare(RuntimeContext(user_id="alice"))
        _write_manifest(root, plugins[::-1])
        after = await pipeline.prepare(RuntimeContext(user_id="alice"))
    assert list(before.skills) == ["lint_plugins-market.a"]
    assert list(after.skills) == ["lint_plugins-market.b"]


@pytest.mark.parametrize(
    ("trusted", "expected"),
    [
        (["plugins-market"], {"tools", "docs"}),
        (["plugins-market.docs"], {"docs"}),
        ([], set()),
    ],
    ids=["marketplace-slug", "plugin-slug", "none"],
)
async def test_trusting_the_marketplace_trusts_its_plugins_and_a_plugin_slug_only_that_plugin(
    tmp_path: Path, trusted: list[str], expected: set[str]
) -> None:
    root = tmp_path / "market"
    for plugin in ("tools", "docs"):
        make_skill(root / plugin / "skills", f"{plugin}-skill", extra="model: demo\n")
    _write_manifest(root, [{"name": "tools", "source": "./tools"}, {"name": "docs", "source": "./docs"}])
    honoured = set()
    async with Harness(
        model=ScriptedModel(["default"] * 2, name="default"),
        workspace=tmp_path / "ws",
        repositories=[PluginMarketplaceRepository(DirectoryRepository(root))],
        trust=TrustOptions(trusted_markets=trusted),
        pipeline=PipelineOptions(watch=False),
    ) as agent:
        for plugin in ("tools", "docs"):
            result = await agent.run(f"/skill:{plugin}-skill", context=RuntimeContext(user_id="alice"))
            if not any(isinstance(e, SkillWarning) for e in result.events):
                honoured.add(plugin)
    assert honoured == expected


async def test_marketplace_change_adds_a_plugin(tmp_path: Path) -> None:
    root = tmp_path / "market"
    _write_manifest(root, [_tools_plugin(root)])
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        first = await repo.version()
        make_skill(root / "extra" / "skills", "extra")
        _write_manifest(root, [_tools_plugin(root), {"name": "extra", "source": "./extra"}])
        assert await repo.version() != first
        assert [b.folder for b in (await repo.snapshot()).bundles] == ["extra", "report", "review"]


async def test_oversized_marketplace_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "market"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "marketplace.json").write_text('{"plugins": []' + " " * (2 << 20) + "}")
    async with PluginMarketplaceRepository(DirectoryRepository(root)) as repo:
        with pytest.raises(RepositoryUnavailable, match="larger than"):
            await repo.snapshot()


async def test_the_marketplaces_and_its_plugins_clones_report_progress(
    marketplace: GitRemote, other: GitRemote, cache_dir: Path
) -> None:
    reports: list[Progress] = []
    async with _market(marketplace, cache_dir) as market:
        market.progress = reports.append
        snapshot = await market.snapshot()
    assert {b.folder for b in snapshot.bundles} >= {"deploy"}
    finals = {r.subject for r in reports if r.task == "cloning" and r.final}
    assert finals == {marketplace.url, other.url}

"""The Nacos market through nacos-sdk-python against a local stand-in of the Nacos server.

No Nacos server runs on the test machines: ``tests.support.nacos.NacosStandIn`` answers the two
HTTP endpoints the SDK calls to download skills (``GET /nacos/v3/client/ai/skills``, from
``AiHttpClientProxy.download_skill_zip``; ``POST /nacos/v1/auth/users/login``, from
``AuthClient.get_access_token``), with the query parameters and headers those functions send;
its module docstring cites the SDK code. The requests the real SDK made are asserted below.
``test_real_nacos_server`` runs against a real Nacos 3.x when ``HARNESS_TEST_NACOS=host:port``
is set.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from repositories import NacosRepository, RepositoryUnavailable, open_repository
from repositories.archives import MAX_NAMED_SKIPS
from repositories.errors import InvalidRepositoryConfig
from tests.support import skills
from tests.support.nacos import NacosStandIn, running_stand_in, skill_zip, zip_entries


def md(name: str, text: str = "") -> bytes:
    return skills.skill_md(name, text or f"The {name} skill.", body=f"Body of {name}.\n").encode()


@pytest.fixture
def nacos() -> Iterator[NacosStandIn]:
    with running_stand_in() as stand_in:
        yield stand_in


def market(nacos: NacosStandIn, tmp_path: Path, *names: str, **options: object) -> NacosRepository:
    options.setdefault("check_interval", 0)
    return NacosRepository(nacos.address, skills=list(names), log_dir=tmp_path / "nacos-logs", **options)  # type: ignore[arg-type]


async def test_configured_skills_are_downloaded_by_name_with_their_files(nacos: NacosStandIn, tmp_path: Path) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy"), {"scripts/run.sh": (b"#!/bin/sh\n", 0o755)}))
    nacos.publish("review", skill_zip("review", md("review")))
    async with market(nacos, tmp_path, "deploy", "review", namespace="public") as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["deploy", "review"]
        deploy = snap.bundles[0]
        assert deploy.skill_md == md("deploy")
        assert [(f.path, f.mode) for f in deploy.files] == [("scripts/run.sh", 0o755)]
        assert deploy.location == f"nacos://{nacos.address}/public/deploy"
        assert await repo.read_file("deploy", "scripts/run.sh") == b"#!/bin/sh\n"
        assert snap.problems == () and snap.error is None
    asked = nacos.downloads("deploy")[0]
    assert asked.method == "GET" and asked.query == {"namespaceId": "public", "name": "deploy"}
    assert asked.headers["User-Agent"].startswith("Nacos-Python-Client")


async def test_label_and_version_pick_what_is_downloaded(nacos: NacosStandIn, tmp_path: Path) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy", "Old.")), version="1.0", labels=("stable",))
    nacos.publish("deploy", skill_zip("deploy", md("deploy", "New.")), version="2.0", labels=("latest",))
    async with market(nacos, tmp_path, "deploy", label="stable") as stable:
        bundle = (await stable.snapshot()).bundles[0]
        assert bundle.skill_md == md("deploy", "Old.") and bundle.location.endswith("/deploy@label=stable")
    async with market(nacos, tmp_path, "deploy", version="2.0") as pinned:
        assert (await pinned.snapshot()).bundles[0].skill_md == md("deploy", "New.")
    async with market(nacos, tmp_path, "deploy") as latest:
        assert (await latest.snapshot()).bundles[0].skill_md == md("deploy", "New.")
    queries = [r.query for r in nacos.downloads()]
    assert queries == [
        {"namespaceId": "public", "name": "deploy", "label": "stable"},
        {"namespaceId": "public", "name": "deploy", "version": "2.0"},
        {"namespaceId": "public", "name": "deploy"},
    ]


async def test_a_skill_the_server_does_not_know_is_reported_and_the_rest_served(
    nacos: NacosStandIn, tmp_path: Path
) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy")))
    async with market(nacos, tmp_path, "deploy", "ghost") as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["deploy"]
        assert any("ghost" in p and "not found" in p for p in snap.problems)
        assert snap.error is None


async def test_version_is_a_content_hash_and_moves_only_when_a_package_changes(
    nacos: NacosStandIn, tmp_path: Path
) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy")))
    async with market(nacos, tmp_path, "deploy") as repo:
        first = await repo.snapshot()
        nacos.publish("deploy", skill_zip("deploy", md("deploy")), version="2")  # same content, new bytes
        assert await repo.version() == first.version
        nacos.publish("deploy", skill_zip("deploy", md("deploy", "Changed.")), version="3")
        second = await repo.snapshot()
        assert second.version != first.version and second.bundles[0].skill_md == md("deploy", "Changed.")


async def test_the_server_is_asked_at_most_once_per_check_interval(nacos: NacosStandIn, tmp_path: Path) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy")))
    async with market(nacos, tmp_path, "deploy", check_interval=3600) as repo:
        first = await repo.snapshot()
        nacos.publish("deploy", skill_zip("deploy", md("deploy", "Changed.")), version="2")
        assert await repo.snapshot() is first
        assert len(nacos.downloads()) == 1
        await repo.refresh()
        assert (await repo.snapshot()).bundles[0].skill_md == md("deploy", "Changed.")
        assert len(nacos.downloads()) == 2


def _free_port_reading_404() -> int:
    """A free port whose digits hold "404" (the SDK takes such an error text for "not found")."""
    for port in [*range(40400, 40500), *range(14040, 14050), *range(24040, 24050)]:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip("no free port with 404 in it")


async def test_a_server_down_on_a_port_reading_404_is_an_outage_not_a_removal(tmp_path: Path) -> None:
    """The SDK reports a refused connection to 127.0.0.1:404xx as "skill not found"; the market
    checks that a server answers before it drops a skill, so the outage keeps the last good one."""
    stand_in = NacosStandIn()
    stand_in.publish("deploy", skill_zip("deploy", md("deploy")))
    stand_in.start(_free_port_reading_404())
    repo = market(stand_in, tmp_path, "deploy")
    async with repo:
        good = await repo.snapshot()
        stand_in.stop(hold_port=True)
        try:
            down = await repo.snapshot()
        finally:
            stand_in.stop()
    assert "404" in str(stand_in.port) and [b.folder for b in good.bundles] == ["deploy"]
    assert down.bundles == good.bundles
    assert isinstance(down.error, RepositoryUnavailable) and "cannot download skill deploy" in str(down.error)


async def test_server_down_serves_the_last_good_skills_with_a_diagnostic(tmp_path: Path) -> None:
    stand_in = NacosStandIn(users={"nacos": "s3cret-pass"})
    stand_in.publish("deploy", skill_zip("deploy", md("deploy")))
    stand_in.start()
    port = stand_in.port
    repo = market(stand_in, tmp_path, "deploy", username="nacos", password="s3cret-pass")
    async with repo:
        good = await repo.snapshot()
        assert [b.folder for b in good.bundles] == ["deploy"]
        assert stand_in.downloads()[0].headers["accessToken"] == stand_in.token
        stand_in.stop(hold_port=True)
        down = await repo.snapshot()
        assert down.bundles == good.bundles
        assert isinstance(down.error, RepositoryUnavailable)
        assert "cannot download skill deploy" in str(down.error) and "s3cret-pass" not in str(down.error)
        stand_in.publish("deploy", skill_zip("deploy", md("deploy", "Back.")), version="2")
        stand_in.start(port)
        try:
            back = await repo.snapshot()
            assert back.error is None and back.bundles[0].skill_md == md("deploy", "Back.")
        finally:
            stand_in.stop()


async def test_a_server_never_reached_is_unavailable(tmp_path: Path) -> None:
    stand_in = NacosStandIn()
    stand_in.start()
    stand_in.stop(hold_port=True)
    try:
        async with market(stand_in, tmp_path, "deploy") as repo:
            with pytest.raises(RepositoryUnavailable):
                await repo.snapshot()
    finally:
        stand_in.stop()


Entries = dict[str, bytes | tuple[bytes, int]]
HOSTILE_ENTRIES: dict[str, tuple[Entries, str]] = {
    "symlink": ({"deploy/scripts/link": (b"/etc/passwd", stat.S_IFLNK | 0o777)}, "a symlink"),
    "fifo": ({"deploy/pipe": (b"", stat.S_IFIFO | 0o644)}, "not a regular file"),
    "backslash": ({"deploy/a\\b.txt": b"x"}, "backslash"),
    "git metadata": ({"deploy/.git/config": b"[core]"}, "version-control"),
    "control character": ({"deploy/bad\x01name": b"x"}, "control"),
    "oversize": ({"deploy/big.bin": b"x" * 2048}, "over the 1024-byte limit"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ENTRIES))
async def test_a_hostile_entry_is_skipped_with_a_diagnostic_and_the_skill_still_served(
    nacos: NacosStandIn, tmp_path: Path, case: str
) -> None:
    entries, reason = HOSTILE_ENTRIES[case]
    nacos.publish("deploy", zip_entries({"deploy/SKILL.md": md("deploy"), "deploy/ok.txt": b"fine", **entries}))
    nacos.publish("review", skill_zip("review", md("review")))
    async with market(nacos, tmp_path, "deploy", "review", max_file_size=1024) as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["deploy", "review"]
        assert [f.path for f in snap.bundles[0].files] == ["ok.txt"]
        assert any(reason in p for p in snap.problems), snap.problems
        assert snap.error is None


async def test_skipped_entries_are_named_up_to_a_bound_and_dot_files_are_served(
    nacos: NacosStandIn, tmp_path: Path
) -> None:
    flood = {f"deploy/.git/objects/{i:03d}": b"x" for i in range(100)}
    entries = {"deploy/SKILL.md": md("deploy"), "deploy/.env.example": b"KEY=\n", **flood}
    nacos.publish("deploy", zip_entries(entries))
    async with market(nacos, tmp_path, "deploy") as repo:
        snap = await repo.snapshot()
    deploy = snap.bundle("deploy")
    assert deploy is not None and [f.path for f in deploy.files] == [".env.example"]
    problems = [p for p in snap.problems if p.startswith("skill deploy:")]
    assert len(problems) == MAX_NAMED_SKIPS + 1
    assert problems[0] == "skill deploy: entry deploy/.git/objects/000 skipped: is version-control metadata"
    assert problems[-1].startswith(f"skill deploy: {100 - MAX_NAMED_SKIPS} more entries skipped, not named")


HOSTILE_PACKAGES = {
    "parent entry": (zip_entries({"deploy/SKILL.md": md("deploy"), "deploy/../../evil.sh": b"x"}), "traversal"),
    "absolute entry": (zip_entries({"deploy/SKILL.md": md("deploy"), "/etc/cron.d/evil": b"x"}), "Absolute"),
    "not a zip": (b"PK\x03\x04" + b"\0" * 64, "not a ZIP archive"),
    "no SKILL.md": (zip_entries({"deploy/README.txt": b"hi"}), "no SKILL.md"),
    "bomb": (
        zip_entries({"deploy/SKILL.md": md("deploy"), **{f"deploy/f{i}": b"\0" * 1000 for i in range(5)}}),
        "unpacks",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_PACKAGES))
async def test_a_hostile_package_costs_only_its_skill(nacos: NacosStandIn, tmp_path: Path, case: str) -> None:
    package, reason = HOSTILE_PACKAGES[case]
    nacos.publish("deploy", package)
    nacos.publish("review", skill_zip("review", md("review")))
    async with market(nacos, tmp_path, "deploy", "review", max_file_size=1000, max_package_size=4000) as repo:
        snap = await repo.snapshot()
        assert [b.folder for b in snap.bundles] == ["review"]
        assert any("deploy" in p and reason in p for p in snap.problems), snap.problems
        assert snap.error is None
        assert not (tmp_path / "etc").exists() and not (tmp_path / "evil.sh").exists()


async def test_a_hostile_update_keeps_the_previous_package(nacos: NacosStandIn, tmp_path: Path) -> None:
    nacos.publish("deploy", skill_zip("deploy", md("deploy")))
    async with market(nacos, tmp_path, "deploy") as repo:
        good = await repo.snapshot()
        nacos.publish("deploy", zip_entries({"deploy/../SKILL.md": md("deploy", "Evil.")}), version="2")
        again = await repo.snapshot()
        assert again.bundles == good.bundles
        assert any("previous package is still served" in p for p in again.problems)


def test_url_builds_the_market_with_its_options(tmp_path: Path) -> None:
    repo = open_repository(
        "nacos://nacos:s3cret@10.0.0.1:8848,10.0.0.2:8848/team-a?skills=deploy,review&label=stable"
        f"&check_interval=5&log_dir={tmp_path}"
    )
    assert isinstance(repo, NacosRepository)
    assert repo.servers == ("10.0.0.1:8848", "10.0.0.2:8848") and repo.namespace == "team-a"
    assert repo.skills == ("deploy", "review") and repo.label == "stable" and repo.check_interval == 5
    assert repo.source == "nacos-team-a" and "s3cret" not in repo.where + repr(repo)
    assert open_repository("nacos://127.0.0.1:8848?skills=a").namespace == "public"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "url",
    [
        "nacos://127.0.0.1:8848/public",  # no skills: Nacos cannot list them
        "nacos://127.0.0.1:8848/public?skills=a&label=x&version=1",
        "nacos://127.0.0.1:8848/public?skills=../a",
        "nacos://127.0.0.1:8848/public?skills=a&colour=blue",
    ],
)
def test_bad_urls_are_refused_with_a_clear_error(url: str) -> None:
    with pytest.raises(InvalidRepositoryConfig):
        open_repository(url)


@pytest.mark.skipif(not os.environ.get("HARNESS_TEST_NACOS"), reason="set HARNESS_TEST_NACOS=host:port (Nacos 3.x)")
async def test_real_nacos_server(tmp_path: Path) -> None:
    """Against a real Nacos 3.x: an unknown skill is reported (the server answered, no error);
    ``HARNESS_TEST_NACOS_SKILLS=a,b`` names published skills that must load;
    ``HARNESS_TEST_NACOS_NAMESPACE``, ``_USERNAME`` and ``_PASSWORD`` are passed on when set."""
    env = os.environ
    published = [name for name in env.get("HARNESS_TEST_NACOS_SKILLS", "").split(",") if name]
    repo = NacosRepository(
        env["HARNESS_TEST_NACOS"],
        namespace=env.get("HARNESS_TEST_NACOS_NAMESPACE", "public"),
        skills=[*published, "harness-test-no-such-skill"],
        username=env.get("HARNESS_TEST_NACOS_USERNAME") or None,
        password=env.get("HARNESS_TEST_NACOS_PASSWORD") or None,
        log_dir=tmp_path / "nacos-logs",
    )
    async with repo:
        snap = await repo.snapshot()
        assert snap.error is None
        assert any("harness-test-no-such-skill" in p for p in snap.problems), snap.problems  # the server answered
        assert [b.folder for b in snap.bundles] == sorted(published)
        for bundle in snap.bundles:
            assert await repo.read_file(bundle.folder, bundle.skill_md_name) == bundle.skill_md

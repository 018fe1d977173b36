"""Attacks through a Nacos market: a hostile package reaching a turn, and credentials that must
never show. The server is the local stand-in of ``tests/support/nacos.py`` (real SDK, real HTTP)."""

from __future__ import annotations

import json
import logging
import stat
import traceback
from pathlib import Path

import pytest

from filesystems import LocalFilesystem
from harness.cli import main
from harness.context import RuntimeContext
from harness.pipeline import SkillPipeline
from repositories import NacosRepository, RepositoryError
from tests.support import skills
from tests.support.nacos import NacosStandIn, running_stand_in, skill_zip, zip_entries

PASSWORD = "s3cr3t-pw"
ALICE = RuntimeContext(user_id="alice")


def md(name: str) -> bytes:
    return skills.skill_md(name, f"The {name} skill.", body="Run `scripts/run.sh`.\n").encode()


def _assert_clean(text: str) -> None:
    assert PASSWORD not in text, text


async def test_a_hostile_package_still_gives_a_turn_with_diagnostics_and_nothing_outside(tmp_path: Path) -> None:
    package = zip_entries(
        {
            "deploy/SKILL.md": md("deploy"),
            "deploy/scripts/run.sh": (b"#!/bin/sh\necho ok\n", stat.S_IFREG | 0o755),
            "deploy/scripts/link": (b"/etc/shadow", stat.S_IFLNK | 0o777),
            "deploy/setuid": (b"#!/bin/sh\n", stat.S_IFREG | 0o4755),
        }
    )
    with running_stand_in() as nacos:
        nacos.publish("deploy", package)
        nacos.publish("escape", zip_entries({"escape/SKILL.md": md("escape"), "escape/../../../outside": b"x"}))
        nacos.publish("review", skill_zip("review", md("review")))
        repo = NacosRepository(
            nacos.address, skills=["deploy", "escape", "review"], check_interval=0, log_dir=tmp_path / "logs"
        )
        async with (
            repo,
            LocalFilesystem(tmp_path / "ws", shell=True) as fs,
            SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
        ):
            plan = await pipeline.prepare(ALICE)
    names = sorted(s.skill.name for s in plan.skills.values())
    assert names == ["deploy", "review"]
    problems = " ".join(d.message for d in plan.diagnostics if d.code == "market-problem")
    assert "scripts/link skipped: a symlink" in problems and "escape" in problems
    staged = next((tmp_path / "ws" / ".skills-cache").glob("*/deploy"))
    assert (staged / "scripts" / "run.sh").is_file() and not (staged / "scripts" / "link").exists()
    assert not (staged / "setuid").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert not list(tmp_path.rglob("outside"))


async def test_an_unreachable_market_with_a_password_never_shows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    stand_in = NacosStandIn()
    stand_in.start()
    stand_in.stop()  # nothing listens on its port now
    repo = NacosRepository(
        stand_in.address, skills=["deploy"], username="harness", password=PASSWORD, log_dir=tmp_path / "logs"
    )
    _assert_clean(repr(repo) + repo.source + repo.where)
    async with (
        repo,
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        with pytest.raises(RepositoryError) as caught:
            await repo.snapshot()
        plan = await pipeline.prepare(ALICE)
    _assert_clean(str(caught.value) + repr(caught.value) + "".join(traceback.format_exception(caught.value)))
    assert any(d.code == "market-unavailable" for d in plan.diagnostics)
    _assert_clean(json.dumps([d.as_dict() for d in plan.diagnostics]) + caplog.text)


async def test_a_refused_login_is_unavailable_and_never_echoes_the_password(tmp_path: Path) -> None:
    with running_stand_in(users={"harness": "the-right-one"}) as nacos:
        nacos.publish("deploy", skill_zip("deploy", md("deploy")))
        repo = NacosRepository(
            nacos.address, skills=["deploy"], username="harness", password=PASSWORD, log_dir=tmp_path / "logs"
        )
        async with repo:
            with pytest.raises(RepositoryError) as caught:
                await repo.snapshot()
        assert all(r.headers.get("accessToken") != nacos.token for r in nacos.downloads())
    assert "access token failed" in str(caught.value)
    _assert_clean("".join(traceback.format_exception(caught.value)))


def test_a_bad_nacos_url_on_the_command_line_hides_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"nacos://harness:{PASSWORD}@127.0.0.1:9/public?skills=deploy&bogus=1"
    code = main(["skills", "list", "--json", "--workspace", str(tmp_path), "--repo", url])
    out = capsys.readouterr()
    assert code != 0 and "bogus" in out.err
    _assert_clean(out.out + out.err)

"""Attacks on the lockfile: whoever can edit ``harness.lock`` tampers with it. A lock that is not
a well-formed lockfile (bad paths, slugs, digests or commits, duplicate or unknown fields, a
huge or deeply nested file, malformed text) is refused whole when the agent is built, naming the
entry and the problem; a well-formed lock that disagrees with the configuration (another digest,
kind or location, a market that is not configured) holds the market's skills back with a
``lock-drift`` error on every turn. Nothing is served silently, and no turn fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.context import RuntimeContext
from harness.pipeline import Lockfile
from harness.pipeline.lock import LOCKFILE_NAME, SKILLS_LOCK_NAME, LockError, lock_market
from repositories import DirectoryRepository, WellKnownRepository
from tests.support.pipeline import local_pipeline, write_skill
from tests.support.wellknown import Site

ADA = RuntimeContext(user_id="ada")
ZERO = "sha256:" + "0" * 64

Tamper = Callable[[dict[str, Any]], None]


@pytest.fixture
def market(tmp_path: Path) -> Path:
    folder = tmp_path / "market"
    write_skill(folder, "one", script="echo 1\n")
    return folder


async def _locked(market: Path, path: Path) -> dict[str, Any]:
    """The lock of the folder market ``market`` written to ``path``, as JSON data."""
    async with DirectoryRepository(market) as repo:
        Lockfile(markets={repo.source: await lock_market(repo, source=repo.source)}).write(path)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _market(data: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = data["markets"]["dir-market"]
    return entry


def _rename_skill(key: str) -> Tamper:
    def tamper(data: dict[str, Any]) -> None:
        skills = _market(data)["skills"]
        skills[key] = skills.pop("one")

    return tamper


def _rename_market(slug: str) -> Tamper:
    def tamper(data: dict[str, Any]) -> None:
        data["markets"][slug] = data["markets"].pop("dir-market")

    return tamper


def _set(**fields: object) -> Tamper:
    return lambda data: _market(data).update(fields)


def _set_skill(**fields: object) -> Tamper:
    return lambda data: _market(data)["skills"]["one"].update(fields)


@pytest.mark.parametrize(
    ("tamper", "named", "problem"),
    [
        (_rename_skill("../one"), "'../one'", "not a skill folder path"),
        (_rename_skill("/etc/passwd"), "'/etc/passwd'", "not a skill folder path"),
        (_rename_skill("a\\one"), "'a\\\\one'", "not a skill folder path"),
        (_rename_skill("o\x00ne"), "'o\\x00ne'", "not a skill folder path"),
        (_rename_skill(""), "''", "not a skill folder path"),
        (_rename_market("../dir-market"), "'../dir-market'", "not a market slug"),
        (_rename_market("Dir-Market"), "'Dir-Market'", "not a market slug"),
        (_set_skill(digest="md5:1234"), "'one'", "digest"),
        (_set_skill(digest="sha256:" + "A" * 64), "'one'", "digest"),
        (_set(commit="--upload-pack=touch /tmp/pwned"), "'dir-market'", "commit"),
        (_set(commit="HEAD~1"), "'dir-market'", "commit"),
        (_set(version=7), "'dir-market'", "version"),
        (_set(location="a\nb"), "'dir-market'", "location"),
        (_set(skills=["one"]), "'dir-market'", "skills"),
        (_set_skill(name=["x"]), "'one'", "name"),
        (_set_skill(dynamic="yes"), "'one'", "dynamic"),
        (_set(mirror="file:///srv/evil"), "'dir-market'", "unknown field 'mirror'"),
        (_set_skill(url="file:///etc/passwd"), "'one'", "unknown field 'url'"),
        (lambda data: data.update(extra=1), "harness.lock", "unknown field 'extra'"),
        (lambda data: data.update(lockfileVersion=2), "harness.lock", "lockfileVersion"),
        (lambda data: data.update(markets=[]), "harness.lock", "markets"),
    ],
)
async def test_a_malformed_lock_entry_is_refused_whole_naming_the_entry(
    tmp_path: Path, market: Path, tamper: Tamper, named: str, problem: str
) -> None:
    path = tmp_path / LOCKFILE_NAME
    data = await _locked(market, path)
    tamper(data)
    path.write_text(json.dumps(data))
    with pytest.raises(LockError) as refused:
        async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False):
            pass
    message = str(refused.value)
    assert str(path) in message and named in message and problem in message, message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ("lockfileVersion: 1\nmarkets: {}\n", "not JSON"),  # YAML is not a lockfile
        ("[" * 100_000 + "]" * 100_000, "nested"),
        ('{"lockfileVersion": 1, "markets": {}, "markets": {"x": 1}}', "'markets' given twice"),
        (
            f'{{"lockfileVersion": 1, "markets": {{"dir-market": {{"kind": "directory", "location": "dir-market", '
            f'"version": "{ZERO}", "skills": {{"one": {{"name": "one", "digest": "{ZERO}"}}, "one": {{"name": "one", '
            f'"digest": "{ZERO}"}}}}}}}}}}',
            "'one' given twice",
        ),
        ("\xff\xfe", "not JSON"),
    ],
)
async def test_a_malformed_lockfile_is_refused_whole(tmp_path: Path, market: Path, text: str, problem: str) -> None:
    path = tmp_path / LOCKFILE_NAME
    path.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    with pytest.raises(LockError) as refused:
        async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False):
            pass
    assert str(path) in str(refused.value) and problem in str(refused.value), refused.value


async def test_a_huge_lockfile_is_refused_before_it_is_parsed(tmp_path: Path, market: Path) -> None:
    from harness.pipeline.lock import MAX_LOCKFILE_SIZE

    path = tmp_path / LOCKFILE_NAME
    with path.open("w") as handle:  # valid JSON, one byte over the cap: refused for its size
        handle.write('{"lockfileVersion": 1, "markets": {}, "pad": "')
        handle.write("x" * (MAX_LOCKFILE_SIZE - handle.tell() - 1))
        handle.write('"}')
    with pytest.raises(LockError, match=f"larger than {MAX_LOCKFILE_SIZE} bytes"):
        async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False):
            pass


async def test_a_huge_or_nested_skills_lock_is_refused(tmp_path: Path, market: Path) -> None:
    from harness.pipeline.lock import MAX_LOCKFILE_SIZE

    path = tmp_path / LOCKFILE_NAME
    await _locked(market, path)
    pins = tmp_path / SKILLS_LOCK_NAME
    pins.write_text('{"version": 1, "skills": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(LockError, match="nested"):
        async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False):
            pass
    pins.write_text('{"version": 1, "skills": {}, "pad": "' + "x" * MAX_LOCKFILE_SIZE + '"}')
    with pytest.raises(LockError, match="larger than"):
        async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False):
            pass


def _drift(diagnostics: object) -> list[str]:
    return [d.message for d in diagnostics if d.code == "lock-drift" and d.severity == "error"]  # type: ignore[attr-defined]


async def test_a_changed_digest_holds_the_skill_back(tmp_path: Path, market: Path) -> None:
    path = tmp_path / LOCKFILE_NAME
    data = await _locked(market, path)
    _set_skill(digest=ZERO)(data)
    path.write_text(json.dumps(data))
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
    assert plan.find("one") is None
    assert any("'dir-market'" in m and "'one' drifted" in m and ZERO in m for m in _drift(plan.diagnostics))


@pytest.mark.parametrize(
    "location",
    ["file:///etc", "/etc", "https://evil.example/skills.git", "git+ssh://evil.example/skills.git", "dir-other"],
)
async def test_a_lock_written_for_another_location_holds_the_market_back(
    tmp_path: Path, market: Path, location: str
) -> None:
    path = tmp_path / LOCKFILE_NAME
    data = await _locked(market, path)
    _set(location=location)(data)
    path.write_text(json.dumps(data))
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
    assert plan.find("one") is None, "a lock of another location must not pin this market"
    messages = _drift(plan.diagnostics)
    assert any("'dir-market'" in m and repr(location) in m and "'one'" in m for m in messages), messages


async def test_a_lock_written_for_another_kind_holds_the_market_back(tmp_path: Path, market: Path) -> None:
    path = tmp_path / LOCKFILE_NAME
    data = await _locked(market, path)
    _set(kind="git", commit="a" * 40)(data)
    path.write_text(json.dumps(data))
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
    assert plan.find("one") is None
    assert any("'dir-market'" in m and "git" in m and "directory" in m for m in _drift(plan.diagnostics))


async def test_a_local_well_known_site_locked_elsewhere_is_held_back(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    site.add("hello", b"---\nname: hello\ndescription: the hello skill\n---\nHi.\n")
    path = tmp_path / LOCKFILE_NAME
    async with WellKnownRepository(site.root) as repo:
        locked = await lock_market(repo, source=repo.source)
    Lockfile(markets={"wk-site": locked}).write(path)
    data = json.loads(path.read_text())
    data["markets"]["wk-site"]["location"] = str(tmp_path / "elsewhere")
    path.write_text(json.dumps(data))
    async with local_pipeline(tmp_path / "ws", WellKnownRepository(site.root), lock=path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
    assert plan.find("hello") is None
    assert any("'wk-site'" in m and "elsewhere" in m for m in _drift(plan.diagnostics)), plan.diagnostics


async def test_a_locked_market_that_is_not_configured_is_reported(tmp_path: Path, market: Path) -> None:
    path = tmp_path / LOCKFILE_NAME
    data = await _locked(market, path)
    data["markets"]["git-evil-skills"] = {**_market(data), "kind": "git", "location": "file:///srv/evil.git"}
    path.write_text(json.dumps(data))
    async with local_pipeline(tmp_path / "ws", DirectoryRepository(market), lock=path, watch=False) as pipeline:
        plan = await pipeline.prepare(ADA)
    assert plan.find("one") is not None  # the configured market is served as locked
    messages = _drift(plan.diagnostics)
    assert any("'git-evil-skills'" in m and "not configured" in m for m in messages), messages

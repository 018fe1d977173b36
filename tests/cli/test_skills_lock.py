"""``harness skills lock|update`` and ``show --origin`` through the CLI, offline: a git market
force-pushed under the lock, a well-known market over a local HTTP server, drift and the diff, and
an MCP server's skills, locked by their listings (a dynamic one as dynamic)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.pipeline import GitRemote, write_skill
from tests.support.skills_server import SkillsServer
from tests.support.wellknown import Site, serve


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _md(name: str, body: str) -> bytes:
    return f"---\nname: {name}\ndescription: the {name} skill\n---\n{body}\n".encode()


def test_lock_update_and_drift_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.skill("review", description="Locked review.")
    locked = remote.commit("first")
    market = tmp_path / "market"
    write_skill(market, "folder-skill", script="echo 1\n")
    config = tmp_path / "harness.yaml"
    config.write_text(
        f"workspace: {tmp_path / 'ws'}\n"
        f"repositories:\n  - git+{remote.url}#cache_dir={tmp_path / 'cache'}\n  - dir:{market}\n"
        "lock: true\n"
    )
    code, out, err = _run(capsys, "skills", "lock", "--config", str(config), "--json")
    assert code == 0, err
    written = json.loads((tmp_path / "harness.lock").read_text())
    git_slug = next(slug for slug, m in written["markets"].items() if m["kind"] == "git")
    assert written["markets"][git_slug]["commit"] == locked
    assert {c["change"] for c in json.loads(out)["changes"]} == {"added"}

    # The branch is force-pushed and the folder market drifts.
    remote.skill("review", description="Rewritten review.")
    remote.git("add", "-A")
    remote.git("commit", "--quiet", "--amend", "-m", "rewritten")
    remote.git("push", "--quiet", "--force", "origin", "HEAD:refs/heads/main")
    (market / "folder-skill" / "scripts" / "run.sh").write_text("echo 2\n")

    code, out, err = _run(capsys, "skills", "list", "--config", str(config), "--json")
    listed = json.loads(out)
    by_name = {s["name"]: s for s in listed["skills"]}
    assert by_name["review"]["description"] == "Locked review."
    assert "folder-skill" not in by_name
    drift = [d for d in listed["diagnostics"] if d["code"] == "lock-drift"]
    assert len(drift) == 1 and "folder-skill" in drift[0]["message"] and "dir-market" in drift[0]["message"]

    code, out, err = _run(capsys, "skills", "show", "review", "--config", str(config), "--origin")
    assert code == 1 and "[lock-drift]" in err  # the drift is an error of the turn, so exit 1
    assert f"version:   {locked}" in out and "digest:    sha256:" in out and "market " + git_slug in out

    code, out, err = _run(capsys, "skills", "update", "dir-market", "--config", str(config))
    assert code == 0, err
    assert out.splitlines()[0].startswith("~ dir-market/folder-skill sha256:") and " -> sha256:" in out
    code, out, err = _run(capsys, "skills", "list", "--config", str(config), "--json")
    by_name = {s["name"]: s for s in json.loads(out)["skills"]}
    assert code == 0 and set(by_name) == {"review", "folder-skill"}
    assert by_name["review"]["description"] == "Locked review."  # only dir-market moved

    code, out, err = _run(capsys, "skills", "update", "--config", str(config))
    assert code == 0, err
    assert f"~ {git_slug}/review" in out
    code, out, err = _run(capsys, "skills", "update", "nope", "--config", str(config))
    assert code == 2 and "no market 'nope'" in err


def test_a_well_known_market_added_by_url_and_locked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = Site(tmp_path / "site")
    site.add("hello", _md("hello", "Say hello."))
    ws = tmp_path / "ws"
    with serve(site.root) as base:
        url = base + "#check_interval=0"
        code, out, err = _run(capsys, "skills", "list", "--workspace", str(ws), "--repo", url, "--json")
        assert code == 0, err
        assert [s["name"] for s in json.loads(out)["skills"]] == ["hello"]
        lock = tmp_path / "harness.lock"
        code, out, err = _run(capsys, "skills", "lock", "--workspace", str(ws), "--repo", url, "--lockfile", str(lock))
        assert code == 0, err
        assert "+ wk-127.0.0.1/hello sha256:" in out
        site.add("hello", _md("hello", "Changed."))
        code, out, err = _run(
            capsys,
            "skills",
            "list",
            "--workspace",
            str(ws),
            "--repo",
            url,
            "--json",
            "--locked",
            "--config",
            str(_config(tmp_path, lock)),
        )
        listed = json.loads(out)
        assert listed["skills"] == [] and any(d["code"] == "lock-drift" for d in listed["diagnostics"])


def _config(tmp_path: Path, lock: Path) -> Path:
    config = tmp_path / "locked.yaml"
    config.write_text(f"lock: {lock}\n")
    return config


def test_a_dynamic_mcp_skill_is_locked_as_dynamic_through_the_cli(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # capfd: the MCP SDK hands the server process the real stderr, which capsys does not have.
    server = SkillsServer(tmp_path / "server")
    server.add("alpha", {"SKILL.md": _md("alpha", "Listed."), "notes.md": "a\n"})
    server.add("daily", {"SKILL.md": _md("daily", "Made fresh."), "notes.md": "d\n"})
    server.configure(dynamic=["daily"])
    market = "mcp+stdio:" + shlex.join(server.command) + "#source=srv"
    config = tmp_path / "harness.yaml"
    config.write_text(
        f"workspace: {tmp_path / 'ws'}\nmarket_timeout: 120\nrepositories:\n  - {json.dumps(market)}\nlock: true\n"
    )
    code, out, err = _run(capfd, "skills", "lock", "--config", str(config))
    assert code == 0, err
    assert "srv/daily: dynamic" in out and "served unpinned" in out
    written = json.loads((tmp_path / "harness.lock").read_text())["markets"]["srv"]["skills"]
    assert written["daily"] == {"dynamic": True, "name": "daily"} and written["alpha"]["digest"].startswith("sha256:")
    assert server.reads() == []  # a listed skill is locked by its listing

    code, out, err = _run(capfd, "skills", "list", "--config", str(config), "--json")
    listed = json.loads(out)
    assert code == 0, err  # a warning, not drift
    assert {"alpha", "daily"} <= {s["name"] for s in listed["skills"]}
    assert [d["code"] for d in listed["diagnostics"] if d["code"].startswith("lock-")] == ["lock-dynamic"]

    code, out, err = _run(capfd, "skills", "show", "daily", "--config", str(config), "--origin")
    assert code == 0, err
    assert "digest:    dynamic" in out
    code, out, err = _run(capfd, "skills", "show", "alpha", "--config", str(config), "--origin")
    assert code == 0, err
    assert f"digest:    {written['alpha']['digest']}" in out
    assert "skill://daily/notes.md" not in server.reads() and server.count("resources/directory/read") == 0
    assert "skill://alpha/notes.md" not in server.reads()


def test_a_tampered_lock_is_refused_by_name_and_skills_lock_writes_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    market = tmp_path / "market"
    write_skill(market, "one", script="echo 1\n")
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: {tmp_path / 'ws'}\nrepositories:\n  - dir:{market}\nlock: true\n")
    assert _run(capsys, "skills", "lock", "--config", str(config))[0] == 0
    lock = tmp_path / "harness.lock"
    data = json.loads(lock.read_text())
    data["markets"]["dir-market"]["skills"]["../one"] = data["markets"]["dir-market"]["skills"].pop("one")
    lock.write_text(json.dumps(data))
    code, out, err = _run(capsys, "skills", "list", "--config", str(config), "--json")
    refused = f"{lock}: not a harness lockfile: market 'dir-market': skill '../one': not a skill folder path"
    assert code == 1 and refused in err
    assert refused in json.loads(out)["error"]["message"]  # --json: the failure is a JSON document too
    code, out, err = _run(capsys, "skills", "lock", "--config", str(config))
    assert code == 0 and "not a harness lockfile" in err and "written anew" in err
    assert "+ dir-market/one sha256:" in out
    assert _run(capsys, "skills", "list", "--config", str(config))[0] == 0

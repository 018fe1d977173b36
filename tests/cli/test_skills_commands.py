"""``harness skills list|prompt|stage|show`` and ``harness market publish`` as commands."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.catalog import read_catalog
from tests.support.cli import run_harness
from tests.support.skills import make_skill


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args)


def _skill(root: Path, name: str, description: str) -> None:
    make_skill(
        root, name, description=description, body="Run scripts/go.sh\n", files={"scripts/go.sh": "#!/bin/sh\necho go\n"}
    )


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, market = tmp_path / "ws", tmp_path / "market"
    _skill(ws / "skills", "shared", "workspace & co")
    _skill(ws / "alice" / "skills", "shared", "alice's own")
    _skill(market, "tool", "Use the <tool>.")
    return ws, market


def test_list_json_shows_layers_roots_and_shadowing(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    result = _cli("skills", "list", "--json", "--workspace", str(ws), "--repo", f"dir:{market}", "--user", "alice")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    by_name = {s["name"]: s for s in data["skills"]}
    assert by_name["shared"]["layer"] == "user" and by_name["shared"]["skill_id"] == "shared_workspace-namespaced"
    assert by_name["tool"]["layer"] == "market"
    assert by_name["tool"]["files_root"] == str(ws / ".skills-cache" / by_name["tool"]["source"] / "tool")
    assert data["shadowed"][0]["loser"]["layer"] == "workspace"


def test_list_without_shell_has_no_files_root(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    data = json.loads(_cli("skills", "list", "--json", "--workspace", str(ws), "--fs", "local", "--user", "bob").stdout)
    assert [s["files_root"] for s in data["skills"]] == [None]


def test_prompt_prints_the_escaped_catalog(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    result = _cli("skills", "prompt", "--workspace", str(ws), "--repo", str(market), "--user", "bob")
    assert "<name>shared</name>\n<description>workspace &amp; co</description>" in result.stdout
    assert "<name>tool</name>\n<description>Use the &lt;tool&gt;.</description>" in result.stdout
    assert read_catalog(result.stdout).described == {"shared": "workspace & co", "tool": "Use the <tool>."}


def _rival_markets(tmp_path: Path) -> list[str]:
    """Two markets that both have ``tool``: the later one (``dir-second``) wins."""
    first, second = tmp_path / "first", tmp_path / "second"
    _skill(first, "tool", "The first market's tool.")
    _skill(second, "tool", "The second market's tool.")
    return ["--repo", f"dir:{first}", "--repo", f"dir:{second}"]


def test_list_json_says_by_which_id_a_shadowed_skill_still_loads(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _skill(ws / "alice" / "skills", "tool", "Alice's own tool.")
    result = _cli("skills", "list", "--json", "--workspace", str(ws), *_rival_markets(tmp_path), "--user", "alice")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    [tool] = [s for s in data["skills"] if s["name"] == "tool"]
    assert tool["skill_id"] == tool["catalog_id"] == "tool_workspace-namespaced"
    losers = {s["loser"]["skill_id"]: s["load_id"] for s in data["shadowed"]}
    assert losers == {"tool_dir-first": "tool_dir-first", "tool_dir-second": "tool_dir-second"}
    text = _cli("skills", "list", "--workspace", str(ws), *_rival_markets(tmp_path), "--user", "alice").stdout
    assert "still loads by id tool_dir-first" in text and "still loads by id tool_dir-second" in text


def test_show_loads_a_shadowed_skill_by_its_full_id_and_the_name_means_the_winner(tmp_path: Path) -> None:
    common = ["--workspace", str(tmp_path / "ws"), *_rival_markets(tmp_path), "--user", "bob"]
    assert "The first market's tool." in _cli("skills", "show", "tool_dir-first", *common).stdout
    assert "The second market's tool." in _cli("skills", "show", "tool", *common).stdout
    assert "The first market's tool." in _cli("skills", "show", "tool_first", *common).stdout  # the short label
    prompt = read_catalog(_cli("skills", "prompt", *common).stdout)
    assert [s.skill_id for s in prompt.skills] == ["tool_second"] and prompt.shadowed == ["tool_first"]


def test_stage_twice_writes_nothing_the_second_time(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    first = json.loads(_cli("skills", "stage", "--json", "--workspace", str(ws), "--repo", str(market)).stdout)
    second = json.loads(_cli("skills", "stage", "--json", "--workspace", str(ws), "--repo", str(market)).stdout)
    assert first["written"] == 2 and second["written"] == 0 and second["unchanged"] == 2
    (ws / ".skills-cache").joinpath(
        next(p.name for p in (ws / ".skills-cache").iterdir() if not p.name.startswith(".")), "tool", "SKILL.md"
    ).unlink()
    repaired = json.loads(
        _cli("skills", "stage", "--json", "--verify", "--workspace", str(ws), "--repo", str(market)).stdout
    )
    assert repaired["written"] == 1
    emptied = json.loads(_cli("skills", "stage", "--json", "--workspace", str(ws)).stdout)
    assert emptied["removed"] == 2 and (ws / "alice" / "skills" / "shared" / "SKILL.md").exists()


def test_show_returns_the_original_file_and_refuses_escapes(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    shown = _cli("skills", "show", "shared", "--workspace", str(ws), "--user", "alice")
    assert shown.stdout.startswith("---\nname: shared\ndescription: alice's own")
    refused = _cli("skills", "show", "shared", "--path", "../../etc/passwd", "--workspace", str(ws), "--user", "alice")
    assert refused.returncode == 1 and "available paths: SKILL.md, scripts/go.sh" in refused.stderr


def test_bad_user_id_is_a_usage_error(tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)
    result = _cli("skills", "list", "--workspace", str(ws), "--user", "../bob")
    assert result.returncode == 2 and "user" in result.stderr


def test_market_publish_validates_then_uploads_to_mysql(tmp_path: Path, mysql_dsn: str) -> None:
    table = f"skills_{uuid.uuid4().hex[:8]}"
    url = f"{mysql_dsn}?table={table}"
    good = tmp_path / "good"
    _skill(good, "tool", "A tool.")
    bad = tmp_path / "bad"
    _skill(bad, "Bad", "x")
    refused = _cli("market", "publish", str(bad), "--repo", url)
    assert refused.returncode == 1 and "must be lowercase" in refused.stdout
    try:
        published = _cli("market", "publish", str(good), "--repo", url)
        assert published.returncode == 0, published.stderr
        listed = json.loads(_cli("skills", "list", "--json", "--workspace", str(tmp_path / "ws"), "--repo", url).stdout)
        assert [s["name"] for s in listed["skills"]] == ["tool"]
    finally:
        subprocess.run([sys.executable, "-c", _DROP, mysql_dsn, table], check=False, capture_output=True, timeout=60)


_DROP = """
import sys, anyio, aiomysql
from repositories.mysql import parse_mysql_dsn
async def main():
    opts = parse_mysql_dsn(sys.argv[1])
    conn = await aiomysql.connect(host=opts.get('host', '127.0.0.1'), port=int(opts.get('port', 3306)), user=opts.get('user', 'root'), password=opts.get('password', ''), db=opts.get('database') or opts.get('db'))
    async with conn.cursor() as cur:
        for suffix in ('', '_files', '_generation'):
            await cur.execute(f'DROP TABLE IF EXISTS `{sys.argv[2]}{suffix}`')
    conn.close()
anyio.run(main)
"""


def _down_git_market(tmp_path: Path) -> str:
    """A git URL to a bare repository that was removed: the market is down."""
    bare = tmp_path / "gone.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    url = "git+" + bare.as_uri()
    subprocess.run(["rm", "-rf", str(bare)], check=True)
    return url


def _down_mysql_market() -> str:
    import socket

    with socket.socket() as sock:  # a port where nothing listens once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"mysql://harness:secret@127.0.0.1:{port}/skills?connect_timeout=2"


def _down_markets(tmp_path: Path) -> list[str]:
    return [_down_git_market(tmp_path), _down_mysql_market()]


def test_stage_json_carries_the_diagnostics_of_markets_that_are_down_and_exits_1(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    down = _down_markets(tmp_path)
    result = _cli(
        "skills", "stage", "--json", "--workspace", str(ws), "--repo", str(market), "--repo", down[0], "--repo", down[1]
    )
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    unavailable = [d for d in data["diagnostics"] if d["code"] == "market-unavailable"]
    assert len(unavailable) == 2 and all(d["severity"] == "error" for d in unavailable)
    assert "secret" not in result.stdout
    assert (ws / ".skills-cache").is_dir()


def test_list_show_and_prompt_exit_1_while_a_market_is_down_but_still_print(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    for down in _down_markets(tmp_path):
        common = ["--workspace", str(ws), "--repo", str(market), "--repo", down, "--user", "bob"]
        listing = _cli("skills", "list", "--json", *common)
        assert listing.returncode == 1, listing.stderr
        assert any(d["code"] == "market-unavailable" for d in json.loads(listing.stdout)["diagnostics"])
        prompt = _cli("skills", "prompt", *common)
        assert prompt.returncode == 1 and "<name>tool</name>" in prompt.stdout
        show = _cli("skills", "show", "tool", *common)
        assert show.returncode == 1 and "name: tool" in show.stdout


def test_list_exits_0_when_every_market_answers(tmp_path: Path) -> None:
    ws, market = _workspace(tmp_path)
    result = _cli("skills", "list", "--workspace", str(ws), "--repo", str(market), "--user", "bob")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_configuration_error_exits_2(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text("max_file_size: -1\n")
    result = _cli("skills", "list", "--config", str(tmp_path / "harness.yaml"))
    assert result.returncode == 2 and "max_file_size" in result.stderr

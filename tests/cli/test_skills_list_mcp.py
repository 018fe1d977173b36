"""``harness skills list`` over an MCP market: the catalog from the listing alone, with each
skill's origin, and no file read."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.support.cli import run_harness
from tests.support.skills_server import SkillsServer


def test_skills_list_shows_origins_and_reads_no_file(tmp_path: Path) -> None:
    server = SkillsServer(tmp_path / "server")
    for path in ("team-a/dupe", "team-b/dupe"):
        server.add(path, {"SKILL.md": f"---\nname: dupe\ndescription: From {path}.\n---\nBody.\n", "x.txt": "x\n"})
    market = "mcp+stdio:" + shlex.join(server.command) + "#source=srv"
    argv = ["skills", "list", "--workspace", str(tmp_path / "ws"), "--repo", market]
    listed, shown = run_harness(*argv, "--json"), run_harness(*argv)
    assert listed.returncode == shown.returncode == 0, listed.stderr + shown.stderr
    text = shown.stdout
    data = json.loads(listed.stdout)
    skills = [s for s in data["skills"] if s["name"] == "dupe"]
    shadowed = [s["loser"] for s in data["shadowed"] if s["name"] == "dupe"]
    ids = sorted([s["skill_id"] for s in skills] + [s["skill_id"] for s in shadowed])
    assert ids == ["dupe_srv.team-a", "dupe_srv.team-b"]  # both reachable, neither dropped
    assert skills[0]["origin"] == {"server": "srv", "uri": "skill://team-a/dupe/SKILL.md"}
    assert "from MCP server srv: skill://team-a/dupe/SKILL.md" in text
    assert "load_id" in data["shadowed"][0] and data["shadowed"][0]["load_id"] == "dupe_srv.team-b"
    assert server.reads() == []  # listing never sends resources/read

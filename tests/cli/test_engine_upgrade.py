"""``harness engine upgrade``: a run blocked by its guardrails continues on a new skill version."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_harness
from tests.support.skills import make_skill

WORKFLOW = """\
name: sync
description: Fetch, then push.
goal: {statement: Data pushed.}
tools:
  - {id: fetch, kind: function, side_effect: read}
  - {id: push, kind: function, side_effect: write}
orchestration:
  mode: deterministic
  entry: fetch
  steps:
    - {id: fetch, action: {type: call_tool, ref: fetch}, next: push}
    - {id: push, action: {type: call_tool, ref: push}, next: null}
"""


def _skill(root: Path, allowed: list[str]) -> Path:
    files = {"workflow.yaml": WORKFLOW, "guardrails.yaml": f"allowed_tools: {json.dumps(allowed)}\n"}
    return make_skill(root, "sync", description="Sync data.", body="A workflow.\n", files=files)


def _engine(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness("engine", *args, timeout=60)


def test_upgrade_unblocks_a_guardrail_block_and_refuses_while_pending(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    old = _skill(tmp_path / "v1", ["fetch"])
    new = _skill(tmp_path / "v2", ["fetch", "push"])
    assert _engine("run", str(old), "--workspace", str(ws), "--run-id", "r1").returncode == 0
    refused = _engine("upgrade", "--run-id", "r1", str(new), "--workspace", str(ws))
    assert refused.returncode == 1 and "pending" in refused.stderr
    blocked = _engine(
        "continue", "--run-id", "r1", "--status", "succeeded", "--summary", "fetched", "--workspace", str(ws), "--json"
    )
    document = json.loads(blocked.stdout)
    assert document["status"] == "blocked" and document["blocked"]["kind"] == "guardrail"
    upgraded = _engine("upgrade", "--run-id", "r1", str(new), "--workspace", str(ws), "--json")
    assert upgraded.returncode == 0, upgraded.stderr
    after = json.loads(upgraded.stdout)
    assert after["status"] == "running" and after["pending"]["step_id"] == "push"

"""The workspace options every command group shares: ``--config`` (remote and sandbox modes),
one ``--workspace`` default, ``--user`` on ``skills stage``, JSON that parses, store schemes."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from filesystems import (
    AbstractFilesystem,
    KeyValueStore,
    RemoteFilesystem,
    SQLiteKeyValueStore,
    register_store,
)
from harness.cli import build_parser, main
from harness.cli.common import config_from_args
from harness.context import RuntimeContext
from harness.learning import SelfLearning
from tests.support.skills import make_skill

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "code-review"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _remote_config(tmp_path: Path) -> Path:
    config = tmp_path / "remote.yaml"
    config.write_text("workspace: ws\nfilesystem: {mode: remote, store: 'sqlite:///store.db'}\n")
    return config


def _sandbox_config(tmp_path: Path) -> Path:
    config = tmp_path / "sandbox.yaml"
    config.write_text("workspace: ws\nfilesystem: sandbox\n")
    return config


def _with_remote(tmp_path: Path, action: object) -> None:
    """Run ``action(fs)`` against the store the remote config names (agent ``assistant``)."""

    async def go() -> None:
        async with RemoteFilesystem(SQLiteKeyValueStore(tmp_path / "store.db"), agent_id="assistant") as fs:
            await action(fs)  # type: ignore[operator]

    asyncio.run(go())


async def _put_skill(fs: AbstractFilesystem) -> None:
    await fs.write_text("skills/remote-only/SKILL.md", "---\nname: remote-only\ndescription: In the store.\n---\nx\n")


async def _propose_draft(fs: AbstractFilesystem) -> None:
    await SelfLearning(fs).workshop(RuntimeContext(user_id="alice")).propose_skill("stored", "d", "b")


def test_skills_list_with_a_remote_config_reads_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _with_remote(tmp_path, _put_skill)
    code, out, err = _run(capsys, "skills", "list", "--config", str(_remote_config(tmp_path)), "--json")
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["skills"]] == ["remote-only"]
    assert not (tmp_path / "ws" / "skills").exists()


def test_engine_with_a_remote_config_keeps_runs_in_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(_remote_config(tmp_path))
    code, out, err = _run(capsys, "engine", "run", str(EXAMPLE), "--config", config, "--user", "alice", "--json")
    assert code == 0, err
    started = json.loads(out)
    assert f"--config {config}" in started["next"]
    code, out, err = _run(
        capsys, "engine", "show", "--run-id", started["run_id"], "--config", config, "--user", "alice", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["current_step"] == started["current_step"]
    assert not (tmp_path / "ws" / "alice").exists()


def test_learning_commands_with_a_remote_config_see_drafts_in_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_remote(tmp_path, _propose_draft)
    config = str(_remote_config(tmp_path))
    # A store keeps user areas out of the shared listing, so name the user.
    code, out, err = _run(capsys, "skills", "drafts", "--config", config, "--user", "alice", "--json")
    assert code == 0, err
    assert [(d["user"], d["name"]) for d in json.loads(out)["drafts"]] == [("alice", "stored")]


def test_every_group_runs_in_a_sandbox_config(
    sandbox_dir: Path, capsys: pytest.CaptureFixture[str], bwrap: str
) -> None:
    tmp_path = sandbox_dir
    config = str(_sandbox_config(tmp_path))
    (tmp_path / "ws" / "skills" / "boxed").mkdir(parents=True)
    (tmp_path / "ws" / "skills" / "boxed" / "SKILL.md").write_text("---\nname: boxed\ndescription: d\n---\nx\n")
    code, out, err = _run(capsys, "skills", "list", "--config", config, "--json")
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["skills"]] == ["boxed"]
    code, out, err = _run(
        capsys, "engine", "run", str(EXAMPLE), "--config", config, "--user", "alice", "--run-id", "r1"
    )
    assert code == 0, err
    assert (tmp_path / "ws" / "alice" / ".harness" / "runs" / "r1" / "run.json").is_file()
    assert _run(capsys, "skills", "drafts", "--config", config, "--json")[0] == 0


WORKSPACE_COMMANDS = [
    ["skills", "list"],
    ["skills", "prompt"],
    ["skills", "stage"],
    ["skills", "show", "x"],
    ["skills", "drafts"],
    ["skills", "promote", "x", "--reviewer", "r"],
    ["skills", "review", "x", "--reviewer", "r", "--approve"],
    ["skills", "audit"],
    ["skills", "curate"],
    ["engine", "run", "x"],
    ["engine", "continue", "--run-id", "r"],
    ["engine", "check", "--run-id", "r"],
    ["engine", "show", "--run-id", "r"],
    ["engine", "upgrade", "--run-id", "r", "x"],
    ["engine", "cancel", "--run-id", "r"],
    ["run", "hello"],
]


@pytest.mark.parametrize("argv", WORKSPACE_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_every_workspace_command_defaults_to_dot_workspace(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(argv)
    assert config_from_args(args).workspace == tmp_path / "workspace"


@pytest.mark.parametrize("argv", WORKSPACE_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_every_workspace_command_takes_the_configs_workspace(argv: list[str], tmp_path: Path) -> None:
    args = build_parser().parse_args([*argv, "--config", str(_remote_config(tmp_path)), "--user", "alice"])
    config = config_from_args(args)
    assert (config.workspace, config.filesystem) == ((tmp_path / "ws").resolve(), "remote")


def test_workspace_option_wins_over_the_config(tmp_path: Path) -> None:
    argv = ["skills", "list", "--config", str(_remote_config(tmp_path)), "--workspace", str(tmp_path / "other")]
    assert config_from_args(build_parser().parse_args(argv)).workspace == tmp_path / "other"


def test_engine_run_without_workspace_stores_runs_in_dot_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "engine", "run", str(EXAMPLE), "--run-id", "r1")
    assert code == 0, err
    assert (tmp_path / "workspace" / ".harness" / "runs" / "r1" / "run.json").is_file()
    assert "--workspace workspace" in out


def _user_with_a_broken_skill(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "alice" / "skills" / "broken").mkdir(parents=True)
    (ws / "alice" / "skills" / "broken" / "SKILL.md").write_text("---\nname: [unclosed\n---\n")
    return ws


def test_stage_with_user_reports_that_users_diagnostics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _user_with_a_broken_skill(tmp_path)
    code, out, err = _run(capsys, "skills", "stage", "--workspace", str(ws), "--user", "alice", "--json")
    assert code == 1, err
    assert any("broken" in d["location"] + d["message"] for d in json.loads(out)["diagnostics"])


def test_stage_without_user_reports_only_staging(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _user_with_a_broken_skill(tmp_path)
    code, out, err = _run(capsys, "skills", "stage", "--workspace", str(ws), "--json")
    assert code == 0, err
    assert json.loads(out)["diagnostics"] == []


def test_stage_help_says_staging_is_the_same_for_every_user(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["skills", "stage", "--help"])
    assert "same for every user" in " ".join(capsys.readouterr().out.split())


def _json_commands(tmp_path: Path) -> list[list[str]]:
    ws = ["--workspace", str(tmp_path / "ws")]
    return [
        ["skills", "validate", str(EXAMPLE)],
        ["skills", "list", *ws],
        ["skills", "stage", *ws],
        ["skills", "drafts", *ws],
        ["skills", "audit", *ws],
        ["skills", "curate", "--dry-run", *ws],
        ["engine", "run", str(EXAMPLE), "--run-id", "r1", *ws],
        ["engine", "show", "--run-id", "r1", *ws],
        ["engine", "check", "--run-id", "r1", "--scope", "step", *ws],
    ]


def test_every_json_output_parses_and_is_ascii(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ws" / "skills" / "naïve").mkdir(parents=True)
    (tmp_path / "ws" / "skills" / "naïve" / "SKILL.md").write_text("---\nname: naïve\ndescription: Ünïcode.\n---\n")
    for argv in _json_commands(tmp_path):
        code, out, err = _run(capsys, *argv, "--json")
        assert code in (0, 1), (argv, err)
        json.loads(out)
        assert out.isascii(), argv


def _store_at(url: str) -> KeyValueStore:
    return SQLiteKeyValueStore(url.split(":", 1)[1])


def test_a_registered_store_scheme_works_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheme = f"kv-{uuid.uuid4().hex[:8]}"
    register_store(scheme, _store_at)
    _with_remote(tmp_path, _put_skill)
    store = f"{scheme}:{tmp_path / 'store.db'}"
    code, out, err = _run(capsys, "skills", "list", "--fs", "remote", "--store", store, "--workspace", str(tmp_path))
    assert code == 0, err
    assert "remote-only" in out


def test_an_unknown_store_scheme_is_a_usage_error_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = "nosuch://admin:hunter2@db/x"
    code, _, err = _run(capsys, "skills", "list", "--fs", "remote", "--store", store, "--workspace", str(tmp_path))
    assert code == 2
    assert "unknown store scheme" in err and "sqlite" in err and "hunter2" not in err


def _global_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two global folders sharing ``lint``; each also has a skill of its own."""
    first, second = tmp_path / "harness-skills", tmp_path / "agents-skills"
    make_skill(first, "lint", description="From the first folder.")
    make_skill(first, "only-first")
    make_skill(second, "lint", description="From the second folder.")
    make_skill(second, "only-second")
    return first, second


def test_global_dir_is_repeatable_and_a_later_folder_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _global_folders(tmp_path)
    argv = ["skills", "list", "--workspace", str(tmp_path / "ws"), "--json"]
    code, out, err = _run(capsys, *argv, "--global-dir", str(first), "--global-dir", str(second))
    assert code == 0, err
    listed = json.loads(out)
    by_name = {s["name"]: s for s in listed["skills"]}
    assert set(by_name) == {"lint", "only-first", "only-second"}
    assert (by_name["lint"]["description"], by_name["lint"]["source"]) == ("From the second folder.", "global_2")
    assert by_name["only-first"]["source"] == "global"
    [shadow] = listed["shadowed"]
    assert shadow["winner"]["source"] == "global_2" and shadow["loser"]["source"] == "global"


def test_global_dir_options_replace_the_configs_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _global_folders(tmp_path)
    config = tmp_path / "harness.yaml"
    config.write_text(f"workspace: ws\nglobal_skills_dir: [{first}]\n")
    code, out, err = _run(capsys, "skills", "list", "--config", str(config), "--global-dir", str(second), "--json")
    assert code == 0, err
    assert {s["name"]: s["source"] for s in json.loads(out)["skills"]} == {"lint": "global", "only-second": "global"}

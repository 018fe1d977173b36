"""SandboxFilesystem: what a command inside bubblewrap can and cannot reach."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from filesystems import PathEscapeError, SandboxFilesystem, SandboxLimits, SandboxUnavailable
from filesystems.sandbox import LOOPBACK_HOSTS
from harness.config import load_config
from harness.errors import ConfigError
from tests.support.filesystems import shared_dir

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
async def workspace(sandbox_dir: Path) -> AsyncIterator[SandboxFilesystem]:
    async with SandboxFilesystem(sandbox_dir, output_limit=16384) as fs:
        await fs.write_text("AGENTS.md", "# agents\n")
        await fs.write_text("skills/shared/SKILL.md", "shared skill")
        await fs.write_text("skills/shared/scripts/run.sh", "#!/bin/sh\necho ran shared\n", mode=0o755)
        await fs.write_text("skills/both/SKILL.md", "workspace version")
        await fs.write_text("skills/both/only-in-workspace.txt", "w")
        await fs.write_text("knowledge/facts.md", "facts")
        await fs.write_text(".skills-cache/git-x/tool/scripts/go.py", "print('go')\n", mode=0o755)
        yield fs


async def test_sandbox_runs_as_an_unprivileged_uid_when_root(workspace: SandboxFilesystem) -> None:
    if os.geteuid() != 0:
        pytest.skip("only meaningful when the harness runs as root")
    result = await workspace.scoped("alice").run("id -u; id -g")
    assert result.stdout.split() == ["65534", "65534"]


async def test_etc_shadow_and_root_only_files_are_unreadable(workspace: SandboxFilesystem, sandbox_dir: Path) -> None:
    secret = sandbox_dir / "knowledge" / "root-only.txt"
    secret.write_text("top secret")
    secret.chmod(0o600)
    alice = workspace.scoped("alice")
    assert not (await alice.run("cat /etc/shadow")).ok
    assert not (await alice.run("ls /etc/ssh /root")).stdout.strip()
    result = await alice.run("cat /workspace/knowledge/root-only.txt")
    if os.geteuid() == 0:
        assert not result.ok and "top secret" not in result.stdout
    assert (await alice.run("cat /workspace/knowledge/facts.md")).stdout == "facts"


async def test_another_users_area_is_unreachable_through_the_shell(
    workspace: SandboxFilesystem,
) -> None:
    alice, bob = workspace.scoped("alice"), workspace.scoped("bob")
    await bob.write_text("diary.txt", "bob's secret")
    await alice.write_text("mine.txt", "alice")
    result = await alice.run(
        "cat /workspace/../bob/diary.txt; "
        "find / -path /proc -prune -o -name diary.txt -print 2>/dev/null; "
        'grep -rs "bob\'s secret" /workspace /tmp /dev/shm 2>/dev/null; echo end',
        timeout=60,
    )
    assert "bob's secret" not in result.stdout
    assert result.stdout.endswith("end\n")
    assert (await alice.run("cat mine.txt")).stdout == "alice"


async def test_a_symlink_to_a_host_file_leads_nowhere(workspace: SandboxFilesystem, sandbox_dir: Path) -> None:
    alice = workspace.scoped("alice")
    await alice.write_text("placeholder", "")
    os.symlink("/etc/hostname", sandbox_dir / "alice" / "host-link")
    os.symlink("../bob/diary.txt", sandbox_dir / "alice" / "bob-link")
    await workspace.scoped("bob").write_text("diary.txt", "bob's secret")
    result = await alice.run("cat host-link bob-link")
    assert not result.ok and "bob's secret" not in result.stdout
    with pytest.raises(PermissionError):
        await alice.read_bytes("bob-link")


async def test_projected_roots_are_readable_but_not_writable(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    assert (await alice.run("cat /workspace/AGENTS.md")).stdout == "# agents\n"
    for target in (
        "/workspace/skills/shared/SKILL.md",
        "/workspace/AGENTS.md",
        "/workspace/knowledge/facts.md",
        "/workspace/.skills-cache/git-x/tool/scripts/go.py",
    ):
        result = await alice.run(f"echo tampered > {target}")
        assert not result.ok, target
    assert not (await alice.run("rm -rf /workspace/skills/shared")).ok
    assert not (await alice.run("chmod 777 /workspace/skills/shared/SKILL.md")).ok
    assert await workspace.read_text("skills/shared/SKILL.md") == "shared skill"


async def test_projected_scripts_keep_their_exec_bits(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    result = await alice.run("/workspace/skills/shared/scripts/run.sh")
    assert result.stdout == "ran shared\n", result.stderr
    cache = workspace.shell_path(".skills-cache/git-x/tool/scripts/go.py")
    assert cache == "/workspace/.skills-cache/git-x/tool/scripts/go.py"
    result = await alice.run(f"test -x {cache} && python3 {cache}")
    assert result.stdout == "go\n", result.stderr


async def test_user_skills_merge_over_workspace_skills_whole(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    await alice.write_text("skills/both/SKILL.md", "alice's version")
    await alice.write_text("skills/own/SKILL.md", "alice's own")
    result = await alice.run("ls /workspace/skills; cat /workspace/skills/both/SKILL.md")
    assert result.stdout.split() == ["both", "own", "shared", "alice's", "version"]
    assert not (await alice.run("test -e /workspace/skills/both/only-in-workspace.txt")).ok
    assert alice.shell_path("skills/own") == "/workspace/skills/own"


async def test_user_skills_are_read_only_inside_and_change_through_the_filesystem(
    workspace: SandboxFilesystem,
) -> None:
    alice = workspace.scoped("alice")
    await alice.write_text("skills/own/SKILL.md", "alice's own")
    result = await alice.run("echo note > /workspace/skills/own/notes.md")
    assert not result.ok and "Read-only" in result.stderr
    assert not await alice.exists("skills/own/notes.md")
    await alice.write_text("skills/own/notes.md", "note")
    assert (await alice.run("cat /workspace/skills/own/notes.md")).stdout == "note"


async def test_protected_folders_are_read_only_and_their_parents_cannot_be_moved(
    workspace: SandboxFilesystem, sandbox_dir: Path
) -> None:
    workspace.protect([".agents/skills", "team/skills/x", "knowledge/skills"])
    alice = workspace.scoped("alice")
    await alice.write_text(".agents/skills/own/SKILL.md", "alice's own")
    for command in (
        "echo x > .agents/skills/own/SKILL.md",
        "mkdir .agents/skills/new",
        "mv .agents aside",
        "mv .agents/skills .agents/old",
        "mkdir team/skills/x/new",
        "mv team elsewhere",
    ):
        assert not (await alice.run(command)).ok, command
    assert (await alice.run("echo kept > .agents/note.txt && cat /workspace/knowledge/facts.md")).stdout == "facts"
    assert (sandbox_dir / "alice" / ".agents" / "note.txt").read_text() == "kept\n"
    assert await alice.read_text(".agents/skills/own/SKILL.md") == "alice's own"
    assert (sandbox_dir / "alice" / "team" / "skills" / "x").is_dir()  # created by the harness


async def test_a_link_at_a_protected_folder_refuses_the_command(
    workspace: SandboxFilesystem, sandbox_dir: Path
) -> None:
    workspace.protect([".claude/skills"])
    alice = workspace.scoped("alice")
    await alice.write_text("elsewhere/skills/x/SKILL.md", "x")
    (sandbox_dir / "alice" / ".claude").symlink_to(sandbox_dir / "alice" / "elsewhere")
    with pytest.raises(PathEscapeError, match="'.claude' in the user's area is a link"):
        await alice.run("true")


async def test_host_changes_show_in_the_next_command(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    assert (await alice.run("test -d /workspace/skills/shared")).ok
    await workspace.delete("skills/shared")
    await workspace.write_text("skills/fresh/SKILL.md", "new")
    result = await alice.run("ls /workspace/skills")
    assert result.stdout.split() == ["both", "fresh"]


HIDDEN = ".skills-cache/git-x/tool"


async def test_a_hidden_folder_is_absent_however_the_command_spells_it(workspace: SandboxFilesystem) -> None:
    await workspace.write_text(".skills-cache/git-x/other/SKILL.md", "other")
    alice = workspace.scoped("alice")
    spellings = [
        "cat /workspace/.skills-cache/git-x/tool/scripts/go.py",
        "cat .skills-cache/git-x/tool/scripts/go.py",
        "cd .skills-cache && cd git-x/tool && cat scripts/go.py",
        "cat /workspace/./.skills-cache//git-x/../git-x/tool/scripts/go.py",
        "cat /workspace/.skills-cache/*/t*/scripts/*",
        "p=.skills; q=-cache; cat /workspace/$p$q/git-x/to''ol/scripts/go.py",
        "sh -c 'cat \"$(ls -d /workspace/.skills-cache/*/tool)/scripts/go.py\"'",
        "find / -name go.py -exec cat {} + 2>/dev/null",
        "grep -rs go /workspace/.skills-cache",
    ]
    for command in spellings:
        result = await alice.run(command, hidden=[HIDDEN])
        assert "print('go')" not in result.stdout, command
    shown = await alice.run(
        "ls /workspace/.skills-cache/git-x; cat /workspace/.skills-cache/git-x/other/SKILL.md", hidden=[HIDDEN]
    )
    assert shown.stdout.split() == ["other", "other"]  # its siblings are still there
    assert (await alice.run("cat .skills-cache/git-x/tool/scripts/go.py")).stdout == "print('go')\n"


async def test_a_hidden_folder_that_appears_while_the_command_runs_stays_absent(
    workspace: SandboxFilesystem, sandbox_dir: Path
) -> None:
    """The command starts before the folder exists; the host creates it, then tells the
    command to look (through a file in the user's area, so nothing here waits on a clock)."""
    alice = workspace.scoped("alice")
    hidden = ".skills-cache/srv.team-a/tool"
    command = (
        "touch started; while [ ! -e go ]; do sleep 0.05; done; "
        "cat /workspace/.skills-cache/srv.team-a/tool/run.sh; ls /workspace/.skills-cache"
    )
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            results = []

            async def run() -> None:
                results.append(await alice.run(command, hidden=[hidden]))

            tasks.start_soon(run)
            while not (sandbox_dir / "alice" / "started").exists():
                await anyio.sleep(0.05)
            await workspace.write_text(f"{hidden}/run.sh", "echo staged meanwhile\n", mode=0o755)
            await alice.write_text("go", "")
    [result] = results
    assert "staged meanwhile" not in result.stdout and "No such file" in result.stderr
    assert result.stdout.split() == ["git-x"]  # what the cache held when the command started
    assert "staged meanwhile" in (await alice.run(f"cat {hidden}/run.sh")).stdout


async def test_hidden_paths_are_per_command_and_must_stay_below_the_root(workspace: SandboxFilesystem) -> None:
    alice, bob = workspace.scoped("alice"), workspace.scoped("bob")
    assert not (await alice.run(f"test -e {HIDDEN}", hidden=[HIDDEN])).ok
    assert (await bob.run(f"test -e {HIDDEN}")).ok
    assert not (await workspace.run(f"test -e /workspace/{HIDDEN}", hidden=[HIDDEN])).ok
    with pytest.raises(PathEscapeError):
        await alice.run("true", hidden=["../bob"])
    with pytest.raises(PathEscapeError):
        await alice.run("true", hidden=["."])


async def test_files_the_harness_writes_are_writable_inside(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    await alice.write_text("state/notes.txt", "v1")
    result = await alice.run("echo v2 > state/notes.txt && touch state/new && echo ok")
    assert result.stdout == "ok\n", result.stderr
    assert await alice.read_text("state/notes.txt") == "v2\n"


async def test_network_is_off(workspace: SandboxFilesystem) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        script = (
            "import socket\n"
            "try:\n"
            f" socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\n"
            "except OSError as e: print('blocked', e)\n"
            "try:\n socket.create_connection(('1.1.1.1', 53), timeout=2); print('connected')\n"
            "except OSError as e: print('blocked', e)\n"
        )
        await workspace.scoped("alice").write_text("net.py", script)
        result = await workspace.scoped("alice").run("python3 net.py")
    finally:
        listener.close()
    assert result.ok, result.stderr
    assert "connected" not in result.stdout
    assert result.stdout.count("blocked") == 2


LOCAL_SERVER = """\
import http.server, threading, urllib.request
server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(urllib.request.urlopen(f"http://localhost:{server.server_port}/", timeout=10).status)
"""


async def test_localhost_resolves_with_the_network_off(workspace: SandboxFilesystem) -> None:
    alice = workspace.scoped("alice")
    result = await alice.run(
        "getent hosts localhost; python3 -c 'import socket; print(socket.gethostbyname(\"localhost\"))'; "
        "echo '6.6.6.6 evil' >> /etc/hosts"
    )
    assert "127.0.0.1" in result.stdout.splitlines()[-1]
    assert {line.split()[0] for line in result.stdout.splitlines()[:-1]} <= {"127.0.0.1", "::1"}
    assert "cannot create /etc/hosts" in result.stderr
    assert (await alice.run("cat /etc/hosts")).stdout == LOOPBACK_HOSTS


@pytest.mark.parametrize("network", [False, True])
async def test_a_local_server_in_the_sandbox_is_reachable_as_localhost(sandbox_dir: Path, network: bool) -> None:
    async with SandboxFilesystem(sandbox_dir, network=network) as fs:
        alice = fs.scoped("alice")
        await alice.write_text("serve.py", LOCAL_SERVER)
        result = await alice.run("python3 serve.py", timeout=60)
    assert result.stdout == "200\n", result.stderr


@pytest.fixture
def tools() -> Iterator[Path]:
    """A folder outside the workspace that only root can change, for ``path`` entries."""
    with shared_dir("tools-") as path:
        yield path


async def test_a_host_virtualenv_on_path_runs_inside_the_sandbox(sandbox_dir: Path, tools: Path) -> None:
    venv = tools / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "venvmark.py").write_text("WHERE = 'from the virtualenv'\n")
    async with SandboxFilesystem(sandbox_dir, path=[f"{venv}/bin"]) as fs:
        result = await fs.scoped("alice").run(
            "command -v python; python -c 'import venvmark; print(venvmark.WHERE)'; touch " + str(venv / "x")
        )
    assert result.stdout == f"{venv}/bin/python\nfrom the virtualenv\n", result.stderr
    assert "Read-only file system" in result.stderr and not (venv / "x").exists()


def _linked(tools: Path) -> str:
    (tools / "real").mkdir()
    (tools / "link").symlink_to(tools / "real")
    return f"{tools}/link"


def _world_writable(tools: Path) -> str:
    (tools / "open").mkdir()
    (tools / "open").chmod(0o777)
    return f"{tools}/open"


def _owned_by_the_sandbox_user(tools: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("the sandbox runs as this process's own uid without root")
    (tools / "nobody").mkdir()
    os.chown(tools / "nobody", 65534, 65534)
    return f"{tools}/nobody"


def _a_file(tools: Path) -> str:
    (tools / "file").write_text("x")
    return f"{tools}/file"


REFUSED_PATHS = {
    "missing": (lambda tools, ws: f"{tools}/missing", "does not exist"),
    "symlink": (lambda tools, ws: _linked(tools), "is a symlink"),
    "file": (lambda tools, ws: _a_file(tools), "is not a directory"),
    "world-writable": (lambda tools, ws: _world_writable(tools), "writable by everyone"),
    "owned by the sandbox user": (lambda tools, ws: _owned_by_the_sandbox_user(tools), "owned by the sandbox user"),
    "a tenant's area": (lambda tools, ws: f"{ws}/alice/.venv/bin", "inside or contains the workspace"),
    "around the workspace": (lambda tools, ws: str(ws.parent), "inside or contains the workspace"),
    "not normalised": (lambda tools, ws: f"{tools}/../{tools.name}", "not a normalised path"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_PATHS))
def test_path_folders_that_cannot_be_bound_safely_are_refused_at_construction(
    sandbox_dir: Path, tools: Path, case: str
) -> None:
    make, reason = REFUSED_PATHS[case]
    (sandbox_dir / "alice" / ".venv" / "bin").mkdir(parents=True)
    folder = make(tools, sandbox_dir)
    with pytest.raises(ValueError, match=f"path folder .* cannot be shown in the sandbox: .*{reason}"):
        SandboxFilesystem(sandbox_dir, path=[folder])


async def test_path_folders_the_sandbox_shows_anyway_need_no_bind(sandbox_dir: Path) -> None:
    async with SandboxFilesystem(sandbox_dir, path=["/usr/local/bin", "/bin", "/workspace/bin"]) as fs:
        result = await fs.scoped("alice").run("echo $PATH")
    assert result.stdout.startswith("/usr/local/bin:/bin:/workspace/bin:")


async def test_unscoped_sandbox_sees_only_projections(workspace: SandboxFilesystem) -> None:
    await workspace.scoped("alice").write_text("mine.txt", "alice")
    result = await workspace.run("ls -A /workspace; cat /workspace/skills/both/SKILL.md")
    assert result.stdout.split() == [
        ".skills-cache", "AGENTS.md", "knowledge", "skills", "workspace", "version",
    ]  # fmt: skip
    assert not (await workspace.run("touch /workspace/x")).ok


def test_missing_bubblewrap_fails_construction_with_the_reason(sandbox_dir: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="not installed"):
        SandboxFilesystem(sandbox_dir, bwrap="no-such-bwrap-binary")


def test_an_unreachable_workspace_fails_construction(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root-owned 0700 folders keep the sandbox uid out")
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o700)
    with pytest.raises(SandboxUnavailable, match="bubblewrap cannot run"):
        SandboxFilesystem(hidden / "ws")


def test_limits_refuse_values_that_are_not_positive_whole_numbers() -> None:
    for bad in ({"processes": 0}, {"memory": -1}, {"open_files": True}, {"file_size": 1.5}):
        with pytest.raises(ValueError, match="positive whole number"):
            SandboxLimits(**bad)  # type: ignore[arg-type]


def test_harness_yaml_sets_the_sandbox_limits_and_timeout(sandbox_dir: Path) -> None:
    config = sandbox_dir / "harness.yaml"
    config.write_text(
        "filesystem:\n  mode: sandbox\n  timeout: 30\n"
        "  limits: {processes: 64, memory: 2G, file_size: 512M, tmp_size: null}\n"
    )
    fs = load_config(config).open_filesystem()
    assert isinstance(fs, SandboxFilesystem)
    assert fs.timeout_ceiling == 30
    assert fs.limits == SandboxLimits(processes=64, memory=2 << 30, file_size=512 << 20, tmp_size=None)


def test_harness_yaml_limits_outside_sandbox_mode_are_a_config_error(sandbox_dir: Path) -> None:
    config = sandbox_dir / "harness.yaml"
    config.write_text("filesystem:\n  mode: local-shell\n  limits: {processes: 64}\n")
    with pytest.raises(ConfigError, match="applies only to mode sandbox"):
        load_config(config)


def test_harness_yaml_refuses_a_limit_that_is_not_a_size(sandbox_dir: Path) -> None:
    config = sandbox_dir / "harness.yaml"
    config.write_text("filesystem:\n  mode: sandbox\n  limits: {memory: lots}\n")
    with pytest.raises(ConfigError, match="not a size like 512M"):
        load_config(config)

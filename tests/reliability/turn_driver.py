"""Child process of the concurrency tests: one harness running many concurrent turns for its
users on a shared workspace, with a probing model that tries to reach other users' skills,
drafts, files and history, and checks the staged market files it runs.

Usage: python turn_driver.py MODE WORKSPACE_OR_DSN TABLE USERS OTHERS TAG
(``USERS``/``OTHERS`` comma-separated; prints one JSON line: turns and violations).
"""

from __future__ import annotations

import json
import sys

import anyio

from filesystems import AbstractFilesystem, LocalFilesystem, MySQLKeyValueStore, RemoteFilesystem, SandboxFilesystem
from harness.agent import Harness, PipelineOptions
from harness.context import RuntimeContext
from harness.models import Message, Model, ModelReply, ToolCall, ToolSpec, Usage
from repositories import FileContents, MemoryRepository, SkillBundleContents
from tests.support.sizing import sized

COMMON = 20
# Users per process: a handful already shows whether users stay apart; --large runs ten.
USERS = sized(4, full=10)
# Concurrent turns per process, spread over its users: each user gets TURNS // USERS of them,
# in both sessions, then one more turn that reads the history.
TURNS = sized(2 * USERS, full=50)
SESSIONS = ("a", "b")


def marker(user: str) -> str:
    return f"@@{user}@@"


def common_script(index: int) -> bytes:
    # Large enough that a torn write would show as a short or mixed file.
    return f"#!/bin/sh\n# {'x' * 60_000}\necho common-{index}-ok\n".encode()


def market(tag: str) -> MemoryRepository:
    bundles = [
        SkillBundleContents(
            folder=f"common-{i}",
            skill_md=f"---\nname: common-{i}\ndescription: Shared tool {i}.\n---\nRun scripts/run.sh\n".encode(),
            files=(FileContents(path="scripts/run.sh", data=common_script(i), mode=0o755),),
        )
        for i in range(COMMON)
    ]
    bundles.append(
        SkillBundleContents(
            folder=f"only-{tag}", skill_md=f"---\nname: only-{tag}\ndescription: Only in {tag}.\n---\n".encode()
        )
    )
    return MemoryRepository(bundles, name="acme")


class ProbeModel(Model):
    """First call: tool calls probing the caller's own and other users' data. Second call:
    checks every result, the catalog and the history, and answers with the violations found."""

    def __init__(self, *, users: list[str], others: list[str], mode: str, cache_root: str, host_root: str) -> None:
        super().__init__(name="probe")
        self.everyone = users + others
        self.mode = mode
        self.cache_root = cache_root  # where the shell finds staged market skills
        self.host_root = host_root  # the workspace on the host, which a sandbox must not show
        self.violations: list[str] = []
        self.turns = 0

    async def _complete(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> ModelReply:
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        _, user, turn = messages[last_user].content.split()
        if messages[-1].role == "user":
            return ModelReply(message=Message.assistant("", self._probes(user, int(turn))), usage=Usage())
        self._check(user, int(turn), messages, last_user)
        self.turns += 1
        return ModelReply(message=Message.assistant(f"done {user} {turn}"), usage=Usage())

    def _other(self, user: str, turn: int) -> str:
        others = [u for u in self.everyone if u != user]
        return others[turn % len(others)]

    def _probes(self, user: str, turn: int) -> list[ToolCall]:
        other = self._other(user, turn)
        calls = [
            ("own", "load_skill_through_path", {"skillId": f"{user}-skill", "reload": True}),
            ("other-skill", "load_skill_through_path", {"skillId": f"{other}-skill_workspace-namespaced"}),
            ("other-draft", "load_skill_through_path", {"skillId": f"{other}-draft"}),
            ("own-draft", "load_skill_through_path", {"skillId": f"{user}-draft"}),
            ("other-file", "read_file", {"path": f"../{other}/note.txt"}),
            ("own-file", "read_file", {"path": "note.txt"}),
            ("write", "write_file", {"path": f"turns/{turn}.txt", "content": marker(user)}),
            ("list", "list_files", {"path": ""}),
        ]
        if self.mode != "remote":
            index = turn % COMMON
            calls.append(
                ("staged", "execute_shell_command", {"command": f"sh {self.cache_root}/common-{index}/scripts/run.sh"})
            )
        if self.mode == "sandbox":
            command = (
                f"cat /workspace/note.txt; ls -a /workspace /workspace/skills; cat {self.host_root}/{other}/note.txt; "
                f"ls {self.host_root}; find / -name note.txt -not -path '/proc/*' 2>/dev/null; cat /workspace/../{other}/note.txt"
            )
            calls.append(("sandbox", "execute_shell_command", {"command": command}))
        return [ToolCall(id=f"{name}:{turn}", name=tool, arguments=args) for name, tool, args in calls]

    def _check(self, user: str, turn: int, messages: tuple[Message, ...], last_user: int) -> None:
        own = marker(user)
        foreign = [marker(u) for u in self.everyone if u != user]
        results = {
            m.tool_call_id.split(":")[0]: m.content
            for m in messages[last_user + 1 :]
            if m.role == "tool" and m.tool_call_id
        }
        where = f"{user} turn {turn}"
        seen = {
            "catalog": messages[0].content,
            "history": "\n".join(m.content for m in messages[1:last_user]),
            **results,
        }
        for name, text in seen.items():
            leaked = [f for f in foreign if f in text]
            if leaked:
                self.violations.append(f"{where}: {name} shows {leaked}")
        expectations = {
            "catalog": own in messages[0].content and f"{user}-draft" not in messages[0].content,
            "own": own in results.get("own", ""),
            "other-skill": "not available" in results.get("other-skill", ""),
            "other-draft": "not available" in results.get("other-draft", ""),
            "other-file": results.get("other-file", "").startswith("error:"),
            "own-draft": "not available" in results.get("own-draft", ""),
            "own-file": own in results.get("own-file", ""),
            "list": "note.txt" in results.get("list", ""),
        }
        if self.mode != "remote":
            expectations["staged"] = f"common-{turn % COMMON}-ok" in results.get("staged", "")
        if self.mode == "sandbox":
            expectations["sandbox"] = own in results.get("sandbox", "")
        for name, ok in expectations.items():
            if not ok:
                self.violations.append(f"{where}: expectation {name!r} failed: {results}")


def open_filesystem(mode: str, where: str, table: str) -> AbstractFilesystem:
    if mode == "local-shell":
        return LocalFilesystem(where, shell=True)
    if mode == "sandbox":
        return SandboxFilesystem(where)
    return RemoteFilesystem(MySQLKeyValueStore(where, table=table, pool_size=4), agent_id="agent")


async def main(mode: str, where: str, table: str, users: list[str], others: list[str], tag: str) -> None:
    filesystem = open_filesystem(mode, where, table)
    cache_root = filesystem.shell_path(".skills-cache/acme") if filesystem.has_shell else ""
    model = ProbeModel(users=users, others=others, mode=mode, cache_root=cache_root, host_root=where)
    async with Harness(
        name="agent",
        model=model,
        filesystem=filesystem,
        repositories=[market(tag)],
        pipeline=PipelineOptions(watch=False),
    ) as agent:

        async def turn(user: str, session: str, number: int) -> None:
            await agent.run(f"probe {user} {number}", context=RuntimeContext(user_id=user, session_id=session))

        async with anyio.create_task_group() as group:
            for number in range(TURNS):
                user = users[number % len(users)]
                group.start_soon(turn, user, SESSIONS[(number // len(users)) % 2], number)
        async with anyio.create_task_group() as group:  # history: a second turn in each session
            for index, user in enumerate(users):
                group.start_soon(turn, user, "a", 100 + index)
    print(json.dumps({"turns": model.turns, "violations": model.violations[:20]}), flush=True)


if __name__ == "__main__":
    mode_arg, where_arg, table_arg, users_arg, others_arg, tag_arg = sys.argv[1:7]
    anyio.run(main, mode_arg, where_arg, table_arg, users_arg.split(","), others_arg.split(","), tag_arg)

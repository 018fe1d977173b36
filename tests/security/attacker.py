"""A scripted attacker model and the arenas it attacks: one workspace per filesystem mode
(local, remote over memory / SQLite / MySQL, sandbox, composite) with two tenants, and a
snapshot of everything stored so a test can prove an attack left no trace.

Its fixtures reach the test modules through ``conftest.py``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from filesystems import (
    AbstractFilesystem,
    KeyValueStore,
    MemoryKeyValueStore,
    RemoteFilesystem,
)
from harness import Harness, RuntimeContext
from harness.agent import PipelineOptions
from harness.events import ToolReturned
from harness.models import Message, ScriptedModel, ToolCall
from harness.models.base import ToolSpec
from tests.support.filesystems import build_filesystem

ALICE = RuntimeContext(user_id="alice", session_id="attack")
BOB_SECRET = "BOB-SECRET-7f3a"
HOST_SECRET = "HOST-SECRET-91c2"

#: Paths aimed at other tenants, the host, machine-owned state, and encodings of those.
HOSTILE_PATHS: tuple[str, ...] = (
    "../bob/notes.txt",
    "../../bob/notes.txt",
    "/etc/passwd",
    "%2e%2e/bob/notes.txt",
    "%2e%2e%2fbob%2fnotes.txt",
    "..\\bob\\notes.txt",
    "notes\x00.txt",
    "a/" * 700 + "x.txt",
    "\u2025/bob/notes.txt",
    "\uff53kills/x/SKILL.md",
    "skills/x/SKILL.md",
    "Skills/x/SKILL.md",
    "./skills/../skills/x/SKILL.md",
    "skills/.usage.json",
    "skills/_drafts/x/SKILL.md",
    ".agents/skills/x/SKILL.md",
    ".Claude/Skills./x/SKILL.md",
    "x/../.claude//skills/x/SKILL.md",
    "\uff0eagents/skills/x/SKILL.md",
    ".harness/runs/r1/run.json",
    ".harness/engine.key",
    "../.harness/engine.key",
    "\x1b[2Jx.txt",
)

#: Folders of a user's area only the harness writes: its skill folders and run records.
MACHINE_FOLDERS: tuple[str, ...] = ("skills", ".agents/skills", ".claude/skills", ".harness")

#: Other tenants' and the shared workspace's skills named as ids.
HOSTILE_IDS: tuple[str, ...] = (
    "bobsecret_workspace-namespaced",
    "users/bob/skills/bobsecret",
    "bob:bobsecret",
    "team-\u200bnotes",
)

#: Parameters that name a skill, run or draft (they get ``HOSTILE_IDS`` too).
ID_PARAMS = frozenset({"skillId", "name", "skill", "run_id"})

#: Values of the wrong JSON type for a parameter of each type.
ODD_VALUES: Mapping[str, Any] = {
    "string": {"$gt": ""},
    "integer": "1; DROP TABLE",
    "number": [1e308],
    "boolean": "yes",
    "object": "../bob",
    "array": {"path": "../bob"},
}

WORKFLOW_SKILL = {
    "SKILL.md": "---\nname: ship\ndescription: Use to ship a release.\n---\nA workflow.\n",
    "workflow.yaml": """\
name: ship
version: "1"
description: Ship a release.
goal:
  statement: Shipped.
skills:
  - id: ship
tools:
  - {id: deploy, kind: function, source: list_files, side_effect: external, requires_confirmation: true}
orchestration:
  mode: deterministic
  entry: deploy
  steps:
    - id: deploy
      action: {type: call_tool, ref: deploy}
      next: null
""",
}


# -- the attacker --------------------------------------------------------------------------------


def _types(schema: Mapping[str, Any]) -> list[str]:
    if "anyOf" in schema:
        return [t for option in schema["anyOf"] for t in _types(option)]
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else list(kind or [])


def _value(schema: Mapping[str, Any], hostile: str) -> Any:
    kinds = _types(schema)
    if "string" in kinds:
        return hostile
    if "integer" in kinds:
        return 10**15
    if "number" in kinds:
        return 1e300
    if "boolean" in kinds:
        return True
    if "object" in kinds:
        return {hostile: hostile}
    if "array" in kinds:
        return [{"path": hostile, "content": hostile}]
    return None


def _enums(schema: Mapping[str, Any]) -> list[Any]:
    if "enum" in schema:
        return list(schema["enum"])
    return [v for option in schema.get("anyOf", ()) for v in _enums(option)]


def hostile_calls(spec: ToolSpec) -> list[dict[str, Any]]:
    """Hostile argument sets for one tool: every string set to each hostile path; id parameters
    set to each other tenant's id; each enum expanded over its values."""
    properties: Mapping[str, Mapping[str, Any]] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", ()))
    enums = {name: _enums(schema) for name, schema in properties.items() if _enums(schema)}
    attempts: list[dict[str, Any]] = []
    for hostile in HOSTILE_PATHS:
        attempts.append({name: _value(schema, hostile) for name, schema in properties.items() if name not in enums})
    ids = [name for name in properties if name in ID_PARAMS]
    for hostile in HOSTILE_IDS if ids else ():
        attempts.append(
            {
                name: hostile if name in ids else _value(schema, "x")
                for name, schema in properties.items()
                if name not in enums and (name in ids or name in required)
            }
        )
    expanded = []
    for attempt in attempts:
        for values in itertools.product(*enums.values()):
            expanded.append({**attempt, **dict(zip(enums, values))})
    return expanded


def odd_type_calls(spec: ToolSpec) -> list[dict[str, Any]]:
    """For each parameter, one call giving it a value of the wrong JSON type."""
    properties: Mapping[str, Mapping[str, Any]] = spec.parameters.get("properties", {})
    calls = []
    for name, schema in properties.items():
        kinds = _types(schema)
        odd = next((ODD_VALUES[k] for k in kinds if k in ODD_VALUES), None)
        if odd is None or any(_fits(odd, k) for k in kinds):
            continue
        calls.append({name: odd})
    return calls


def _fits(value: Any, kind: str) -> bool:
    checks: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "object": dict,
        "array": list,
    }
    return kind in checks and isinstance(value, checks[kind])


def attacker(*, odd_types: bool = False, skip: Iterable[str] = ()) -> ScriptedModel:
    """A model that, offered any tools, calls every one of them with every hostile argument set,
    then answers. ``skip`` leaves tools out (e.g. a shell the sandbox engineer's suite covers)."""
    skipped = frozenset(skip)

    def attack(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Message:
        counter = itertools.count()
        calls = [
            ToolCall(id=f"a{next(counter)}", name=spec.name, arguments=arguments)
            for spec in tools
            if spec.name not in skipped
            for arguments in (odd_type_calls(spec) if odd_types else hostile_calls(spec))
        ]
        return Message.assistant("", calls)

    return ScriptedModel([attack, "done"], name="attacker")


def assert_refused(results: Sequence[ToolReturned]) -> None:
    """Every result is an error with a message that says what was refused, and none leaks a
    secret."""
    assert results, "the attacker made no calls"
    for result in results:
        assert result.error, f"{result.name} accepted a hostile call: {result.content[:300]!r}"
        kind, _, message = result.content.removeprefix("error: ").partition(": ")
        assert len(message.strip()) >= 15, f"{result.name}: unclear error {result.content[:200]!r}"
        assert "Traceback" not in result.content
        assert BOB_SECRET not in result.content and HOST_SECRET not in result.content


# -- arenas ---------------------------------------------------------------------------------------

MODES = ["local", "memory", "sqlite", "mysql", "sandbox", "composite"]


@dataclass
class Arena:
    """A workspace with tenants ``alice`` (the attacker's) and ``bob``, and where to look for
    traces: host folders and/or the key-value store."""

    mode: str
    fs: AbstractFilesystem
    host: Path | None = None
    store: KeyValueStore | None = None
    outside: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def harness(self, model: ScriptedModel, **options: Any) -> Harness:
        """An agent over this arena with the self-learning loop on (use one per test, and take
        snapshots while it is open: closing it closes the filesystem)."""
        return Harness(
            model=model, filesystem=self.fs, **{"learning": True, "pipeline": PipelineOptions(watch=False), **options}
        )

    async def snapshot(self) -> dict[str, str]:
        """Every stored file (host folders and store keys) with a hash of its content."""
        found: dict[str, str] = {}
        for root in (self.host, self.outside):
            if root is not None:
                found.update(_host_snapshot(root))
        if self.store is not None:
            entries = await self.store.list_prefix("")
            records = await self.store.get_many([entry.key for entry in entries])
            found.update({f"store:{k}": hashlib.sha256(r.data).hexdigest() for k, r in records.items()})
        return found

    def own(self, key: str) -> bool:
        """Whether ``key`` (a snapshot key) lies in alice's area outside machine-owned state, or
        is the harness's own record-keeping (audit log, staging cache, run key)."""
        harness_owned = ("skills/.audit/", ".skills-cache/", ".harness/engine.key", ".harness/revisions/")
        for base in self._bases():
            if key.startswith(base):
                rest = key[len(base) :]
                if rest.startswith(harness_owned):
                    return True
                if rest.startswith("alice/") and not rest.startswith(tuple(f"alice/{f}/" for f in MACHINE_FOLDERS)):
                    return True
        return False

    def _bases(self) -> list[str]:
        bases = []
        if self.host is not None:
            bases.append(f"{self.host}/")
        if self.store is not None:
            bases += ["store:agents/agent/shared/", "store:agents/agent/users/"]
        return bases


def _host_snapshot(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = Path(dirpath) / name
            if path.is_symlink():
                found[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Keys added, removed or changed between two snapshots."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


async def seed(fs: AbstractFilesystem) -> None:
    """Bob's notes and skill, alice's workflow skill and a shared team skill, written the way
    the harness and its operator would."""
    bob = fs.scoped("bob")
    await bob.write_text("notes.txt", BOB_SECRET)
    await bob.write_text(
        "skills/bobsecret/SKILL.md", f"---\nname: bobsecret\ndescription: Bob's own.\n---\n{BOB_SECRET}\n"
    )
    alice = fs.scoped("alice")
    for path, text in WORKFLOW_SKILL.items():
        await alice.write_text(f"skills/ship/{path}", text)
    await fs.write_text("skills/team/SKILL.md", "---\nname: team\ndescription: Team conventions.\n---\nBe kind.\n")


@pytest.fixture(params=MODES)
async def arena(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Arena]:
    """A seeded two-tenant workspace in each filesystem mode."""
    mode: str = request.param
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host-secret.txt").write_text(HOST_SECRET)
    watched = MemoryKeyValueStore()  # the store of the memory mode and of the composite's mount
    limit = 4096 if mode == "sandbox" else None
    async with build_filesystem(request, mode, tmp_path, output_limit=limit, store=watched) as made:
        fs = made.fs
        store = fs.store if isinstance(fs, RemoteFilesystem) else watched if mode == "composite" else None
        built = Arena(mode, fs, host=made.host, store=store, outside=outside)
        async with built.fs:
            await seed(built.fs)
            yield built

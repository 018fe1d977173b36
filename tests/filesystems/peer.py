"""A second process for the cross-process tests: rebuilds a filesystem from a JSON spec and acts.

Usage: ``python peer.py SPEC ACTION [ARG...]`` where SPEC is the JSON of ``tests.filesystems.
conftest.FsSpec``; prints one result line.
"""

from __future__ import annotations

import asyncio
import json
import sys

from filesystems import (
    AbstractFilesystem,
    LocalFilesystem,
    LockTimeout,
    MySQLKeyValueStore,
    RemoteFilesystem,
    SQLiteKeyValueStore,
    VersionConflict,
)


def build(spec: dict[str, str]) -> AbstractFilesystem:
    fs: AbstractFilesystem
    if spec["kind"] == "local":
        fs = LocalFilesystem(spec["root"])
    elif spec["kind"] == "sqlite":
        fs = RemoteFilesystem(SQLiteKeyValueStore(spec["path"]), agent_id=spec["agent"])
    elif spec["kind"] == "mysql":
        store = MySQLKeyValueStore(spec["dsn"], table=spec["table"], pool_size=2)
        fs = RemoteFilesystem(store, agent_id=spec["agent"])
    else:
        raise SystemExit(f"unknown kind {spec['kind']}")
    return fs.scoped(spec["user"]) if spec.get("user") else fs


async def main(spec: dict[str, str], action: str, args: list[str]) -> str:
    root = build({**spec, "user": ""})
    async with root:
        fs = root.scoped(spec["user"]) if spec.get("user") else root
        if action == "lock":
            try:
                async with fs.lock(args[0], timeout=float(args[1])):
                    return "acquired"
            except LockTimeout:
                return "timeout"
        if action == "increment":
            for _ in range(int(args[1])):
                while True:
                    try:
                        stat = await fs.stat(args[0])
                        value = int(await fs.read_text(args[0]))
                        await fs.compare_and_set(args[0], str(value + 1).encode(), stat.version)
                        break
                    except VersionConflict:
                        continue
            return "done"
        if action == "append":
            for i in range(int(args[2])):
                await fs.append(args[0], f"{args[1]}:{i}:{'x' * 200}\n".encode())
            return "done"
        if action == "read":
            return await fs.read_text(args[0])
        if action == "write":
            await fs.write_text(args[0], args[1])
            return "done"
    raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    print(asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:])), flush=True)

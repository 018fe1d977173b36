"""The second process of :mod:`filesystems.testing`'s cross-process tests:
``python -m filesystems._peer SPEC ACTION [ARG...]`` opens the filesystem ``SPEC`` names (see
``PeerSpec``), does one action and prints one result line. It imports neither pytest nor the
suite, so each peer starts in the time the filesystem itself takes to import."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Mapping

from filesystems.base import AbstractFilesystem
from filesystems.errors import LockTimeout, VersionConflict

__all__: list[str] = []


def _open_peer(opener: str, arguments: Mapping[str, str]) -> AbstractFilesystem:
    module, _, function = opener.partition(":")
    fs = getattr(importlib.import_module(module), function)(**arguments)
    if not isinstance(fs, AbstractFilesystem):
        raise SystemExit(f"{opener} returned {type(fs).__name__}, not an AbstractFilesystem")
    return fs


async def _peer(spec: dict[str, object], action: str, args: list[str]) -> str:
    arguments = spec["arguments"]
    assert isinstance(arguments, dict)
    root = _open_peer(str(spec["opener"]), arguments)
    async with root:
        fs = root.scoped(str(spec["user"])) if spec["user"] else root
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
    raise SystemExit(f"unknown peer action {action!r}")


if __name__ == "__main__":  # one peer action, one result line
    print(asyncio.run(_peer(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:])), flush=True)

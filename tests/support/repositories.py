"""Helpers for the repository tests: git remotes in tmp_path, skill trees, subprocess counting."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.support import git
from tests.support.skills import make_skill

PYTHON = sys.executable


def write_skill(root: Path, folder: str, *, description: str = "A test skill.", body: str = "Do it.\n") -> Path:
    """Create ``root/folder/SKILL.md`` with frontmatter naming the folder; returns the folder."""
    return make_skill(root, folder, description=description, body=body)


class GitRemote(git.GitRemote):
    """The shared git remote, plus writing files and skills into its work tree."""

    def write(self, path: str, text: str, mode: int = 0o644) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)

    def skill(self, folder: str, description: str = "A test skill.") -> None:
        write_skill(self.work, folder, description=description)


class TcpProxy:
    """A local TCP forwarder to ``host:port``; ``stop()`` is a real outage for its clients."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        await self.start_on(0)

    async def start_on(self, port: int) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}

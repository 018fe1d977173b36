"""Workspace file tools (read with paging, write, list) through the user's scoped filesystem."""

from __future__ import annotations

from filesystems import AbstractFilesystem
from harness.paging import looks_binary, page_lines
from harness.tooling import Tool, tool_from_function

__all__ = ["file_tools"]


def file_tools(fs: AbstractFilesystem) -> list[Tool]:
    """``read_file``, ``write_file`` and ``list_files`` bound to ``fs`` (the user's area)."""

    async def read_file(path: str, offset: int = 1, limit: int | None = None) -> str:
        """Read a text file from your workspace, paged by lines.

        Args:
            path: A path relative to your workspace.
            offset: The first line to return (1-based).
            limit: The most lines to return (at most 2000).
        """
        data = await fs.read_bytes(path)
        if looks_binary(data):
            return f"{path} is a binary file of {len(data)} bytes; it is not shown as text."
        return page_lines(data.decode("utf-8"), path, offset, limit)

    async def write_file(path: str, content: str) -> str:
        """Write a text file in your workspace (replacing it if it exists).

        Args:
            path: A path relative to your workspace.
            content: The full text to write.
        """
        stat = await fs.write_text(path, content)
        return f"wrote {stat.size} bytes to {path}"

    async def list_files(path: str = "") -> str:
        """List a folder of your workspace (folders end with /).

        Args:
            path: A folder relative to your workspace; empty for its top.
        """
        entries = await fs.list(path)
        return "\n".join(e.name + ("/" if e.is_dir else "") for e in entries) or "(empty)"

    return [tool_from_function(f) for f in (read_file, write_file, list_files)]
